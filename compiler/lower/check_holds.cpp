#include "compiler/lower/check_holds.hpp"

#include <limits>
#include <unordered_set>

#include <fmt/format.h>

#include "compiler/core/flat_map.hpp"
#include "compiler/io/table_printer.hpp"

namespace collsched::compiler {

// One pass over the sorted transfers finds the first arrival of each (message, processor) pair
// asked about; a flat hash map holds the pairs, and a bitmap of the messages asked about skips
// most transfers cheaply.
void check_holds(std::span<const Transfer> transfers, const Evaluated& ev, Reporter& reporter, const ContextsOf& contexts) {
    const std::uint32_t processors = ev.topology->processors();
    if (ev.pending.empty()) return;
    auto key = [](MessageId m, std::uint32_t at) { return (std::uint64_t{idx(m)} << 32) | at; };
    constexpr Step never = std::numeric_limits<Step>::max();
    FlatMap first;  // (message, processor) -> first arrival step, 0 while none
    first.reserve(ev.pending.size());
    // A bitmap of the messages asked about skips most transfers cheaply (when it is small).
    const bool filter = ev.messages.size() <= (std::uint64_t{1} << 28);
    std::vector<bool> wanted(filter ? ev.messages.size() : 0, false);
    // Each loop prefetches the map entry it needs a few iterations ahead, so the cache
    // misses of these random lookups overlap (they are most of the cost of this check).
    constexpr std::size_t ahead = 16;
    const std::size_t P = ev.pending.size(), N = transfers.size();
    for (std::size_t i = 0; i < P; ++i) {
        if (i + ahead < P) first.prefetch(key(ev.pending[i + ahead].message, ev.pending[i + ahead].at));
        const Pending& p = ev.pending[i];
        first.find_or_insert(key(p.message, p.at), [] { return 0u; });
        if (filter) wanted[idx(p.message)] = true;
    }
    auto arrival = [&](MessageId m, const Transfer& t) -> std::uint64_t {  // the key of an arrival at a processor, or FlatMap::empty
        if (filter && !wanted[idx(m)]) return FlatMap::empty;
        std::uint32_t to = idx(ev.topology->channel(t.channel).to);
        return to >= processors ? FlatMap::empty : key(m, to);
    };
    auto record = [&](std::uint64_t k, Step step) {
        if (k != FlatMap::empty && first.find(k) == 0) first.at(k) = step;
    };
    if (!ev.composites->empty()) {  // a bundle brings its parts
        for (const Transfer& t : transfers) {
            if (ev.messages.is_composite(t.message))
                ev.messages.for_each_part(t.message, [&](MessageId m) { record(arrival(m, t), t.step); });
            else
                record(arrival(t.message, t), t.step);
        }
    } else {
        for (std::size_t i = 0; i < N; ++i) {
            if (i + ahead < N)
                if (std::uint64_t k = arrival(transfers[i + ahead].message, transfers[i + ahead]); k != FlatMap::empty)
                    first.prefetch(k);
            record(arrival(transfers[i].message, transfers[i]), transfers[i].step);
        }
    }
    // The sends whose data has not arrived: the first at each statement (the reporter keeps one
    // error per location), up to one more than it reports.
    std::vector<std::size_t> failed;
    std::vector<Step> arrives;
    std::unordered_set<std::uint64_t> locations;
    for (std::size_t i = 0; i < P && locations.size() <= max_eval_errors; ++i) {
        if (i + ahead < P) first.prefetch(key(ev.pending[i + ahead].message, ev.pending[i + ahead].at));
        const Pending& p = ev.pending[i];
        Step arrive = first.find(key(p.message, p.at));
        if (arrive == 0) arrive = never;
        if (arrive < p.step) continue;
        if (!locations.insert((std::uint64_t{p.loc.line} << 32) | p.loc.column).second) continue;
        failed.push_back(i);
        arrives.push_back(arrive);
    }
    if (failed.empty()) return;
    const std::vector<std::string> when_loops = contexts(failed);
    for (std::size_t f = 0; f < failed.size(); ++f) {
        const Pending& p = ev.pending[failed[f]];
        const Step arrive = arrives[f];
        std::string name = ev.messages.name(p.message);
        std::string why;
        if (!ev.collective.initial(ev.messages, p.message))
            why = fmt::format("{} is not initial data of collective {}", name, dsl_collective(ev.collective));
        else
            why = fmt::format("it starts at processor {}", processor_text(*ev.topology, ev.messages.key(p.message).src));
        const std::string at = processor_text(*ev.topology, p.at);
        std::string when = arrive == never ? fmt::format("no transfer brings it to {}", at)
                                           : fmt::format("it first reaches {} at the end of step {}", at, arrive);
        reporter.report("E046", p.loc,
                        fmt::format("processor {} does not hold {} in step {}: {}, and {}{}", at, name, p.step, why, when, when_loops[f]));
    }
}

}  // namespace collsched::compiler
