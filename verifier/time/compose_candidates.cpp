// The time objective's candidates from the constructions for time, NVLS and the link trees (compose_candidates.hpp).
#include "verifier/time/compose_candidates.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/budget.hpp"
#include "support/error.hpp"
#include "verifier/constructions/compose/allreduce.hpp"
#include "verifier/constructions/compose/box_links.hpp"
#include "verifier/constructions/compose/nvls.hpp"
#include "verifier/time/constructions.hpp"

namespace collsched {

/// The constructions for time (verifier/constructions/compose/allreduce.hpp): hierarchical and flat
/// allreduce, reduce-scatter and allgather pipelined in pieces, the pieces chosen per size; each
/// size asked for may choose other pieces, so every size's fastest shapes are kept.
void composed_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    std::vector<double> sizes = q.sizes;
    if (sizes.empty()) sizes.push_back(1 << 20);
    // unchecked here: gather_candidates checks the tables that can win
    for (compose::Candidate& c : compose::time_candidates(q.instance, sizes, q.deadline, false, q.cores ? q.borrow : q.jobs, q.cores, q.basis()))
        out.push_back({c.name, c.how, "constructions for time", false, std::make_shared<const SendTable>(std::move(c.table)), std::move(c.plan),
                       std::move(c.seconds), {}, std::move(c.protocols)});
    if (Clock::now() >= q.deadline) notes.push_back("constructions for time: the time limit came before every shape and piece count was tried");
}

/// NVLS on machines whose switches reduce and multicast (verifier/constructions/compose/nvls.hpp): collsched's
/// form (the owner's own share stays home) and NCCL's (its NVLS algorithm as it runs: the owner's
/// share through the switch too), the latter one of NCCL's algorithms.
void nvls_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const auto& t = q.instance.topology;
    const CollectiveKind k = q.instance.collective.kind;
    if (k != CollectiveKind::allreduce && k != CollectiveKind::allgather && k != CollectiveKind::reduce_scatter) return;
    std::vector<compose::NvlsBox> boxes;
    try {
        boxes = compose::nvls_boxes(*t);
    } catch (const InputError&) {
        return;  // no switch that reduces and multicasts: nothing to say
    }
    if (boxes.empty()) return;
    const std::uint32_t per_box = static_cast<std::uint32_t>(boxes.front().gpus.size());
    // per size the pieces that keep a chunk at 64, 16 and 4 KiB or more: the time model picks
    std::set<std::uint32_t> counts;
    for (double size : q.sizes.empty() ? std::vector<double>{1 << 20} : q.sizes)
        for (double floor : {65536.0, 16384.0, 4096.0}) counts.insert(compose::nvls_pieces_for_size(per_box, size, floor));
    // a table is built only before the deadline, and only when the pace of the last one (seconds per piece: its
    // transfers grow with the pieces) says it ends before it: a build does not poll, and 16 x 8's 256-piece tables
    // (9.4 million transfers) ran 17 s past a 10 s --timeout (issue 57 item 4)
    double per_piece = 0;
    std::string late;
    bool nccl_late = false;  // a table of NCCL's not built: the limit stopped the provider (gather_candidates' nccl_whole)
    // collsched's own forms keep to max_transfers, as the other constructions for time (compose's transfer budget): a
    // table has its pieces times the one-piece table's transfers, so the pieces are capped there (16 x 8's 256-piece
    // "nvls + rail rings" was 9.4 million transfers, 2.6 GB and a minute and a half of timing at five sizes, and never
    // the fastest); NCCL's forms keep NCCL's pipelining (the baseline is what NCCL runs)
    std::map<std::string, std::set<std::uint32_t>> built;
    std::map<std::string, std::uint64_t> one_piece;  // transfers of the one-piece table, by form
    std::vector<std::string> capped;
    auto add = [&](std::uint32_t pieces, const std::string& name, bool nccl, const compose::NvlsPlan& base, auto build) {
        compose::NvlsPlan plan = base;
        plan.pieces = pieces;
        if (!nccl && pieces > 1) {
            if (!one_piece.count(name)) {
                compose::NvlsPlan one = base;
                one.pieces = 1;
                one_piece[name] = build(one).transfers.size();
            }
            const auto most = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, max_transfers / std::max<std::uint64_t>(1, one_piece[name])));
            if (plan.pieces > most) capped.push_back(fmt::format("{} ({} pieces: {} transfers)", name, plan.pieces, one_piece[name] * plan.pieces));
            plan.pieces = std::min(plan.pieces, most);
        }
        if (!built[name].insert(plan.pieces).second) return;
        const std::string full = fmt::format("{}, {} piece{}", name, plan.pieces, plan.pieces == 1 ? "" : "s");
        const double left = Deadline::at(q.deadline).left();
        if (left <= 0 || per_piece * plan.pieces > left) {
            if (late.empty()) late = full;
            nccl_late = nccl_late || nccl;
            return;
        }
        const auto t0 = Clock::now();
        SendTable table = build(plan);
        per_piece = std::max(per_piece, seconds_since(t0) / plan.pieces);
        out.push_back({full, "verifier/constructions/compose/nvls.hpp", nccl ? "nccl" : "nvls", nccl, std::make_shared<const SendTable>(std::move(table))});
    };
    try {
        for (std::uint32_t pieces : counts) {
            const compose::NvlsPlan plan;
            if (boxes.size() > 1) {
                if (k == CollectiveKind::allreduce) {
                    add(pieces, "nvls + rail rings", false, plan, [&](const compose::NvlsPlan& p) { return compose::nvls_rail_allreduce(t, p); });
                    add(pieces, "nccl nvls_tree", true, plan, [&](const compose::NvlsPlan& p) { return compose::nvls_tree_allreduce(t, p); });
                }
                continue;
            }
            if (k == CollectiveKind::allreduce) {
                add(pieces, "nvls", false, plan, [&](const compose::NvlsPlan& p) { return compose::nvls_allreduce(t, p); });
                compose::NvlsPlan direct = plan;
                direct.direct_period = compose::nvls_direct_period(*t);
                if (direct.direct_period)
                    add(pieces, "nvls + direct pieces", false, direct, [&](const compose::NvlsPlan& p) { return compose::nvls_allreduce(t, p); });
                compose::NvlsPlan theirs = plan;
                theirs.owner_through_switch = true;
                add(pieces, "nccl nvls", true, theirs, [&](const compose::NvlsPlan& p) { return compose::nvls_allreduce(t, p); });
            } else if (k == CollectiveKind::allgather) {
                add(pieces, "nvls", false, plan, [&](const compose::NvlsPlan& p) { return compose::nvls_allgather(t, p); });
            } else {
                add(pieces, "nvls", false, plan, [&](const compose::NvlsPlan& p) { return compose::nvls_reduce_scatter(t, p); });
            }
        }
    } catch (const InputError& e) {
        notes.push_back(fmt::format("nvls: {}", e.what()));
        return;
    }
    if (!capped.empty())
        notes.push_back(fmt::format("nvls: pieces capped at {} transfers a table, as every construction for time: {}", max_transfers, fmt::join(capped, "; ")));
    if (!late.empty()) notes.push_back(fmt::format("nvls: the time limit came before {} (and the tables after it) could be built", late));
    // the pace leaves a table out before the limit has passed: one of NCCL's left out so is said as a stop (the exact
    // set of NCCL's tables on executor mscclpp and msccl is then not whole, and the nccl executor's rows stay)
    if (nccl_late) throw LimitReached(fmt::format("time limit (the NVLS tables from {}, NCCL's among them)", late));
}

