// collsched's pipelined rings for broadcast and reduce (rooted_rings.hpp).
#include "verifier/time/rooted_rings.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl.hpp"

namespace collsched {

void rooted_ring_candidates(const CandidateQuery& q, std::vector<TimeCandidate>& out, std::vector<std::string>& notes) {
    const Collective& coll = q.instance.collective;
    if (coll.kind != CollectiveKind::broadcast && coll.kind != CollectiveKind::reduce) return;
    const auto& t = q.instance.topology;
    nccl::RingRoutes routes;
    try {
        routes = nccl::nccl_ring_routes(*t, coll.kind, 0, Deadline::at(q.deadline));
    } catch (const InputError& e) {
        notes.push_back(fmt::format("pipelined rings: {}", e.what()));
        return;
    } catch (const LimitReached& e) {
        notes.push_back(fmt::format("pipelined rings: not built, {}", e.what()));
        return;
    }
    const double P = t->processors(), K = static_cast<double>(routes.rings.size());
    double alpha = 0, slowest = 0;  // the rings' largest hop latency and slowest channel (a link's own speed)
    std::size_t longest = 1;
    for (const nccl::Ring& r : routes.rings)
        for (const auto& hop : r.hops) {
            longest = std::max(longest, hop.size());
            double a = 0;
            for (ChannelId c : hop) {
                const LinkSpeed sp = q.link ? LinkSpeed{q.link->alpha, q.link->bandwidth * t->channel(c).cap} : t->speed(c);
                a += sp.alpha;
                slowest = slowest == 0 ? sp.bandwidth : std::min(slowest, sp.bandwidth);
            }
            alpha = std::max(alpha, a);
        }
    // pieces that keep a table within 2^21 transfers (a piece is P - 1 hops of up to `longest` channels on every ring)
    const double per_piece = K * (P - 1) * static_cast<double>(longest);
    const auto most = static_cast<std::uint32_t>(std::clamp(std::floor(double(1 << 21) / per_piece), 1.0, double(1 << 12)));
    std::set<std::uint32_t> pieces = {1, 4, 16, 64, 256};  // NCCL's chunk counts (verifier/constructions/nccl nccl.cpp)
    for (double size : q.sizes) {
        const double k = alpha > 0 && slowest > 0 ? std::sqrt(std::max(1.0, P - 2) * size / (K * slowest * alpha)) : 1;
        const double p2 = std::exp2(std::round(std::log2(std::max(1.0, k))));
        for (double f : {0.5, 1.0, 2.0}) pieces.insert(static_cast<std::uint32_t>(std::clamp(p2 * f, 1.0, double(1 << 12))));
    }
    for (std::uint32_t k : pieces) {
        if (k > most) continue;
        if (Clock::now() >= q.deadline) {
            notes.push_back("pipelined rings: the time limit came before every piece count was tried");
            return;
        }
        try {
            out.push_back({fmt::format("pipelined rings, {} piece{}", k, k == 1 ? "" : "s"),
                           fmt::format("{} on NCCL's {} rings, {} pieces a ring pipelined (verifier/time/rooted_rings.hpp)", coll.row().name,
                                       routes.rings.size(), k),
                           "pipelined rings", false,
                           std::make_shared<const SendTable>(nccl::nccl_rooted_ring_table(t, q.instance.model, coll, routes.rings, k,
                                                                                          Deadline::at(q.deadline)))});
        } catch (const InputError& e) {
            notes.push_back(fmt::format("pipelined rings, {} pieces: {}", k, e.what()));
        }
    }
}

}  // namespace collsched
