/** \file
 * The transfers of an MSCCL++ plan as export_mscclpp.cpp places them, private to it and
 * export_mscclpp_floor.cpp: where each reads and writes, and a floor on the ops of a GPU's
 * busiest thread block that holds at every thread-block count (the writer's fast refusal).
 */
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/core/ids.hpp"

namespace collsched::detail {

/// A place in a GPU's buffers: 'i', 'o', 's' plain chunks, or 'p' an LL packet slot of the scratch.
struct PlanLoc {
    char buf = 'i';
    int idx = 0;
    bool operator==(const PlanLoc&) const = default;
};

/// One endpoint transfer as the plan carries it.
struct PlanMove {
    int src = 0, dst = 0;
    Step sent = 0, arrived = 0;
    PlanLoc from, to;  ///< at src (plain, or 'p': the packet slot it arrived in), at dst
    int chain = 0;     ///< the thread block's share: the message (copies) or the chunk (reductions)
    bool port = false;
    // reductions: what the receiver does with the arrived partial at `arrived`
    bool combine = false;
    PlanLoc work;  ///< the receiver's working chunk W
    // copies: where the receiver keeps the message (the plain destination), if anywhere
    std::optional<PlanLoc> keep;
};

/// A floor on the ops of the busiest thread block of a plan with K thread blocks a GPU (one
/// instance), at every K, without writing the plan (export_mscclpp_floor.cpp has its derivation).
/// `chains` are the plan's chains in the order Writer::build deals them to blocks (round-robin),
/// `initial_chain[g]` the chains of GPU g's local copies at the start.
class OpFloor {
public:
    OpFloor(const std::vector<PlanMove>& moves, const std::vector<std::vector<int>>& initial_chain, const std::vector<int>& chains, int gpus,
            bool packets, bool reduction, bool handshake);
    std::size_t busiest(int K) const;

private:
    struct Group {
        int gpu = 0, bound = 1, times = 1;
        std::size_t begin = 0, end = 0;  ///< its items in items_, sorted by key
    };
    std::vector<Group> groups_;
    std::vector<std::pair<int, int>> items_;  ///< (key, chain's place in `chains`): ops cover up to `bound` distinct keys
    int gpus_ = 0;
    std::size_t dropped_ = 0;  ///< counted ops a block may drop (Simple: its trailing nop)
};

}  // namespace collsched::detail