void box_link_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const SynthInstance& in = q.instance;
    if (in.collective.kind != CollectiveKind::allgather) return;
    const std::vector<double> sizes = q.sizes.empty() ? std::vector<double>{1 << 20} : q.sizes;
    const std::uint64_t P = in.topology->processors(), K = in.topology->declared_boxes() ? in.topology->declared_boxes() : P;
    for (compose::LinkTrees form : {compose::LinkTrees::shortest, compose::LinkTrees::balanced}) {
        std::vector<double> best(sizes.size(), std::numeric_limits<double>::infinity());
        std::vector<std::size_t> chosen(sizes.size(), 0);
        std::vector<std::pair<SendTable, TimingPlan>> built;
        for (std::uint32_t C = 1; C <= 256; C *= 4) {
            // a chunk to every processor, and one more to a relay per other box (K: the boxes, at most P)
            if (rough_transfers(CollectiveKind::allgather, P, C) + P * C * K > max_transfers) break;
            if (Clock::now() >= q.deadline) {
                notes.push_back(fmt::format("link trees: the time limit came before the {} form at {} chunks", compose::link_trees_name(form), C));
                break;
            }
            std::optional<SendTable> t;
            try {
                t = compose::box_link_allgather(in, C, form, nullptr, Deadline::at(q.deadline));
            } catch (const LimitReached& e) {
                notes.push_back(fmt::format("link trees: {}", e.what()));
                break;
            }
            if (!t) return;  // not a machine of boxes joined by links between GPUs: nothing to say
            TimingPlan plan(*t);
            bool better = false;
            for (std::size_t i = 0; i < sizes.size(); ++i)
                if (const double s = time_on(plan, sizes[i], q.basis(), q.time).seconds; s < best[i] * (1 - 1e-3))
                    best[i] = s, chosen[i] = built.size(), better = true;
            built.emplace_back(std::move(*t), std::move(plan));
            if (!better) break;  // more chunks pay more latencies than they pipeline
        }
        for (std::size_t b = 0; b < built.size(); ++b) {
            if (std::ranges::find(chosen, b) == chosen.end()) continue;
            const std::uint32_t C = built[b].first.collective.chunks;
            out.push_back({fmt::format("link trees ({}), {} chunk{}", compose::link_trees_name(form), C, C == 1 ? "" : "s"), "verifier/constructions/compose/box_links.hpp",
                           "link trees", false, std::make_shared<const SendTable>(std::move(built[b].first)), std::move(built[b].second)});
        }
    }
}

}  // namespace collsched
