/** \file
 * Plans: a construction's sends between processors in logical steps, lowered to a send table
 * (docs/time.md, "Constructions for time"). A construction says, per logical step, which
 * processor sends which item to which processor: an item is a chunk of a reduction (the sender
 * sends what its buffer of that chunk holds then, resolved by the buffer rule) or a base message
 * (allgather's b(p, c)). Lowering gives logical step L the physical steps of its longest route
 * (1 between processors joined by a channel; a route through routers takes one step per hop,
 * cut-through) and each physical step as many rounds as its busiest channel, link group or port
 * needs, so the table holds the step model's capacities by construction; the asynchronous time
 * (docs/time.md) does not depend on steps or rounds, only on the order the data allows. A route
 * that passes through another processor is refused (a relaying processor would combine a
 * partial into its own buffer). Under replicate=yes the sends of one item from one sender in one
 * logical step share their common route prefix (a router copies what it holds).
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"

namespace collsched::compose {

struct PlannedSend {
    std::uint32_t step;  ///< logical step, from 1
    Node from, to;
    std::uint32_t item;  ///< the chunk of a reduction, or a base message id (allgather)
};

class Plan {
public:
    /// `deadline`: send() throws LimitReached once it passes (read every 65,536 sends: one shape on
    /// 4,096 GPUs plans tens of millions of sends, seconds past --timeout unpolled).
    Plan(std::shared_ptr<const Topology> topo, Model model, Collective coll, Deadline deadline = {})
        : topo_(std::move(topo)), model_(model), coll_(std::move(coll)), deadline_(deadline) {}

    void send(std::uint32_t step, Node from, Node to, std::uint32_t item) {
        if ((sends_.size() & 0xffff) == 0xffff && deadline_.passed()) throw LimitReached("time limit (planning a composition)");
        sends_.push_back({step, from, to, item});
    }
    std::size_t size() const { return sends_.size(); }
    const Model& model() const { return model_; }
    /// Whether a channel joins the two processors (else their sends are routed through routers).
    bool joined(Node from, Node to) const { return topo_->find_channel(from, to).has_value(); }
    const Collective& collective() const { return coll_; }

    /// The send table, or nullopt with `why` set when a route passes through a processor.
    /// LimitReached once `deadline` passes while the table is sorted (TableBuilder::finish).
    std::optional<SendTable> lower(std::string* why, Deadline deadline = {}) const;

private:
    std::shared_ptr<const Topology> topo_;
    Model model_;
    Collective coll_;
    Deadline deadline_;
    std::vector<PlannedSend> sends_;
};

/// Sets every step's rounds to the least that its transfers need: per channel, link group and
/// (single or half ports) processor port, ceil(load / capacity).
void fit_rounds(SendTable&);

}  // namespace collsched::compose
