// A floor on the ops of the busiest thread block of an MSCCL++ plan at any number K of thread
// blocks a GPU (export_mscclpp.cpp, Writer::run): the writer skips without building it a K whose
// floor is above the executor's 64 ops, so a table no K brings under 64 is refused in a fraction of
// the time, and a plan is found (the same one) without building the Ks before it that fail.
#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

#include "compiler/interop/export_mscclpp_moves.hpp"

namespace collsched::detail {

// Why it is a floor. Writer::build(K) gives chain number r (in `chains`' order) thread block block_of(r, chains, K, G, row)
// of every GPU (each instance a copy of instance 0's program), and TbWriter::program writes a block's
// ops from the transfers and local copies of its own chains only. Each group below is a set of ops
// of one GPU that share a key (a step, a source buffer, a work chunk), each op covering at most
// `bound` distinct items of the group; so the block holds at least ceil(d / bound) of them for the d
// distinct items of the group its chains have, `times` over. Only ops nothing later removes are
// counted, except Simple's nops, of which a block drops at most its last (nop() never writes two
// in a row; the trailing ones are erased), one per block:
//  - one copy per local copy at the start;
//  - Simple: the puts of a step from one source buffer, 8 peers an op; the port puts of a step, 8 an op
//    (pws or pwsf); the signals of a step, 8 memory peers an op; the waits of a step, 8 memory peers an
//    op and 8 port transfers an op; the nop between a step's puts and its signals and the nop after a step's waits;
//    the handshake, two ops per 8 memory peers of the block and two per 8 port peers, and its nop;
//  - LL (its nops and memory puts not counted: a put may join a reduction's respkt): one rppkt or
//    ppkt per port transfer and per memory transfer out of a packet slot; copies: one upkt per
//    arrival the receiver keeps;
//  - reductions: per step and work chunk W, one op per replacing arrival and one per 9 combining
//    arrivals (receive() groups combines into one W, 9 sources at most).
OpFloor::OpFloor(const std::vector<PlanMove>& moves, const std::vector<std::vector<int>>& initial_chain, const std::vector<int>& chains, int gpus,
                 bool packets, bool reduction, bool handshake)
    : gpus_(gpus), chains_(chains.size()), dropped_(packets ? 0 : 1) {
    std::map<int, int> rank;
    for (int c : chains) rank.emplace(c, int(rank.size()));
    // (gpu, kind, step, a, b) -> bound, times, items
    std::map<std::tuple<int, int, Step, int, int>, std::tuple<int, int, std::vector<std::pair<int, int>>>> found;
    int unique = 0;  // a key of its own: the group counts items, not distinct peers
    auto add = [&](std::tuple<int, int, Step, int, int> k, int bound, int times, int key, int r) {
        auto& [b, t, list] = found[k];
        b = bound;
        t = times;
        list.emplace_back(key, r);
    };
    enum { single, put, signal, wait, put_nop, wait_nop, hs_memory, hs_port, hs_nop, combine, port_put, port_wait };
    for (int g = 0; g < gpus; ++g)
        for (int c : initial_chain[std::size_t(g)]) add({g, single, 0, 0, 0}, 1, 1, unique++, rank.at(c));
    for (const PlanMove& m : moves) {
        const int r = rank.at(m.chain);
        if (packets) {
            if (m.port || m.from.buf == 'p') add({m.src, single, 0, 0, 0}, 1, 1, unique++, r);
            if (!reduction && m.keep) add({m.dst, single, 0, 0, 0}, 1, 1, unique++, r);
        } else {
            add({m.dst, wait_nop, m.arrived, 0, 0}, 1, 1, 0, r);
            if (m.port) {
                add({m.src, port_put, m.sent, 0, 0}, 8, 1, unique++, r);
                add({m.dst, port_wait, m.arrived, 0, 0}, 8, 1, unique++, r);
            } else {
                add({m.src, put, m.sent, m.from.buf, 0}, 8, 1, unique++, r);
                add({m.src, signal, m.sent, 0, 0}, 8, 1, m.dst, r);
                add({m.dst, wait, m.arrived, 0, 0}, 8, 1, m.src, r);
                add({m.src, put_nop, m.sent, 0, 0}, 1, 1, 0, r);
            }
            if (handshake)
                for (auto [g, peer] : {std::pair(m.src, m.dst), std::pair(m.dst, m.src)}) {
                    add({g, m.port ? hs_port : hs_memory, 0, 0, 0}, 8, 2, peer, r);
                    add({g, hs_nop, 0, 0, 0}, 1, 1, 0, r);
                }
        }
        if (reduction) {
            if (m.combine) add({m.dst, combine, m.arrived, m.work.buf, m.work.idx}, 9, 1, unique++, r);
            else add({m.dst, single, 0, 0, 0}, 1, 1, unique++, r);
        }
    }
    for (auto& [k, v] : found) {
        auto& [bound, times, list] = v;
        std::sort(list.begin(), list.end());
        list.erase(std::unique(list.begin(), list.end()), list.end());
        groups_.push_back({std::get<0>(k), bound, times, items_.size(), items_.size() + list.size()});
        items_.insert(items_.end(), list.begin(), list.end());
    }
}

std::vector<int> chains_by_steps(const std::vector<PlanMove>& moves, const std::vector<std::vector<int>>& initial_chain, const std::vector<int>& ids) {
    std::map<int, std::pair<Step, Step>> span;
    auto see = [&](int c, Step a, Step b) {
        auto [it, fresh] = span.try_emplace(c, a, b);
        if (!fresh) it->second = {std::min(it->second.first, a), std::max(it->second.second, b)};
    };
    for (const auto& list : initial_chain)
        for (int c : list) see(c, 0, 0);
    for (const PlanMove& m : moves) see(m.chain, m.sent, m.arrived);
    std::vector<int> order = ids;
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return span.at(x) < span.at(y); });
    return order;
}

std::size_t OpFloor::busiest(int K, int G, int row) const {
    const std::size_t k = std::size_t(std::max(1, K));
    std::vector<std::size_t> ops(std::size_t(gpus_) * k, 0), count(k, 0), seen(k, 0);
    std::vector<std::size_t> touched;
    // each place's block once (block_of divides four times; the search asks up to 77 K of every item)
    std::vector<std::uint32_t> block(chains_);
    for (std::size_t r = 0; r < chains_; ++r) block[r] = std::uint32_t(block_of(r, chains_, K, G, row));
    std::size_t run = 0;  // a number per (group, key): a block counts a key once
    for (const Group& g : groups_) {
        for (std::size_t i = g.begin; i < g.end; ++i) {
            if (i == g.begin || items_[i].first != items_[i - 1].first) ++run;
            const std::size_t j = block[std::size_t(items_[i].second)];
            if (seen[j] == run) continue;
            seen[j] = run;
            if (count[j]++ == 0) touched.push_back(j);
        }
        for (std::size_t j : touched) {
            ops[std::size_t(g.gpu) * k + j] += std::size_t(g.times) * ((count[j] + std::size_t(g.bound) - 1) / std::size_t(g.bound));
            count[j] = 0;
        }
        touched.clear();
    }
    std::size_t most = 0;
    for (std::size_t n : ops) most = std::max(most, n > dropped_ ? n - dropped_ : 0);
    return most;
}

}  // namespace collsched::detail
