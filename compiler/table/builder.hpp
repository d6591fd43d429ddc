/** \file
 * Building send tables in code: explicit hops, and endpoint sends lowered with the
 * `cut-through` policy (hop k of a send issued in step s crosses its channel in step s+k-1,
 * along the topology's route). The DSL lowering and the built-in generators both use it.
 */
#pragma once

#include <vector>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"

namespace collsched {

class TableBuilder {
public:
    TableBuilder(std::shared_ptr<const Topology> topo, Model model, Collective coll);

    const Topology& topology() const { return *table_.topology; }
    Messages messages() const { return table_.messages(); }

    /// One transfer; `channel` must belong to the topology.
    void hop(Step step, ChannelId channel, MessageId m) {
        table_.transfers.push_back({step, channel, m});
        if (ops_) table_.transfer_ops.push_back(op_);
    }
    /// The transfers from here on are part of executor op `id` (SendTable::transfer_ops; own_op: each its own).
    void op(std::uint32_t id) {
        if (!ops_ && id != own_op) table_.transfer_ops.assign(table_.transfers.size(), own_op), ops_ = true;
        op_ = id;
    }
    /// An endpoint send issued in `step`, cut-through along the route from src to dst.
    /// Returns the step in which it arrives (step - 1 when src == dst: nothing moves).
    Step send_cut_through(Step step, Node src, Node dst, MessageId m);
    /// The table's registry of composites (partials, combined values), made on first use.
    Composites& composites() { return table_.composite_registry(); }
    void require(MessageId m, Node at) { table_.requirements.push_back({m, at}); }

    std::size_t size() const { return table_.transfers.size(); }
    void reserve(std::size_t n) { table_.transfers.reserve(n); }
    /// The sorted table (its composites numbered canonically; LimitReached once `deadline`
    /// passes while they are: canonicalize_composites).
    SendTable finish(Deadline deadline = {}) &&;

private:
    SendTable table_;
    std::vector<ChannelId> route_;
    std::uint32_t op_ = own_op;
    bool ops_ = false;  ///< transfer_ops kept (an op was named)
};

/// The phase algorithm for total exchange on a binary fat tree with any capacities
/// (Dimakopoulos & Dimopoulos, section 5), pipelined as in their equation (2): phase i
/// (crossing level h = L - i) starts 2h - 3 steps before phase i-1 ends. Steps:
/// sum_i ceil(4^(i-1)/c_i) + 2 log n - 1; for EBFTs n + 2 log n - 2. `deadline` is checked every
/// step of a phase (n = 1,024: 20 million transfers, seconds): LimitReached ("time limit (the phase
/// total exchange)") once it passes.
SendTable bft_phase_alltoall(std::shared_ptr<const Topology> bft, Deadline deadline = {});

}  // namespace collsched
