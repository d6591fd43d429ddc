// SHARP candidates (sharp_candidates.hpp): per size the pieces, collsched's form and NCCL's.
#include "verifier/time/sharp_candidates.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/constructions/compose/nvls.hpp"

namespace collsched {

void sharp_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const auto& t = q.instance.topology;
    if (q.instance.collective.kind != CollectiveKind::allreduce) return;
    const compose::SharpShape shape = compose::sharp_shape(*t);
    if (shape.heads.empty()) return;  // no switch between the boxes reduces: nothing to say
    const bool nvls = shape.nvls;
    std::uint32_t chain_channels = 0;  // NCCL gives CollNet Chain the ring's channels
    try {
        for (const nccl::CollnetModel& m : nccl::nccl_collnet_models(nccl::nccl_system(*t), CollectiveKind::allreduce, 1 << 20))
            if (m.algorithm == "COLLNET_CHAIN") chain_channels = m.channels;
    } catch (const InputError&) {
    }
    // about the transfers of one piece (per head and box: the box's reduce and multicast, the fabric's two hops), and the
    // pieces that keep a table within 2^19 of them (as the rings provider): 4 boxes of 8 take up to 256 pieces, 16 boxes 204, 128 boxes 25
    const std::uint64_t per_piece = std::uint64_t{shape.heads.size()} * shape.boxes * (2 * shape.per_box + 4);
    const auto most = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (std::uint64_t{1} << 19) / std::max<std::uint64_t>(1, per_piece)));
    std::map<std::uint32_t, bool> tried;
    std::set<std::string> refused;
    // per size the pieces that keep a chunk at 64, 16 and 4 KiB or more (as the NVLS provider): the time model picks
    for (double size : q.sizes.empty() ? std::vector<double>{1 << 20} : q.sizes)
        for (double floor : {65536.0, 16384.0, 4096.0}) {
            compose::SharpPlan plan;
            plan.pieces = std::min(most, compose::nvls_pieces_for_size(static_cast<std::uint32_t>(shape.heads.size()), size, floor));
            if (tried[plan.pieces]) continue;
            if (Clock::now() >= q.deadline) {
                notes.push_back("sharp: the time limit came before every piece count was tried");
                return;
            }
            tried[plan.pieces] = true;
            // each form on its own: a machine may take some (NVLS in the box) and not others (direct sends need channels
            // between a box's GPUs: not on a fat tree whose NVSwitch is a router); a form refused once is not tried again
            auto add = [&](const std::string& name, bool nccl, const std::function<SendTable()>& build) {
                if (refused.count(name)) return;
                try {
                    out.push_back({fmt::format("{}, {} piece{}", name, plan.pieces, plan.pieces == 1 ? "" : "s"), "verifier/constructions/compose/nvls.hpp",
                                   nccl ? "nccl" : "sharp", nccl, std::make_shared<const SendTable>(build())});
                } catch (const InputError& e) {
                    refused.insert(name);
                    notes.push_back(fmt::format("sharp: {}: {}", name, e.what()));
                }
            };
            compose::SharpPlan own = plan, theirs = plan, direct = plan;
            own.nvls = theirs.nvls = true, direct.nvls = false;
            theirs.owner_through_switch = true;
            // without NVLS in the boxes collsched's form is CollNet Direct's table (direct in the box): built once, as NCCL's
            if (nvls) add("sharp + nvls", false, [&] { return compose::sharp_allreduce(t, own); });
            if (nvls) add("nccl nvls + collnet", true, [&] { return compose::sharp_allreduce(t, theirs); });
            add("nccl collnet_direct", true, [&] { return compose::sharp_allreduce(t, direct); });
            if (chain_channels) add("nccl collnet_chain", true, [&] { return compose::collnet_chain_allreduce(t, chain_channels, direct); });
        }
}

}  // namespace collsched
