/** \file
 * The send table: every transfer (step, channel, message) of a schedule, with the topology,
 * model and collective it is for. Transfers are 12 bytes each and kept sorted by
 * (step, channel, message), so 10^8 of them take 1.2 GB and every consumer can stream by step.
 */
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/collective.hpp"
#include "compiler/ids.hpp"
#include "compiler/model.hpp"
#include "compiler/topology.hpp"

namespace collsched {

struct Transfer {
    Step step;
    ChannelId channel;
    MessageId message;
    friend bool operator==(const Transfer&, const Transfer&) = default;
    friend auto operator<=>(const Transfer& a, const Transfer& b) {
        return std::tuple(a.step, idx(a.channel), idx(a.message)) <=> std::tuple(b.step, idx(b.channel), idx(b.message));
    }
};
static_assert(sizeof(Transfer) == 12);

/// A custom goal: `require m(0,3) at 3`.
struct Requirement {
    MessageId message;
    Node at;
    bool operator==(const Requirement&) const = default;
};

struct SendTable {
    std::shared_ptr<const Topology> topology;
    Model model;
    Collective collective;
    std::vector<Requirement> requirements;
    std::vector<Transfer> transfers;  ///< sorted by (step, channel, message)

    /// Fields of a table file that collsched does not interpret, kept and written back:
    /// top-level (name, JSON text) and per transfer (index into transfers, `"k": v, ...` text).
    std::vector<std::pair<std::string, std::string>> extra_fields;
    std::vector<std::pair<std::uint64_t, std::string>> transfer_extras;

    Messages messages() const { return Messages(topology->processors()); }
    /// The completion time T: the last step with a transfer (0 for an empty table).
    Step steps() const { return transfers.empty() ? 0 : transfers.back().step; }
    /// Sorts the transfers, keeping per-transfer extras attached. Duplicates stay: a transfer
    /// listed twice is two copies on one channel, which the verifier must count.
    void sort();
    bool is_sorted() const;
};

}  // namespace collsched
