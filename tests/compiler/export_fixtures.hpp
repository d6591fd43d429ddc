/** \file
 * Tables the export tests share: the EBFT phase total exchange, the ring multinode broadcast
 * (every processor forwards to its right neighbour what it received in the previous step), and
 * a flooding multinode broadcast built by simulating flooding (every router forwards each new
 * message to all other directions as soon as the channel is free, FIFO per channel), plus
 * golden-file helpers (COLLSCHED_UPDATE_GOLDEN=1 rewrites them).
 */
#pragma once

#include <cstdlib>
#include <deque>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/send_table.hpp"

namespace collsched::test {

inline SendTable ebft_alltoall(std::uint32_t n) { return bft_phase_alltoall(Topology::parse(fmt::format("ebft:{}", n))); }

/// ring:n allgather in n-1 steps: in step k, p sends b((p - k + 1) mod n) to p + 1.
inline SendTable ring_allgather(std::uint32_t n) {
    auto topo = Topology::parse(fmt::format("ring:{}", n));
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::allgather, Node{0}, {}});
    Messages ms = b.messages();
    for (std::uint32_t k = 1; k < n; ++k)
        for (std::uint32_t p = 0; p < n; ++p)
            b.hop(k, *topo->find_channel(Node{p}, Node{(p + 1) % n}), ms.broadcast((p + n - (k - 1)) % n));
    return std::move(b).finish();
}

/// One-step alltoall on complete:P: every m(s,d) on the channel s -> d in step 1.
inline SendTable complete_alltoall(std::uint32_t P) {
    auto topo = Topology::parse(fmt::format("complete:{}", P));
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::alltoall, Node{0}, {}});
    for (std::uint32_t s = 0; s < P; ++s)
        for (std::uint32_t d = 0; d < P; ++d)
            if (s != d) b.hop(1, *topo->find_channel(Node{s}, Node{d}), b.messages().personal(s, d));
    return std::move(b).finish();
}

/// Flooding allgather with replicate=yes and unbounded queues: processors put their datum on
/// every out-channel at time 0; a node that receives a message for the first time queues it on
/// every out-channel except back where it came from (processors only keep it); each channel
/// sends up to its capacity per step from its FIFO queue.
inline SendTable flood_allgather(const std::string& spec) {
    auto topo = Topology::parse(spec);
    Model model = topo->default_model();
    model.replicate = true;
    model.queues = QueueKind::unbounded;
    TableBuilder b(topo, model, Collective{CollectiveKind::allgather, Node{0}, {}});
    Messages ms = b.messages();
    const std::size_t C = topo->channels().size();
    std::vector<std::deque<MessageId>> queue(C);
    std::vector<std::set<std::uint32_t>> seen(topo->nodes());
    for (std::uint32_t p = 0; p < topo->processors(); ++p) {
        seen[p].insert(idx(ms.broadcast(p)));
        for (ChannelId c : topo->out_channels(Node{p})) queue[idx(c)].push_back(ms.broadcast(p));
    }
    for (Step s = 1;; ++s) {
        struct Arrival {
            Node at, from;
            MessageId m;
        };
        std::vector<Arrival> arrivals;
        bool any = false;
        for (std::uint32_t c = 0; c < C; ++c) {
            const Channel& ch = topo->channel(ChannelId{c});
            for (std::uint32_t k = 0; k < ch.cap && !queue[c].empty(); ++k) {
                MessageId m = queue[c].front();
                queue[c].pop_front();
                b.hop(s, ChannelId{c}, m);
                arrivals.push_back({ch.to, ch.from, m});
                any = true;
            }
        }
        if (!any) break;
        for (const Arrival& a : arrivals) {
            if (!seen[idx(a.at)].insert(idx(a.m)).second || topo->is_processor(a.at)) continue;
            for (ChannelId c : topo->out_channels(a.at))
                if (topo->channel(c).to != a.from) queue[idx(c)].push_back(a.m);
        }
    }
    return std::move(b).finish();
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// Compares `text` with the golden file (relative to the source tree); with
/// COLLSCHED_UPDATE_GOLDEN=1 in the environment, rewrites the file instead.
inline void check_golden(const std::string& rel, const std::string& text) {
    std::string path = std::string(COLLSCHED_SOURCE_DIR) + "/" + rel;
    if (const char* u = std::getenv("COLLSCHED_UPDATE_GOLDEN"); u && std::string(u) == "1") {
        std::ofstream(path, std::ios::binary) << text;
        MESSAGE("rewrote " << rel);
        return;
    }
    std::string expected = read_file(path);
    INFO("golden file " << rel << " (COLLSCHED_UPDATE_GOLDEN=1 rewrites it)");
    CHECK(expected == text);
}

}  // namespace collsched::test
