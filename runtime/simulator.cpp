// The step-accurate simulator: slot assignment, the step loop for `hop` and `wormhole` timing,
// the messages of broken rules, and the text and JSON reports. See simulator.hpp for the model.
#include "runtime/simulator.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "compiler/flat_map.hpp"
#include "compiler/partials.hpp"
#include "dsl/diagnostics.hpp"
#include "support/text.hpp"

namespace collsched {

std::string_view to_string(SimStatus s) {
    switch (s) {
        case SimStatus::completed: return "completed";
        case SimStatus::halted: return "halted";
        case SimStatus::incomplete: return "incomplete";
    }
    return "?";
}

std::string_view to_string(SimRule r) {
    switch (r) {
        case SimRule::capacity: return "capacity";
        case SimRule::ports: return "ports";
        case SimRule::queues: return "queues";
        case SimRule::replication: return "replication";
        case SimRule::causality: return "causality";
        case SimRule::completeness: return "completeness";
    }
    return "?";
}

double SimReport::utilization(const SendTable& t, ChannelId c) const {
    if (simulated_steps == 0 || idx(c) >= channel_transfers.size()) return 0;
    return static_cast<double>(channel_transfers[idx(c)]) /
           (static_cast<double>(t.topology->channel(c).cap) * static_cast<double>(simulated_steps));
}

namespace {

constexpr std::uint32_t never = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t no_index = std::numeric_limits<std::size_t>::max();
constexpr std::size_t listed_missing = 10;
constexpr std::size_t listed_busiest = 5;
constexpr std::size_t listed_in_message = 8;

/// What phase 1 of a step found: the first offending transfer (table index) per rule.
struct StepFaults {
    std::size_t capacity = no_index;    ///< first transfer of the first over-full channel run
    std::uint32_t ports = never;        ///< lowest processor over its port limit
    std::size_t causality = no_index;   ///< first send of a message the sender cannot send
    std::size_t queue_send = no_index;  ///< queues=none, replicate=yes: first send without arrival in s-1
    std::size_t injection = no_index;   ///< inject=once: first second injection of a datum by its origin
    std::uint32_t group = never;        ///< lowest link group over its capacity in the step
};

/// The slots of a transfer's sender and receiver.
struct SlotPair {
    std::uint32_t src;
    std::uint32_t dst;
};

/// A change of a router's waiting count at a boundary (replicate=yes: residence intervals).
struct QueueEvent {
    Step boundary;
    std::uint32_t router;
    std::int32_t delta;
};

/// What the processors hold when messages combine (docs/semantics.md, "Combined values and
/// bundles"): per processor the messages received (a bundle's parts, each) and, for combining,
/// the source ranges held, as a map start -> ends. Used only for tables with composites or a
/// reduce/prefix collective; the slot state below stays the fast path for all others.
class Holdings {
public:
    Holdings(const SendTable& t, const Messages& ms, std::uint32_t P, std::uint32_t chunks, bool partials)
        : t_(t), ms_(ms), got_(P), starts_(P), words_((P + 63) / 64), partials_(partials) {
        for (std::uint32_t p = 0; p < P; ++p)
            if (t.collective.initial(ms, ms.value(p))) starts_[p][p].push_back(p);
        if (partials_) {
            buffer_.assign(std::size_t{P} * chunks, Bits(words_, 0));
            for (std::uint32_t p = 0; p < P; ++p)
                for (std::uint32_t c = 0; c < chunks; ++c) buffer_[std::size_t{p} * chunks + c][p / 64] |= std::uint64_t{1} << (p % 64);
            chunks_ = chunks;
        }
    }

    /// The buffer rule of partials (docs/semantics.md, "Reductions"), on bit sets: a disjoint
    /// arrival is combined into the buffer of its chunk, one that covers the buffer replaces it,
    /// anything else would count a contribution twice: then the buffer stays and the sentence
    /// (after "processor p receives m in step s while its buffer holds ...") is returned.
    std::optional<std::string> receive(std::uint32_t p, MessageId m) {
        if (partials_) {
            std::uint32_t c = 0;
            if (Bits in = bits_of(m, c); !in.empty()) {
                Bits& b = buffer_[std::size_t{p} * chunks_ + c];
                bool disjoint = true, covers = true;
                std::uint32_t first_common = 0;
                for (std::size_t w = words_; w-- > 0;) {
                    if (b[w] & in[w]) disjoint = false, first_common = static_cast<std::uint32_t>(w * 64 + std::countr_zero(b[w] & in[w]));
                    if (b[w] & ~in[w]) covers = false;
                }
                if (disjoint) {
                    for (std::size_t w = 0; w < words_; ++w) b[w] |= in[w];
                } else if (covers) {
                    b = in;
                } else {
                    return fmt::format("{}: a({}) would be counted twice", set_name(b, c), first_common);
                }
                return std::nullopt;
            }
        }
        ms_.for_each_part(m, [&](MessageId q) {
            if (!got_[p].insert(idx(q)).second) return;
            MessageKey k = ms_.key(q);
            if (k.kind == MessageKind::value) starts_[p][k.src].push_back(k.src);
            if (k.kind == MessageKind::combined) starts_[p][k.src].push_back(k.dst);
        });
        return std::nullopt;
    }

    /// Breadth-first over the positions a chain of held ranges can reach from lo, within hi.
    /// Returns the farthest end reached (lo - 1 when none starts at lo).
    std::int64_t farthest(std::uint32_t p, std::uint32_t lo, std::uint32_t hi) const {
        std::vector<std::uint32_t> todo{lo};
        std::set<std::uint32_t> seen{lo};
        std::int64_t best = std::int64_t{lo} - 1;
        while (!todo.empty()) {
            std::uint32_t at = todo.back();
            todo.pop_back();
            auto it = starts_[p].find(at);
            if (it == starts_[p].end()) continue;
            for (std::uint32_t end : it->second) {
                if (end > hi) continue;
                best = std::max<std::int64_t>(best, end);
                if (end < hi && seen.insert(end + 1).second) todo.push_back(end + 1);
            }
        }
        return best;
    }

    bool holds(std::uint32_t p, MessageId m) const {
        if (partials_) {
            std::uint32_t c = 0;
            if (Bits in = bits_of(m, c); !in.empty()) return buffer_[std::size_t{p} * chunks_ + c] == in;
        }
        MessageKey k = ms_.key(m);
        switch (k.kind) {
            case MessageKind::value: return farthest(p, k.src, k.src) == k.src;
            case MessageKind::combined: return got_[p].count(idx(m)) || farthest(p, k.src, k.dst) == k.dst;
            case MessageKind::bundle: {
                const auto& parts = ms_.composite(m).parts;
                return std::all_of(parts.begin(), parts.end(), [&](MessageId q) { return holds(p, q); });
            }
            default: return got_[p].count(idx(m)) || (k.src == p && t_.collective.initial(ms_, m));
        }
    }

    /// "holds only a(0..1)": what p can form of a(lo..hi) (combined values and a(k)).
    std::string formed(std::uint32_t p, std::uint32_t lo, std::uint32_t hi) const {
        std::int64_t f = farthest(p, lo, hi);
        if (f < lo) return fmt::format("holds nothing that starts at a({})", lo);
        return f == lo ? fmt::format("holds only a({})", lo) : fmt::format("holds only a({}..{})", lo, f);
    }

    /// Why p does not hold m, for a message; empty when m is not a value, combined or bundle.
    std::string why_not(std::uint32_t p, MessageId m) const {
        if (partials_) {
            std::uint32_t c = 0;
            if (Bits in = bits_of(m, c); !in.empty()) return "its buffer holds " + set_name(buffer_[std::size_t{p} * chunks_ + c], c);
        }
        MessageKey k = ms_.key(m);
        if (k.kind == MessageKind::value) return formed(p, k.src, k.src);
        if (k.kind == MessageKind::combined) return formed(p, k.src, k.dst);
        if (k.kind == MessageKind::bundle)
            for (MessageId q : ms_.composite(m).parts)
                if (!holds(p, q)) return fmt::format("lacks its part {}", ms_.name(q));
        return "";
    }

private:
    using Bits = std::vector<std::uint64_t>;

    /// The contributor bits of a value a(s) or partial a({...}) and its chunk; empty for others.
    Bits bits_of(MessageId m, std::uint32_t& chunk) const {
        Bits out;
        auto set = [&](std::uint32_t s) { out[s / 64] |= std::uint64_t{1} << (s % 64); };
        if (ms_.is_composite(m)) {
            const Composite& cp = ms_.composite(m);
            if (cp.kind != MessageKind::partial) return out;
            out.assign(words_, 0);
            for (std::uint32_t s : cp.sources) set(s);
            chunk = cp.lo;
            return out;
        }
        MessageKey k = ms_.key(m);
        if (k.kind != MessageKind::value) return out;
        out.assign(words_, 0);
        set(k.src);
        chunk = k.chunk;
        return out;
    }

    /// `a({0..3})` of a bit set, written out by the simulator's own printer.
    std::string set_name(const Bits& b, std::uint32_t chunk) const {
        std::vector<std::uint32_t> v;
        for (std::size_t w = 0; w < b.size(); ++w)
            for (std::uint64_t x = b[w]; x; x &= x - 1) v.push_back(static_cast<std::uint32_t>(w * 64 + std::countr_zero(x)));
        std::string inner;
        if (v.size() == 1) {
            inner = std::to_string(v[0]);
        } else {
            inner = "{";
            for (std::size_t i = 0; i < v.size();) {
                std::size_t j = i;
                while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
                if (i) inner += ',';
                if (j >= i + 2) inner += fmt::format("{}..{}", v[i], v[j]);
                else if (j == i + 1) inner += fmt::format("{},{}", v[i], v[j]);
                else inner += std::to_string(v[i]);
                i = j + 1;
            }
            inner += "}";
        }
        return ms_.chunks() > 1 ? fmt::format("a({},{})", inner, chunk) : fmt::format("a({})", inner);
    }

    const SendTable& t_;
    const Messages& ms_;
    std::vector<std::unordered_set<std::uint32_t>> got_;
    std::vector<std::map<std::uint32_t, std::vector<std::uint32_t>>> starts_;
    std::size_t words_;
    bool partials_;
    std::uint32_t chunks_ = 1;
    std::vector<Bits> buffer_;  ///< partials: processor * chunks + chunk -> contributor bits
};

/// One replay of one table.
///
/// State. The simulator needs "does node x hold message m" for the (node, message) pairs a table
/// touches, which are few compared with nodes x messages (n=1024: 2047 nodes, 10^6 messages, but
/// only ~2*10^7 pairs used). So every pair that occurs as the sender or receiver of a transfer, or
/// as the origin of an initial message, gets a dense *slot*. Slots are assigned once, message by
/// message: the transfers are bucketed by message with a counting sort (dense message ids when the
/// message space is not much larger than the table, otherwise a sorted list of the messages in the
/// table), each bucket's nodes are sorted, and every transfer records its source and destination
/// slot. The step loop then reads the table and the slot pairs in sequence and the slot state at
/// random, with no hashing and no allocation per transfer. Memory: 8 bytes per transfer for the
/// slot pairs (plus 8 while slots are assigned) and about 12 per slot.
///
/// Per slot: `held_` is the first step at the end of which the node has the message (0 for
/// initial data, `never` if not yet), `stock_` (replicate=no) the copies a router has now, and
/// `last_arrival_` (queues=none with replicate=yes) the last step in which it arrived.
class Simulator {
public:
    Simulator(const SendTable& table, const SimOptions& options)
        : table_(table),
          topo_(*table.topology),
          model_(table.model),
          msgs_(table.messages()),
          options_(options),
          P_(topo_.processors()),
          R_(topo_.routers()),
          wormhole_(table.model.timing == Timing::wormhole),
          replicate_(table.model.replicate) {
        if (table.has_composites() || table.collective.combines() || table.collective.reduces())
            have_.emplace(table, msgs_, P_, table_chunks(table), uses_partials(table));
    }

    SimReport run() {
        load_transfers();
        rep_.transfers = tr_.size();
        rep_.steps = tr_.empty() ? 0 : tr_.back().step;
        rep_.wormhole = wormhole_;
        rep_.queues_apply = !wormhole_;
        rep_.cost = table_cost(table_);  // wormhole: payloads of bundles count
        assign_slots();
        allocate_state();
        if (options_.trace) {
            names_.reserve(topo_.nodes());
            for (std::uint32_t v = 0; v < topo_.nodes(); ++v) names_.push_back(topo_.node_name(Node{v}));
        }
        bool ran_through = wormhole_ ? run_wormhole() : run_hop();
        finish(ran_through);
        return std::move(rep_);
    }

    // ---- streaming (StreamSimulator, compiler/stream.hpp): the table arrives step by step ----
    //
    // There is no table to assign slots from. Processors: a slot is made when a (processor,
    // message) pair is first touched (dense per-message slots, else a hash map) and kept to the
    // end for the completeness check. Routers (only replicate=no streams, so router state is the
    // copies in flight): a step-to-step merge. The copies a router still holds after step s-1 are
    // kept sorted by (router, message) in `carry_`; step s's router endpoints are radix-sorted by
    // the same key and merged with them, and the merged list numbers the step's router slots, so
    // router state is read in sequence instead of probed at random; after the step the slots that
    // still hold a copy become the next `carry_`. The rule checks are the same code as a
    // whole-table run.

    void stream_begin() {
        streamed_ = true;
        COLLSCHED_ASSERT(!wormhole_ && !replicate_);
        allocate_state();
        // Processor slots: when the message space is dense enough, slots 2m and 2m+1 belong to
        // the first two processors that touch message m (the holders of a message with one
        // origin are few: EBFT all-to-all has exactly two), found by comparing `proc_node_`
        // instead of hashing; a third processor goes to the hash map, whose slots follow from
        // `pool_base_` = 2M on. Router slots come after all processor slots, renumbered each step.
        const std::uint64_t M = msgs_.size();
        if (M <= dense_processor_limit) {
            pool_base_ = static_cast<std::uint32_t>(2 * M);
            proc_node_.assign(2 * M, never);
            held_.assign(2 * M, never);
            stock_.assign(2 * M, 0);
        }
        proc_end_ = held_.size();
        message_bits_ = std::max(1, static_cast<int>(std::bit_width(M)));
        const int bits = message_bits_ + std::max(1, static_cast<int>(std::bit_width(std::max<std::uint32_t>(R_, 1))));
        radix_passes_ = (bits + 12) / 13;  // digits of at most 13 bits: 8192 buckets (64 KiB of counts) stay in L2
        radix_digit_ = (bits + radix_passes_ - 1) / radix_passes_;
        if (options_.trace) {
            names_.reserve(topo_.nodes());
            for (std::uint32_t v = 0; v < topo_.nodes(); ++v) names_.push_back(topo_.node_name(Node{v}));
        }
    }

    /// One step (sorted by channel, message). False once the run has halted.
    bool stream_step(Step s, std::span<const Transfer> step) {
        rep_.transfers += step.size();
        rep_.steps = s;
        if (halted_) return false;
        tr_ = step;
        const std::size_t n = step.size();
        slots_.resize(n);
        held_.resize(proc_end_);  // the last step's router slots: their state is in carry_
        stock_.resize(proc_end_);
        // Processor endpoints get their slots now (the dense slots are prefetched a few transfers
        // ahead so the cache misses overlap); router endpoints become merge requests.
        constexpr std::size_t ahead = 16;
        auto prefetch = [&](std::size_t i) {
            if (pool_base_ == 0) return;
            const Channel& ch = topo_.channel(step[i].channel);
            for (std::uint32_t v : {idx(ch.from), idx(ch.to)})
                if (processor(v)) {
                    const std::size_t d = 2 * std::size_t{idx(step[i].message)};
                    __builtin_prefetch(&proc_node_[d]);
                    __builtin_prefetch(&held_[d]);
                }
        };
        for (std::size_t i = 0; i < std::min(n, ahead); ++i) prefetch(i);
        requests_.clear();
        for (std::size_t i = 0; i < n; ++i) {
            if (i + ahead < n) prefetch(i + ahead);
            const Channel& ch = topo_.channel(step[i].channel);
            const MessageId m = step[i].message;
            const auto at = static_cast<std::uint32_t>(2 * i);
            if (processor(idx(ch.from))) slots_[i].src = stream_slot(idx(ch.from), m);
            else requests_.push_back({router_key(idx(ch.from), m), at});
            if (processor(idx(ch.to))) slots_[i].dst = stream_slot(idx(ch.to), m);
            else requests_.push_back({router_key(idx(ch.to), m), at + 1});
        }
        proc_end_ = held_.size();
        sort_requests();
        merge_routers();
        if (!hop_step(0, n, s)) {
            halted_ = true;
            return false;
        }
        // The router slots that still hold a copy are the copies in flight (replicate=no).
        carry_.clear();
        for (std::size_t j = 0; j < router_keys_.size(); ++j) {
            const std::size_t slot = proc_end_ + j;
            if (stock_[slot] > 0) carry_.push_back({router_keys_[j], held_[slot], stock_[slot]});
        }
        return true;
    }

    SimReport stream_finish() {
        rep_.cost = static_cast<double>(rep_.steps);
        const bool ran_through = !halted_ && hop_end();
        finish(ran_through);
        return std::move(rep_);
    }

private:
    struct RouterRequest {
        std::uint64_t key;  ///< router_key(router, message)
        std::uint32_t at;   ///< 2 * transfer index + (0: source, 1: destination)
    };
    struct RouterCopy {
        std::uint64_t key;
        std::uint32_t held, stock;
    };

    std::uint64_t router_key(std::uint32_t v, MessageId m) const { return (std::uint64_t{v - P_} << message_bits_) | idx(m); }

    /// requests_ sorted by key: an LSD radix sort (a few passes of at most 13 bits over the bits
    /// router and message take), stable, through one buffer the size of the step.
    void sort_requests() {
        if (requests_.size() < 64) {
            std::sort(requests_.begin(), requests_.end(), [](const RouterRequest& a, const RouterRequest& b) { return a.key < b.key; });
            return;
        }
        const std::size_t buckets = std::size_t{1} << radix_digit_;
        const std::uint64_t mask = buckets - 1;
        request_buf_.resize(requests_.size());
        count_.resize(buckets);
        for (int pass = 0; pass < radix_passes_; ++pass) {
            const int shift = pass * radix_digit_;
            std::fill(count_.begin(), count_.end(), 0);
            for (const RouterRequest& r : requests_) ++count_[(r.key >> shift) & mask];
            std::size_t sum = 0;
            for (std::size_t& c : count_) sum += std::exchange(c, sum);
            for (const RouterRequest& r : requests_) request_buf_[count_[(r.key >> shift) & mask]++] = r;
            requests_.swap(request_buf_);
        }
    }

    /// Numbers the step's router slots (from proc_end_ on) by merging the sorted requests with
    /// the copies carried from the step before: every key of either gets one slot, in key order,
    /// with the carried state or (never, 0); each request's transfer gets its slot.
    void merge_routers() {
        router_keys_.clear();
        std::size_t c = 0;
        auto open = [&](std::uint64_t key, std::uint32_t held, std::uint32_t stock) {
            router_keys_.push_back(key);
            held_.push_back(held);
            stock_.push_back(stock);
        };
        if (proc_end_ + requests_.size() + carry_.size() >= never)
            throw InputError("the streamed table touches more than 2^32 (node, message) pairs in one step; too large to simulate");
        for (std::size_t r = 0; r < requests_.size();) {
            const std::uint64_t key = requests_[r].key;
            for (; c < carry_.size() && carry_[c].key < key; ++c) open(carry_[c].key, carry_[c].held, carry_[c].stock);
            if (c < carry_.size() && carry_[c].key == key) {
                open(key, carry_[c].held, carry_[c].stock);
                ++c;
            } else {
                open(key, never, 0);
            }
            const auto slot = static_cast<std::uint32_t>(held_.size() - 1);
            for (; r < requests_.size() && requests_[r].key == key; ++r) {
                const std::uint32_t at = requests_[r].at;
                (at & 1 ? slots_[at >> 1].dst : slots_[at >> 1].src) = slot;
            }
        }
        for (; c < carry_.size(); ++c) open(carry_[c].key, carry_[c].held, carry_[c].stock);
    }

    static std::uint64_t stream_key(std::uint32_t v, MessageId m) { return (std::uint64_t{idx(m)} << 32) | v; }

    /// The slot of processor v for message m, made on first touch.
    std::uint32_t stream_slot(std::uint32_t v, MessageId m) {
        // Whether v starts with m: only asked for a new slot (it divides, through Messages::key).
        auto initial = [&]() -> Step { return table_.collective.initial(msgs_, m) && idx(msgs_.origin(m)) == v ? 0 : never; };
        if (pool_base_ > 0) {
            const std::uint32_t d = 2 * idx(m);
            for (std::uint32_t j = d; j < d + 2; ++j) {
                if (proc_node_[j] == v) return j;
                if (proc_node_[j] == never) {
                    proc_node_[j] = v;
                    held_[j] = initial();
                    return j;
                }
            }
        }
        return proc_map_
            .find_or_insert(stream_key(v, m),
                            [&] {
                                const auto slot = static_cast<std::uint32_t>(held_.size());
                                if (slot == never)
                                    throw InputError("the streamed table touches more than 2^32 (node, message) pairs; too large to simulate");
                                held_.push_back(initial());
                                stock_.push_back(0);
                                return slot;
                            })
            .first;
    }

    /// The slot of (v, m) if it has one, else `never`: a processor's, or a router's among the
    /// last step's router slots (the copies it holds after the last step).
    std::uint32_t stream_find(std::uint32_t v, MessageId m) const {
        if (!processor(v)) {
            const std::uint64_t key = router_key(v, m);
            auto it = std::lower_bound(router_keys_.begin(), router_keys_.end(), key);
            if (it == router_keys_.end() || *it != key) return never;
            return static_cast<std::uint32_t>(proc_end_ + static_cast<std::size_t>(it - router_keys_.begin()));
        }
        if (pool_base_ > 0) {
            const std::uint32_t d = 2 * idx(m);
            if (proc_node_[d] == v) return d;
            if (proc_node_[d + 1] == v) return d + 1;
            if (proc_node_[d + 1] == never) return never;
        }
        return proc_map_.find(stream_key(v, m));
    }

    bool processor(std::uint32_t v) const { return v < P_; }
    bool queues_none() const { return model_.queues == QueueKind::none; }
    const Channel& channel_of(std::size_t i) const { return topo_.channel(tr_[i].channel); }
    std::string node_label(std::uint32_t v) const {
        return fmt::format("{} {}", processor(v) ? "processor" : "router", topo_.node_name(Node{v}));
    }
    std::string channel_name(ChannelId c) const {
        const Channel& ch = topo_.channel(c);
        return fmt::format("{}->{}", topo_.node_name(ch.from), topo_.node_name(ch.to));
    }
    std::string_view unit() const { return wormhole_ ? "round" : "step"; }

    // ---- loading -------------------------------------------------------------------------

    void load_transfers() {
        const std::uint64_t C = topo_.channels().size(), M = msgs_.size();
        const auto& all = table_.transfers;
        if (all.size() >= never)
            throw InputError(fmt::format("the table has {} transfers; the simulator replays at most {}", all.size(), never - 1));
        bool sorted = true;
        for (std::size_t i = 0; i < all.size(); ++i) {
            const Transfer& t = all[i];
            if (t.step < 1) throw InputError(fmt::format("transfers[{}]: step {} is below 1 (steps are numbered from 1)", i, t.step));
            if (t.step >= never - 2) throw InputError(fmt::format("transfers[{}]: step {} is too large", i, t.step));
            if (idx(t.channel) >= C)
                throw InputError(fmt::format("transfers[{}] (step {}): channel id {} does not exist in {} ({} channels)", i,
                                             t.step, idx(t.channel), topo_.spec(), C));
            if (idx(t.message) >= M)
                throw InputError(fmt::format("transfers[{}] (step {}): message id {} does not exist ({} messages)", i, t.step,
                                             idx(t.message), M));
            if (i > 0 && t < all[i - 1]) sorted = false;
        }
        if (sorted) {
            tr_ = all;
        } else {
            sorted_copy_ = all;
            std::sort(sorted_copy_.begin(), sorted_copy_.end());
            tr_ = sorted_copy_;
        }
    }

    std::uint32_t bucket_count() const { return dense_ ? static_cast<std::uint32_t>(msgs_.size()) : static_cast<std::uint32_t>(uniq_.size()); }
    /// The bucket of a message, or `never` when the table does not mention it.
    std::uint32_t bucket(MessageId m) const {
        if (dense_) return idx(m);
        auto it = std::lower_bound(uniq_.begin(), uniq_.end(), idx(m));
        return it != uniq_.end() && *it == idx(m) ? static_cast<std::uint32_t>(it - uniq_.begin()) : never;
    }
    MessageId bucket_message(std::uint32_t b) const { return dense_ ? MessageId{b} : MessageId{uniq_[b]}; }

    // Assigns the slots (see the class comment). The bucketing keeps the transfers of one message in
    // table order, so the first arrival and last send of a router slot (for replicate=yes queue
    // residence) fall out of the same pass.
    void assign_slots() {
        const std::size_t N = tr_.size();
        const std::uint64_t M = msgs_.size();
        dense_ = M <= (std::uint64_t{1} << 22) || M <= 2 * std::uint64_t{N};
        if (!dense_) {
            uniq_.reserve(N);
            for (const Transfer& t : tr_) uniq_.push_back(idx(t.message));
            std::sort(uniq_.begin(), uniq_.end());
            uniq_.erase(std::unique(uniq_.begin(), uniq_.end()), uniq_.end());
            uniq_.shrink_to_fit();
        }
        const std::uint32_t U = bucket_count();
        // Counting sort by bucket; afterwards end[b] is the end of bucket b, which starts at end[b-1].
        std::vector<std::uint32_t> end(std::size_t{U} + 1, 0);
        for (const Transfer& t : tr_) ++end[bucket(t.message) + 1];
        std::partial_sum(end.begin(), end.end(), end.begin());
        // The bucketed copy keeps the channel next to the index, so the pass over the buckets reads
        // it in sequence instead of going back to the table.
        struct Entry {
            std::uint32_t index;
            ChannelId channel;
        };
        std::vector<Entry> by_msg(N);
        for (std::size_t i = 0; i < N; ++i)
            by_msg[end[bucket(tr_[i].message)]++] = {static_cast<std::uint32_t>(i), tr_[i].channel};

        const bool residence = replicate_ && !wormhole_;
        slot_begin_.assign(std::size_t{U} + 1, 0);
        slot_node_.reserve(N + std::min<std::size_t>(U, N) + 1);
        held_.reserve(slot_node_.capacity());
        slots_.resize(N);
        std::vector<std::uint32_t> nodes, first_arrival, last_send;
        std::vector<std::uint32_t> local_of(topo_.nodes());  // node -> its index in `nodes`, for the current bucket
        std::uint64_t S = 0;
        for (std::uint32_t b = 0; b < U; ++b) {
            slot_begin_[b] = static_cast<std::uint32_t>(S);
            const std::uint32_t lo = b == 0 ? 0 : end[b - 1], hi = end[b];
            if (lo == hi) continue;  // not in the table: answered from the initial data
            const MessageId m = bucket_message(b);
            nodes.clear();
            for (std::uint32_t k = lo; k < hi; ++k) {
                const Channel& ch = topo_.channel(by_msg[k].channel);
                nodes.push_back(idx(ch.from));
                nodes.push_back(idx(ch.to));
            }
            const bool initial = table_.collective.initial(msgs_, m);
            if (initial) nodes.push_back(idx(msgs_.origin(m)));
            std::sort(nodes.begin(), nodes.end());
            nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
            for (std::uint32_t j = 0; j < nodes.size(); ++j) local_of[nodes[j]] = j;
            auto local = [&](Node v) { return local_of[idx(v)]; };
            for (std::uint32_t v : nodes) {
                slot_node_.push_back(v);
                held_.push_back(never);
            }
            if (initial) held_[S + local(msgs_.origin(m))] = 0;
            if (residence) {
                first_arrival.assign(nodes.size(), never);
                last_send.assign(nodes.size(), 0);
            }
            for (std::uint32_t k = lo; k < hi; ++k) {
                const std::uint32_t i = by_msg[k].index;
                const Channel& ch = topo_.channel(by_msg[k].channel);
                const std::uint32_t a = local(ch.from), z = local(ch.to);
                slots_[i] = {static_cast<std::uint32_t>(S + a), static_cast<std::uint32_t>(S + z)};
                if (residence) {
                    first_arrival[z] = std::min(first_arrival[z], tr_[i].step);
                    last_send[a] = std::max(last_send[a], tr_[i].step);
                }
            }
            if (residence)
                for (std::size_t j = 0; j < nodes.size(); ++j)
                    if (!processor(nodes[j]) && first_arrival[j] != never && last_send[j] >= first_arrival[j] + 2) {
                        events_.push_back({first_arrival[j], nodes[j] - P_, +1});
                        events_.push_back({last_send[j] - 1, nodes[j] - P_, -1});
                    }
            S += nodes.size();
            if (S >= never) throw InputError(fmt::format("the table touches more than {} (node, message) pairs; too large to simulate", never - 1));
        }
        slot_begin_[U] = static_cast<std::uint32_t>(S);
        std::sort(events_.begin(), events_.end(), [](const QueueEvent& x, const QueueEvent& y) {
            return std::tie(x.boundary, x.router, x.delta) < std::tie(y.boundary, y.router, y.delta);
        });
    }

    /// combine=routers (docs/semantics.md, "Reductions"), this witness's own reading: router u
    /// sends the partial of transfer i without a copy of it. Its inputs are the partials of the
    /// same chunk that u has copies of and that lie inside it; when their contributor sets are
    /// pairwise disjoint and cover it exactly, one copy of each is taken (they leave the router's
    /// queue now) and the send is legal.
    bool combine_at_router(std::size_t i, std::uint32_t u) {
        if (!have_) return false;
        auto px = partial_of(msgs_, tr_[i].message);
        if (!px) return false;
        auto list = router_partials_.find((std::uint64_t{u} << 32) | px->chunk);
        if (list == router_partials_.end()) return false;
        std::vector<std::uint32_t> cover(px->sources.size(), 0);  // per source of X: inputs that hold it
        std::vector<std::uint32_t> inputs;
        for (const auto& [slot, sources] : list->second) {
            if (stock_[slot] == 0) continue;
            bool inside = true;
            for (std::uint32_t src : sources) {
                auto at = std::lower_bound(px->sources.begin(), px->sources.end(), src);
                inside = inside && at != px->sources.end() && *at == src;
            }
            if (!inside) continue;
            inputs.push_back(slot);
            for (std::uint32_t src : sources) ++cover[std::lower_bound(px->sources.begin(), px->sources.end(), src) - px->sources.begin()];
        }
        if (inputs.empty() || std::any_of(cover.begin(), cover.end(), [](std::uint32_t c) { return c != 1; })) return false;
        for (std::uint32_t slot : inputs) {
            --stock_[slot];
            --waiting_[u - P_];
        }
        touch_router(u - P_);
        return true;
    }

    void allocate_state() {
        const std::size_t S = slot_node_.size();
        if (model_.combine_routers && have_) {  // per (router, chunk): the router slots of partials
            std::unordered_set<std::uint32_t> seen;
            for (std::size_t i = 0; i < tr_.size(); ++i) {
                const std::uint32_t v = idx(channel_of(i).to);
                if (processor(v) || !seen.insert(slots_[i].dst).second) continue;
                if (auto pv = partial_of(msgs_, tr_[i].message))
                    router_partials_[(std::uint64_t{v} << 32) | pv->chunk].emplace_back(slots_[i].dst, pv->sources);
            }
        }
        if (!replicate_) stock_.assign(S, 0);
        if (replicate_ && queues_none() && !wormhole_) last_arrival_.assign(S, never);
        waiting_.assign(R_, 0);
        touch_gen_.assign(R_, 0);
        rep_.router_high_water.assign(R_, 0);
        port_stamp_.assign(P_, 0);
        sends_.assign(P_, 0);
        recvs_.assign(P_, 0);
        recv_stamp_.assign(P_, 0);
        recv_steps_.assign(P_, 0);
        rep_.channel_transfers.assign(topo_.channels().size(), 0);
    }

    // ---- the step loop -------------------------------------------------------------------

    void touch_router(std::uint32_t r) {
        if (touch_gen_[r] != gen_) {
            touch_gen_[r] = gen_;
            touched_.push_back(r);
        }
    }

    void count_port(std::uint32_t v, Step s, bool send, StepFaults& f) {
        if (port_stamp_[v] != s) {
            port_stamp_[v] = s;
            sends_[v] = recvs_[v] = 0;
        }
        ++(send ? sends_[v] : recvs_[v]);
        bool over = model_.ports == Ports::half ? sends_[v] + recvs_[v] > r_ : sends_[v] > r_ || recvs_[v] > r_;
        if (over) f.ports = std::min(f.ports, v);
    }

    // Phase 1 of step s: checks capacity and ports for [b, e) and, under `hop` timing, whether each
    // sender has the message at the end of step s-1. Router departures (replicate=no) take a copy
    // from the router's stock and its waiting count here; arrivals of step s are applied only in
    // commit(), so nothing received in step s can be sent on in step s.
    StepFaults check_step(std::size_t b, std::size_t e, Step s) {
        StepFaults f;
        const bool ports = model_.ports != Ports::multi, none_sends = replicate_ && queues_none();
        r_ = table_.rounds(s);  // a step of r rounds: r times every capacity and port limit
        const auto& groups = topo_.groups();
        if (!groups.empty()) group_load_.assign(groups.size(), 0);
        std::size_t run = b;
        for (std::size_t i = b; i < e; ++i) {
            const Channel& ch = channel_of(i);
            if (i + 1 == e || tr_[i + 1].channel != tr_[i].channel) {
                if (i + 1 - run > std::uint64_t{ch.cap} * r_ && f.capacity == no_index) f.capacity = run;
                run = i + 1;
            }
            if (!groups.empty())
                for (std::uint32_t g : topo_.groups_of(tr_[i].channel))
                    if (++group_load_[g] > std::uint64_t{groups[g].cap} * r_) f.group = std::min(f.group, g);
            const std::uint32_t u = idx(ch.from), v = idx(ch.to);
            if (ports) {
                if (processor(u)) count_port(u, s, true, f);
                if (processor(v)) count_port(v, s, false, f);
            }
            if (model_.inject_once && f.injection == no_index) {
                const MessageId m = tr_[i].message;
                if (table_.collective.initial(msgs_, m)) {
                    const Node o = msgs_.origin(m);
                    if (o != Node{u}) {  // every other transfer moves the datum away from its source
                        if (topo_.distance(o, Node{v}) != topo_.distance(o, Node{u}) + 1) f.injection = i;
                    } else if (!injected_.try_emplace(idx(m), s, tr_[i].channel).second) {
                        f.injection = i;
                    }
                }
            }
            if (wormhole_) continue;
            const std::uint32_t src = slots_[i].src;
            if (have_ && processor(u)) {
                if (!have_->holds(u, tr_[i].message) && f.causality == no_index) f.causality = i;
            } else if (processor(u) || replicate_) {
                if (held_[src] >= s) {
                    if (f.causality == no_index) f.causality = i;
                } else if (none_sends && !processor(u) && last_arrival_[src] != s - 1 && f.queue_send == no_index) {
                    f.queue_send = i;
                }
            } else if (stock_[src] > 0) {
                --stock_[src];
                --waiting_[u - P_];
                touch_router(u - P_);
            } else if (model_.combine_routers && combine_at_router(i, u)) {
                // in-network reduction: the inputs' copies were taken from the router's stock
            } else {
                if (f.causality == no_index) f.causality = i;
                // A queue bound counts every departure, matched to a copy or not (docs/semantics.md):
                // the count is A_r(<= b) - D_r(<= b+1) over the table's transfers.
                if (model_.queues == QueueKind::bounded) {
                    --waiting_[u - P_];
                    touch_router(u - P_);
                }
            }
        }
        return f;
    }

    // Phase 2 of step s: the transfers of [b, e) arrive; statistics and trace.
    void commit(std::size_t b, std::size_t e, Step s) {
        const bool track_last = !last_arrival_.empty();
        for (std::size_t i = b; i < e; ++i) {
            const std::uint32_t v = idx(channel_of(i).to);
            if (!wormhole_) {
                const std::uint32_t dst = slots_[i].dst;
                if (held_[dst] > s) held_[dst] = s;
                if (!processor(v)) {
                    if (!replicate_) {
                        ++stock_[dst];
                        ++waiting_[v - P_];
                        touch_router(v - P_);
                    }
                    if (track_last) last_arrival_[dst] = s;
                }
            }
            if (have_ && processor(v))
                if (auto twice = have_->receive(v, tr_[i].message); twice && !combine_fault_) {
                    SimViolation x;
                    x.rule = SimRule::causality;
                    x.step = s;
                    x.node = Node{v};
                    x.channel = tr_[i].channel;
                    x.messages = {tr_[i].message};
                    x.message = fmt::format("{} {}: {} receives {} on {} while its buffer holds {}", unit(), s, node_label(v),
                                            msgs_.name(tr_[i].message), channel_name(tr_[i].channel), *twice);
                    combine_fault_ = std::move(x);
                }
            if (processor(v) && recv_stamp_[v] != s) {
                recv_stamp_[v] = s;
                ++recv_steps_[v];
            }
            ++rep_.channel_transfers[idx(tr_[i].channel)];
        }
        rep_.transfers_replayed += e - b;
        if (options_.trace) trace_step(b, e, s);
    }

    // The waiting counts of the routers touched since the last boundary are final for `boundary`
    // (arrivals up to `boundary`, departures up to `boundary + 1`): fold them into the high-water
    // marks and check the queue rule. Routers not touched keep a count already checked.
    std::optional<SimViolation> check_boundary(Step boundary) {
        if (replicate_)
            for (; next_event_ < events_.size() && events_[next_event_].boundary <= boundary; ++next_event_) {
                waiting_[events_[next_event_].router] += events_[next_event_].delta;
                touch_router(events_[next_event_].router);
            }
        std::uint32_t bad = never;
        for (std::uint32_t r : touched_) {
            const std::int64_t w = waiting_[r];  // negative only after a departure without a copy (bounded queues)
            COLLSCHED_ASSERT(w >= 0 || model_.queues == QueueKind::bounded);
            rep_.router_high_water[r] = std::max(rep_.router_high_water[r], static_cast<std::uint32_t>(std::max<std::int64_t>(w, 0)));
            bool over = model_.queues == QueueKind::bounded ? w > model_.queue_bound
                                                            : model_.queues == QueueKind::none && !replicate_ && w > 0;
            if (over) bad = std::min(bad, r);
        }
        touched_.clear();
        ++gen_;
        if (bad == never) return std::nullopt;
        return queue_violation(boundary, bad);
    }

    bool halt(SimViolation v) {
        rep_.status = SimStatus::halted;
        // A bounded-queue violation is at the boundary after its step: steps 1..s are complete.
        rep_.simulated_steps = v.rule == SimRule::queues && model_.queues == QueueKind::bounded ? v.step : v.step - 1;
        rep_.violation = std::move(v);
        return false;
    }

    // `hop` timing. For every step that has transfers: the boundary after the previous step when
    // steps without transfers lie between (nothing leaves in them), phase 1, the boundary before
    // this step, then the first violation in the order boundary (bounded queues), capacity, ports,
    // causality/replication, queues=none; then phase 2.
    bool run_hop() {
        const std::size_t N = tr_.size();
        std::size_t b = 0;
        while (b < N) {
            const Step s = tr_[b].step;
            std::size_t e = b;
            while (e < N && tr_[e].step == s) ++e;
            if (!hop_step(b, e, s)) return false;
            b = e;
        }
        return hop_end();
    }

    /// Step s of a `hop` run: the transfers [b, e) of tr_. False when the run halts.
    bool hop_step(std::size_t b, std::size_t e, Step s) {
        if (prev_ != 0 && s > prev_ + 1)
            if (auto v = check_boundary(prev_)) return halt(std::move(*v));
        StepFaults f = check_step(b, e, s);
        std::optional<SimViolation> qv;
        if (s >= 2) qv = check_boundary(s - 1);
        if (qv && qv->step < s) return halt(std::move(*qv));
        if (f.capacity != no_index) return halt(capacity_violation(f.capacity, s));
        if (f.group != never) return halt(group_violation(f.group, b, e, s));
        if (f.ports != never) return halt(ports_violation(f.ports, b, e, s));
        if (f.causality != no_index) return halt(causality_violation(f.causality, s));
        if (f.injection != no_index) return halt(injection_violation(f.injection, s));
        if (qv) return halt(std::move(*qv));
        if (f.queue_send != no_index) return halt(queue_send_violation(f.queue_send, s));
        commit(b, e, s);
        if (combine_fault_) return halt(std::move(*combine_fault_));
        prev_ = s;
        return true;
    }

    /// After the last step of a `hop` run. queues=none: a copy that entered a router in the last
    /// step would have to leave in the step after it, which the table does not have.
    bool hop_end() {
        if (queues_none() && !replicate_ && prev_ != 0)
            if (auto v = check_boundary(prev_)) return halt(std::move(*v));
        return true;
    }

    // `wormhole` timing: within a round a message may travel a whole path. A transfer is legal
    // when its sender held the message at the end of the previous round or receives it in this
    // round through a legal transfer, so legality is a reachability fixpoint per round: the round's
    // transfers are ordered by source slot, every transfer whose source is ready fires, and each
    // slot that gains the message (or, for a replicate=no router, a copy) wakes the transfers
    // leaving it. Whatever never fires is the violation.
    bool run_wormhole() {
        const std::size_t N = tr_.size();
        std::size_t b = 0;
        while (b < N) {
            const Step r = tr_[b].step;
            std::size_t e = b;
            while (e < N && tr_[e].step == r) ++e;
            StepFaults f = check_step(b, e, r);
            if (f.capacity != no_index) return halt(capacity_violation(f.capacity, r));
            if (f.group != never) return halt(group_violation(f.group, b, e, r));
            if (f.ports != never) return halt(ports_violation(f.ports, b, e, r));
            if (f.injection != no_index) return halt(injection_violation(f.injection, r));
            std::size_t bad = propagate_round(b, e, r);
            if (bad != no_index) {
                SimViolation v = causality_violation(bad, r);
                for (std::uint32_t slot : round_gains_) held_[slot] = never;  // the round does not happen
                return halt(std::move(v));
            }
            commit(b, e, r);
            if (combine_fault_) return halt(std::move(*combine_fault_));
            // Routers do not store between rounds: a worm passes through within its round.
            for (std::size_t i = b; i < e; ++i) {
                const Channel& ch = channel_of(i);
                for (auto [slot, v] : {std::pair(slots_[i].src, idx(ch.from)), std::pair(slots_[i].dst, idx(ch.to))}) {
                    if (processor(v)) continue;
                    held_[slot] = never;
                    if (!replicate_) stock_[slot] = 0;
                }
            }
            b = e;
        }
        return true;
    }

    std::size_t propagate_round(std::size_t b, std::size_t e, Step r) {
        const auto n = static_cast<std::uint32_t>(e - b);
        order_.resize(n);
        std::iota(order_.begin(), order_.end(), 0u);
        std::sort(order_.begin(), order_.end(), [&](std::uint32_t x, std::uint32_t y) {
            return std::pair(slots_[b + x].src, x) < std::pair(slots_[b + y].src, y);
        });
        legal_.assign(n, 0);
        worklist_.clear();
        round_gains_.clear();
        auto attempt = [&](std::uint32_t k) {
            const std::size_t i = b + k;
            const std::uint32_t src = slots_[i].src;
            const Channel& ch = channel_of(i);
            if (have_ && processor(idx(ch.from))) {
                if (held_[src] != r && !have_->holds(idx(ch.from), tr_[i].message)) return;  // held before, or passing through
            } else {
                // A router's departure is legal once the router received the message in the round;
                // with replicate=no the copies are counted after the fixpoint (below), so which
                // departure takes which copy does not depend on the order they are tried in.
                if (held_[src] > r) return;
            }
            legal_[k] = 1;
            const std::uint32_t dst = slots_[i].dst;
            bool gained = false;
            if (!processor(idx(ch.to)) && !replicate_) {
                ++stock_[dst];
                gained = true;
            }
            if (held_[dst] > r) {
                held_[dst] = r;
                round_gains_.push_back(dst);
                gained = true;
            }
            if (gained) worklist_.push_back(dst);
        };
        for (std::uint32_t k : order_) attempt(k);
        while (!worklist_.empty()) {
            const std::uint32_t slot = worklist_.back();
            worklist_.pop_back();
            auto first = std::lower_bound(order_.begin(), order_.end(), slot,
                                          [&](std::uint32_t k, std::uint32_t x) { return slots_[b + k].src < x; });
            for (auto it = first; it != order_.end() && slots_[b + *it].src == slot; ++it)
                if (!legal_[*it]) attempt(*it);
        }
        // replicate=no: a router passes on at most as many copies of a message as it receives in
        // the round (docs/semantics.md). stock_ now holds the legal arrivals of each router slot;
        // the legal departures take them in table order, and the first one left without a copy
        // is the replication violation. It comes first: the hops downstream of an extra copy are
        // legal (the router did receive the message), as in the direct checker.
        if (!replicate_)
            for (std::uint32_t k = 0; k < n; ++k) {
                if (!legal_[k] || processor(idx(channel_of(b + k).from))) continue;
                const std::uint32_t src = slots_[b + k].src;
                if (stock_[src] == 0) return b + k;
                --stock_[src];
            }
        for (std::uint32_t k = 0; k < n; ++k)
            if (!legal_[k]) return b + k;
        return no_index;
    }

    void trace_step(std::size_t b, std::size_t e, Step s) {
        std::string line = fmt::format("{} {}:", unit(), s);
        for (std::size_t i = b; i < e; ++i) {
            const Channel& ch = channel_of(i);
            line += fmt::format("{} {}->{} {}", i == b ? "" : ",", names_[idx(ch.from)], names_[idx(ch.to)],
                                msgs_.name(tr_[i].message));
        }
        rep_.trace.push_back(std::move(line));
    }

    // ---- the messages of broken rules (error paths: plain scans are fine) -------------------

    std::string message_list(std::span<const MessageId> ms) const {
        std::string out;
        for (std::size_t i = 0; i < ms.size() && i < listed_in_message; ++i) out += fmt::format("{}{}", i ? ", " : "", msgs_.name(ms[i]));
        if (ms.size() > listed_in_message) out += fmt::format(", ... {} in all", ms.size());
        return out;
    }

    SimViolation capacity_violation(std::size_t run, Step s) const {
        SimViolation v;
        v.rule = SimRule::capacity;
        v.step = s;
        v.channel = tr_[run].channel;
        for (std::size_t i = run; i < tr_.size() && tr_[i].step == s && tr_[i].channel == tr_[run].channel; ++i)
            v.messages.push_back(tr_[i].message);
        v.message = fmt::format("{} {}: channel {} carries {} messages ({}) but its capacity is {}{}", unit(), s,
                                channel_name(*v.channel), v.messages.size(), message_list(v.messages),
                                topo_.channel(*v.channel).cap, rounds_text(topo_.channel(*v.channel).cap));
        return v;
    }

    /// " x 2 rounds = 4" in a step of more than one round.
    std::string rounds_text(std::uint64_t cap) const { return r_ > 1 ? fmt::format(" x {} rounds = {}", r_, cap * r_) : ""; }

    /// Link group g carries more than its capacity (times the rounds) in step s: a capacity violation naming the group.
    SimViolation group_violation(std::uint32_t g, std::size_t b, std::size_t e, Step s) const {
        const LinkGroup& lg = topo_.groups()[g];
        SimViolation v;
        v.rule = SimRule::capacity;
        v.step = s;
        v.group = g;
        for (std::size_t i = b; i < e; ++i) {
            auto in = topo_.groups_of(tr_[i].channel);
            if (std::find(in.begin(), in.end(), g) != in.end()) v.messages.push_back(tr_[i].message);
        }
        v.message = fmt::format("{} {}: group {} carries {} messages ({}) on its {} channels but its capacity is {}{}", unit(), s, lg.name,
                                v.messages.size(), message_list(v.messages), lg.channels.size(), lg.cap, rounds_text(lg.cap));
        return v;
    }

    SimViolation ports_violation(std::uint32_t p, std::size_t b, std::size_t e, Step s) const {
        SimViolation v;
        v.rule = SimRule::ports;
        v.step = s;
        v.node = Node{p};
        std::vector<std::string> sends, recvs;
        std::vector<MessageId> sm, rm;
        for (std::size_t i = b; i < e; ++i) {
            const Channel& ch = channel_of(i);
            std::string what = fmt::format("{} on {}", msgs_.name(tr_[i].message), channel_name(tr_[i].channel));
            if (idx(ch.from) == p) {
                sends.push_back(what);
                sm.push_back(tr_[i].message);
            }
            if (idx(ch.to) == p) {
                recvs.push_back(what);
                rm.push_back(tr_[i].message);
            }
        }
        auto join = [](const std::vector<std::string>& xs) {
            std::string out;
            for (std::size_t i = 0; i < xs.size() && i < listed_in_message; ++i) out += fmt::format("{}{}", i ? ", " : "", xs[i]);
            if (xs.size() > listed_in_message) out += ", ...";
            return out;
        };
        auto plural = [](std::size_t k) { return k == 1 ? "message" : "messages"; };
        if (model_.ports == Ports::half) {
            v.messages = sm;
            v.messages.insert(v.messages.end(), rm.begin(), rm.end());
            std::vector<std::string> all = sends;
            all.insert(all.end(), recvs.begin(), recvs.end());
            v.message = fmt::format("{} {}: processor {} sends {} and receives {} {} ({}) but ports=half allows one send or one "
                                    "receive per {}{}",
                                    unit(), s, topo_.node_name(Node{p}), sends.size(), recvs.size(), plural(recvs.size()),
                                    join(all), r_ > 1 ? "round" : unit(), r_ > 1 ? fmt::format(" ({} rounds in this step)", r_) : "");
        } else if (sends.size() > r_) {
            v.messages = sm;
            v.message = fmt::format("{} {}: processor {} sends {} messages ({}) but ports=single allows one send per {}{}", unit(),
                                    s, topo_.node_name(Node{p}), sends.size(), join(sends), r_ > 1 ? "round" : unit(),
                                    r_ > 1 ? fmt::format(" ({} rounds in this step)", r_) : "");
        } else {
            v.messages = rm;
            v.message = fmt::format("{} {}: processor {} receives {} messages ({}) but ports=single allows one receive per {}{}",
                                    unit(), s, topo_.node_name(Node{p}), recvs.size(), join(recvs), r_ > 1 ? "round" : unit(),
                                    r_ > 1 ? fmt::format(" ({} rounds in this step)", r_) : "");
        }
        return v;
    }

    SimViolation injection_violation(std::size_t i, Step s) const {
        const MessageId m = tr_[i].message;
        const Node u = channel_of(i).from;
        SimViolation v;
        v.rule = SimRule::replication;
        v.step = s;
        v.node = u;
        v.channel = tr_[i].channel;
        v.messages = {m};
        if (u != msgs_.origin(m)) {
            v.message = fmt::format("step {}: {} sends {} on {}, back toward its source {}; inject=once: a datum is injected once "
                                    "and only moves away from its source",
                                    s, topo_.node_name(u), msgs_.name(m), channel_name(tr_[i].channel),
                                    topo_.node_name(msgs_.origin(m)));
            return v;
        }
        const auto& [step0, chan0] = injected_.at(idx(m));
        v.message = fmt::format("step {}: processor {} injects {} again on {} (first in step {} on {}); inject=once: each source "
                                "injects its datum exactly once",
                                s, topo_.node_name(u), msgs_.name(m), channel_name(tr_[i].channel), step0, channel_name(chan0));
        return v;
    }

    SimViolation causality_violation(std::size_t i, Step s) const {
        const Channel& ch = channel_of(i);
        const std::uint32_t u = idx(ch.from);
        const MessageId m = tr_[i].message;
        const std::uint32_t src = slots_[i].src;
        SimViolation v;
        v.step = s;
        v.node = Node{u};
        v.channel = tr_[i].channel;
        v.messages = {m};
        const Step held_by = wormhole_ ? s : s - 1;
        if (!processor(u) && !replicate_ && held_[src] <= held_by && streamed_) {
            v.rule = SimRule::replication;
            v.message = fmt::format("step {}: router {} forwards {} on {} but has no copy left (replicate=no: a router forwards "
                                    "each copy it receives exactly once)",
                                    s, topo_.node_name(Node{u}), msgs_.name(m), channel_name(tr_[i].channel));
            return v;
        }
        if (wormhole_ && !processor(u) && !replicate_ && held_[src] <= held_by) {
            // The round's legal transfers (legal_ is indexed from the round's first transfer).
            std::size_t b = i;
            while (b > 0 && tr_[b - 1].step == s) --b;
            std::uint64_t arrived = 0, sent = 0;
            for (std::size_t j = b; j < tr_.size() && tr_[j].step == s; ++j) {
                if (tr_[j].message != m || !legal_[j - b]) continue;
                const Channel& c = channel_of(j);
                if (idx(c.to) == u) ++arrived;
                if (idx(c.from) == u) ++sent;
            }
            v.rule = SimRule::replication;
            v.message = fmt::format("round {}: router {} forwards {} on {} but has no copy left: it receives {} {} in round {} and "
                                    "forwards {} (replicate=no: a router passes on at most as many copies as it receives in the round)",
                                    s, topo_.node_name(Node{u}), msgs_.name(m), channel_name(tr_[i].channel), arrived,
                                    arrived == 1 ? "copy" : "copies", s, sent);
            return v;
        }
        if (!processor(u) && !replicate_ && held_[src] <= held_by) {
            std::uint64_t arrived = 0, sent = 0;
            for (std::size_t j = 0; j < tr_.size() && tr_[j].step <= s; ++j) {
                if (tr_[j].message != m) continue;
                const Channel& c = channel_of(j);
                if (idx(c.to) == u && tr_[j].step <= held_by) ++arrived;
                if (idx(c.from) == u) ++sent;
            }
            v.rule = SimRule::replication;
            v.message = fmt::format(
                "{} {}: router {} forwards {} on {} but has no copy left: it received {} {} by the end of {} {} and forwards {} "
                "by {} {} (replicate=no: a router forwards each copy it receives exactly once)",
                unit(), s, topo_.node_name(Node{u}), msgs_.name(m), channel_name(tr_[i].channel), arrived,
                arrived == 1 ? "copy" : "copies", unit(), held_by, sent, unit(), s);
            return v;
        }
        v.rule = SimRule::causality;
        if (have_ && processor(u)) {
            std::string why = have_->why_not(u, m);
            if (!why.empty()) {
                v.message = fmt::format("{} {}: {} sends {} on {} but at the end of {} {} it {}", unit(), s, node_label(u), msgs_.name(m),
                                        channel_name(tr_[i].channel), unit(), s - 1, why);
                return v;
            }
        }
        if (wormhole_) {
            v.message = fmt::format("round {}: {} sends {} on {} but neither holds it at the end of round {} nor receives it "
                                    "in round {} through a legal transfer",
                                    s, node_label(u), msgs_.name(m), channel_name(tr_[i].channel), s - 1, s);
            return v;
        }
        Step first = never;
        if (streamed_) {  // no table to look ahead in: what is known by now
            v.message = fmt::format("step {}: {} sends {} on {} but does not hold it at the end of step {} ({})", s, node_label(u),
                                    msgs_.name(m), channel_name(tr_[i].channel), s - 1,
                                    held_[src] == never ? std::string("it has not received it so far")
                                                        : fmt::format("it first receives it in step {}", held_[src]));
            return v;
        }
        for (std::size_t j = 0; j < tr_.size(); ++j)
            if (tr_[j].message == m && idx(channel_of(j).to) == u) {
                first = tr_[j].step;
                break;
            }
        std::string why = first == never ? "it never receives it"
                          : first == s   ? fmt::format("it receives it in step {}, and what arrives in a step cannot be sent on "
                                                       "in the same step", s)
                                         : fmt::format("it first receives it in step {}", first);
        v.message = fmt::format("step {}: {} sends {} on {} but does not hold it at the end of step {} ({})", s, node_label(u),
                                msgs_.name(m), channel_name(tr_[i].channel), s - 1, why);
        return v;
    }

    SimViolation queue_send_violation(std::size_t i, Step s) const {
        const std::uint32_t u = idx(channel_of(i).from);
        const MessageId m = tr_[i].message;
        SimViolation v;
        v.rule = SimRule::queues;
        v.step = s;
        v.node = Node{u};
        v.channel = tr_[i].channel;
        v.messages = {m};
        v.message = fmt::format(
            "step {}: router {} sends {} on {} but {} did not arrive at {} in step {} (it last arrived in step {}); with "
            "queues=none a router sends a message only in the step after it arrives",
            s, topo_.node_name(Node{u}), msgs_.name(m), channel_name(tr_[i].channel), msgs_.name(m),
            topo_.node_name(Node{u}), s - 1, last_arrival_[slots_[i].src]);
        return v;
    }

    // Names the copies (replicate=no) or messages (replicate=yes) waiting in router r at the
    // boundary after step `boundary`, recomputed from the table.
    SimViolation queue_violation(Step boundary, std::uint32_t r) const {
        const std::uint32_t node = P_ + r;
        std::map<std::uint32_t, std::int64_t> copies;                      // replicate=no: message -> balance
        std::map<std::uint32_t, std::pair<Step, Step>> residence;          // replicate=yes: first arrival, last send
        for (std::size_t j = 0; j < tr_.size(); ++j) {
            const Transfer& t = tr_[j];
            const Channel& ch = channel_of(j);
            if (!replicate_) {
                if (t.step > boundary + 1) break;
                if (idx(ch.to) == node && t.step <= boundary) ++copies[idx(t.message)];
                if (idx(ch.from) == node) --copies[idx(t.message)];
            } else {
                if (idx(ch.to) == node) residence.try_emplace(idx(t.message), t.step, 0);
                if (idx(ch.from) == node) {
                    auto it = residence.find(idx(t.message));
                    if (it != residence.end()) it->second.second = t.step;
                }
            }
        }
        if (streamed_) {  // only the current step is at hand: the waiting messages are not named
            copies.clear();
            residence.clear();
        }
        SimViolation v;
        v.rule = SimRule::queues;
        v.node = Node{node};
        for (auto [m, k] : copies)
            for (std::int64_t c = 0; c < k; ++c) v.messages.push_back(MessageId{m});
        for (auto [m, iv] : residence)
            if (iv.first <= boundary && iv.second >= boundary + 2) v.messages.push_back(MessageId{m});
        const std::int64_t w = waiting_[r];
        const std::string name = topo_.node_name(Node{node});
        if (model_.queues == QueueKind::bounded) {
            v.step = boundary;
            v.message = fmt::format(
                "step {}: after step {}, router {} has {} {} waiting ({}) but queues={} allows at most {} ({})", boundary,
                boundary, name, w, replicate_ ? (w == 1 ? "message" : "messages") : (w == 1 ? "copy" : "copies"),
                message_list(v.messages), model_.queue_bound, model_.queue_bound,
                replicate_ ? fmt::format("a message waits from its first arrival, by step {}, to its last send, in step {} or later",
                                         boundary, boundary + 2)
                           : fmt::format("a copy waits when it arrived by step {} and leaves in step {} or later, or never",
                                         boundary, boundary + 2));
        } else {
            v.step = boundary + 1;
            const bool last = boundary == rep_.steps;
            v.message = fmt::format(
                "step {}: {} entered router {} in step {} but {} (queues=none: a copy leaves a router in the step after it "
                "arrives)",
                boundary + 1, message_list(v.messages), name, boundary,
                last ? fmt::format("the table ends with step {}", boundary)
                     : fmt::format("{} not leave it in step {}", v.messages.size() == 1 ? "does" : "do", boundary + 1));
        }
        return v;
    }

    // ---- the end of the run ----------------------------------------------------------------

    bool holds(MessageId m, Node d) const {
        if (have_ && processor(idx(d))) return have_->holds(idx(d), m);
        if (streamed_) {
            const std::uint32_t slot = stream_find(idx(d), m);
            if (slot == never) return table_.collective.initial(msgs_, m) && msgs_.origin(m) == d;
            if (!processor(idx(d)) && !replicate_) return stock_[slot] > 0;
            return held_[slot] != never;
        }
        const std::uint32_t b = bucket(m);
        if (b == never || slot_begin_[b] == slot_begin_[b + 1])
            return table_.collective.initial(msgs_, m) && msgs_.origin(m) == d;
        auto first = slot_node_.begin() + slot_begin_[b], last = slot_node_.begin() + slot_begin_[b + 1];
        auto it = std::lower_bound(first, last, idx(d));
        if (it == last || *it != idx(d)) return false;
        const auto slot = static_cast<std::size_t>(it - slot_node_.begin());
        if (!processor(idx(d)) && !replicate_) return stock_[slot] > 0;
        return held_[slot] != never;
    }

    // Deliveries: every goal of the collective, then every requirement that is not one of them.
    void count_deliveries() {
        std::vector<Requirement> reqs = table_.requirements;
        auto key = [](const Requirement& x) { return std::pair(idx(x.message), idx(x.at)); };
        std::sort(reqs.begin(), reqs.end(), [&](const auto& x, const auto& y) { return key(x) < key(y); });
        reqs.erase(std::unique(reqs.begin(), reqs.end()), reqs.end());
        std::vector<std::uint8_t> is_goal(reqs.size(), 0);
        auto visit = [&](MessageId m, Node d) {
            ++rep_.deliveries_required;
            if (holds(m, d)) {
                ++rep_.deliveries_done;
            } else {
                ++rep_.missing_count;
                if (rep_.missing.size() < listed_missing) rep_.missing.push_back({m, d});
            }
        };
        table_.collective.for_each_goal(P_, [&](MessageId m, Node d) {
            if (!reqs.empty()) {
                Requirement r{m, d};
                auto it = std::lower_bound(reqs.begin(), reqs.end(), r, [&](const auto& x, const auto& y) { return key(x) < key(y); });
                if (it != reqs.end() && *it == r) is_goal[static_cast<std::size_t>(it - reqs.begin())] = 1;
            }
            visit(m, d);
        });
        for (std::size_t i = 0; i < reqs.size(); ++i)
            if (!is_goal[i]) visit(reqs[i].message, reqs[i].at);
        // reduce and prefix: the combined values a(lo..hi) (interned with the table's composites)
        if (!uses_partials(table_)) table_.collective.for_each_value_goal(P_, [&](std::uint32_t lo, std::uint32_t hi, Node d) {
            const Composites* reg = msgs_.composites();
            auto id = reg ? reg->find({MessageKind::combined, lo, hi, {}, {}}) : std::nullopt;
            COLLSCHED_ASSERT(id.has_value());  // SendTable::canonicalize_composites interns the goals
            visit(*id, d);
        });
        if (uses_partials(table_)) {
            table_.collective.for_each_partial_goal(P_, table_chunks(table_), [&](std::uint32_t c, std::uint32_t hi, Node d) {
                std::optional<MessageId> id = find_partial(msgs_, SourceSet::range(0, hi), c);
                COLLSCHED_ASSERT(id.has_value());  // SendTable::canonicalize_composites interns the goals
                visit(*id, d);
            });
        }
    }

    void finish(bool ran_through) {
        if (ran_through) rep_.simulated_steps = rep_.steps;
        const Step W = rep_.simulated_steps;
        rep_.holes.resize(P_);
        for (std::uint32_t p = 0; p < P_; ++p) {
            rep_.holes[p] = W - recv_steps_[p];
            rep_.total_holes += rep_.holes[p];
        }
        if (!wormhole_) {
            for (std::uint32_t r = 0; r < R_; ++r) {
                const std::uint32_t level = std::max<std::uint32_t>(1, topo_.level(Node{P_ + r}));
                if (rep_.level_high_water.size() < level) rep_.level_high_water.resize(level, 0);
                rep_.level_high_water[level - 1] = std::max(rep_.level_high_water[level - 1], rep_.router_high_water[r]);
                rep_.max_high_water = std::max(rep_.max_high_water, rep_.router_high_water[r]);
            }
        } else {
            rep_.router_high_water.clear();
        }
        std::vector<ChannelId> used;
        for (std::uint32_t c = 0; c < rep_.channel_transfers.size(); ++c)
            if (rep_.channel_transfers[c] > 0) used.push_back(ChannelId{c});
        // Busiest by transfers / cap, compared exactly by cross-multiplication (both factors are
        // below 2^32); ties to the lower id.
        auto busier = [&](ChannelId x, ChannelId y) {
            const std::uint64_t a = rep_.channel_transfers[idx(x)] * topo_.channel(y).cap;
            const std::uint64_t z = rep_.channel_transfers[idx(y)] * topo_.channel(x).cap;
            return a != z ? a > z : idx(x) < idx(y);
        };
        const std::size_t top = std::min(listed_busiest, used.size());
        std::partial_sort(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(top), used.end(), busier);
        rep_.busiest.assign(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(top));
        count_deliveries();
        if (!ran_through) {
            rep_.missing.clear();  // obvious after a halt; the report names the broken rule instead
            return;
        }
        if (rep_.missing_count == 0) {
            rep_.status = SimStatus::completed;
            return;
        }
        rep_.status = SimStatus::incomplete;
        SimViolation v;
        v.rule = SimRule::completeness;
        v.step = rep_.steps;
        v.node = rep_.missing.front().at;
        v.messages = {rep_.missing.front().message};
        const std::uint64_t more = rep_.missing_count - 1;
        v.message = fmt::format("{} {}: processor {} does not hold {} at the end of {} {}{}", unit(), rep_.steps,
                                topo_.node_name(rep_.missing.front().at), msgs_.name(rep_.missing.front().message), unit(),
                                rep_.steps,
                                more == 0 ? std::string() : fmt::format(" ({} more {} missing)", more, more == 1 ? "delivery is" : "deliveries are"));
        rep_.violation = std::move(v);
    }

    const SendTable& table_;
    std::uint32_t r_ = 1;                        ///< the rounds of the step being checked
    std::vector<std::uint64_t> group_load_;      ///< per link group: transfers in the step so far
    const Topology& topo_;
    const Model& model_;
    const Messages msgs_;
    const SimOptions options_;
    const std::uint32_t P_, R_;
    const bool wormhole_, replicate_;

    std::span<const Transfer> tr_;
    std::vector<Transfer> sorted_copy_;

    bool dense_ = true;
    std::vector<std::uint32_t> uniq_;        // sparse message space: the messages of the table, sorted
    std::vector<std::uint32_t> slot_begin_;  // per bucket: its first slot (bucket b: [begin[b], begin[b+1]))
    std::vector<std::uint32_t> slot_node_;   // per slot: its node; sorted within a bucket
    std::vector<SlotPair> slots_;  // per transfer: the sender's and the receiver's slot
    std::vector<std::uint32_t> held_, stock_, last_arrival_;  // per slot
    std::unordered_map<std::uint32_t, std::pair<Step, ChannelId>> injected_;  // inject=once: message -> first injection

    std::vector<std::int64_t> waiting_;  // per router: copies (or messages) waiting at the current boundary
    std::vector<std::uint32_t> touch_gen_, touched_;
    std::uint32_t gen_ = 1;
    std::vector<QueueEvent> events_;
    std::size_t next_event_ = 0;
    Step prev_ = 0;  // hop: the last step replayed

    bool streamed_ = false, halted_ = false;  // streaming
    FlatMap proc_map_;                         // processors beyond the dense slots: (message, node) -> slot
    std::vector<std::uint32_t> proc_node_;     // per dense processor slot 2m, 2m+1: its processor, or never
    std::uint32_t pool_base_ = 0;              // the first slot that is not a dense processor slot
    static constexpr std::uint64_t dense_processor_limit = std::uint64_t{1} << 25;  // messages: at most 768 MiB of dense slots
    std::size_t proc_end_ = 0;                 // processor slots are [0, proc_end_); the step's router slots follow
    std::vector<RouterRequest> requests_, request_buf_;  // the step's router endpoints, sorted by key
    std::vector<std::size_t> count_;                     // radix buckets
    std::vector<std::uint64_t> router_keys_;             // per router slot of the step: its key, increasing
    std::vector<RouterCopy> carry_;                      // the copies in flight after the last step, by key
    int message_bits_ = 32, radix_passes_ = 1, radix_digit_ = 11;

    std::vector<std::uint32_t> port_stamp_, sends_, recvs_;  // per processor, for the current step
    std::vector<std::uint32_t> recv_stamp_, recv_steps_;     // per processor: last step with a receive, steps with one

    std::vector<std::uint32_t> order_, worklist_, round_gains_;  // wormhole rounds
    std::optional<Holdings> have_;  // tables with composites or a combining collective
    std::optional<SimViolation> combine_fault_;  // partials: the first arrival that counts a contribution twice
    /// combine=routers: per (router << 32 | chunk), the router's slots of partials and their contributors
    std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>>> router_partials_;
    std::vector<std::uint8_t> legal_;

    std::vector<std::string> names_;  // node names, for the trace
    SimReport rep_;
};

std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
                else out += c;
        }
    }
    out += '"';
    return out;
}

/// Six decimals are plenty for a ratio and keep golden files stable.
double rounded(double x) { return std::round(x * 1e6) / 1e6; }

}  // namespace

SimReport simulate(const SendTable& table, const SimOptions& options) {
    COLLSCHED_ASSERT(table.topology != nullptr);
    // The streamed replay (router state by a step-to-step merge, docs/performance.md) over the
    // table's steps, which are in the order StepSorter gives a stream: its completed reports are
    // the whole-table replay's field for field (tests/tools/test_bench.cpp); anything else is
    // replayed again whole, for the full counterexample. Only when the table is dense enough that
    // the streamed processor slots (24 bytes per message of the message space) cost no more
    // than the whole-table slots (about 8 bytes per transfer).
    const std::uint64_t M = table.messages().size();
    if (std::string why = combine_problem(table.model); !why.empty()) throw InputError(why);
    if (!options.whole_table && !options.trace && table.model.timing == Timing::hop && !table.model.replicate &&
        !table.model.combine_routers &&
        !table.has_composites() && !table.collective.combines() && !table.transfers.empty() && 3 * M <= table.transfers.size()) {
        Simulator sim(table, options);
        sim.stream_begin();
        const auto& xs = table.transfers;
        bool going = true;
        for (std::size_t b = 0; b < xs.size() && going;) {
            std::size_t e = b;
            while (e < xs.size() && xs[e].step == xs[b].step) ++e;
            going = sim.stream_step(xs[b].step, std::span<const Transfer>(xs.data() + b, e - b));
            b = e;
        }
        if (going) {
            SimReport r = sim.stream_finish();
            if (r.status == SimStatus::completed) return r;
        }
    }
    return Simulator(table, options).run();
}

struct StreamSimulator::Impl {
    SimOptions options;
    SendTable header;
    std::optional<Simulator> sim;
    SimReport report;
};

StreamSimulator::StreamSimulator(const SimOptions& options) : impl_(std::make_unique<Impl>()) { impl_->options = options; }
StreamSimulator::~StreamSimulator() = default;

void StreamSimulator::begin(const SendTable& header) {
    COLLSCHED_ASSERT(header.topology != nullptr && !impl_->sim);
    if (header.model.timing == Timing::wormhole) throw NotStreamable("wormhole timing is not streamed");
    if (header.model.replicate)
        throw NotStreamable("with replicate=yes a message occupies a router from its first arrival to its last send, "
                            "which needs the whole table");
    if (header.collective.combines())
        throw NotStreamable("combined values (reduce, prefix) are not streamed");
    if (header.model.combine_routers) throw NotStreamable("in-network reduction (combine=routers) is not streamed");
    impl_->header = header;
    impl_->sim.emplace(impl_->header, impl_->options);
    impl_->sim->stream_begin();
}

void StreamSimulator::step(Step s, std::span<const Transfer> transfers) { impl_->sim->stream_step(s, transfers); }

void StreamSimulator::rounds(Step s, std::uint32_t r) {
    // the replay reads the rounds of a step from the header when it checks the step (capacity,
    // ports and groups times r), so a step's rounds must be known before it is handed over
    COLLSCHED_ASSERT(s >= 1 && r >= 1);
    auto& v = impl_->header.step_rounds;
    if (v.size() < s) v.resize(s, 1);
    v[s - 1] = r;
}

void StreamSimulator::finish(const SendTable& header) {
    if (!impl_->sim) begin(header);  // a table without transfers
    impl_->header.requirements = header.requirements;
    impl_->header.claims = header.claims;
    impl_->header.extra_fields = header.extra_fields;
    impl_->header.step_rounds = header.step_rounds;  // the same rounds, told step by step while streaming
    impl_->report = impl_->sim->stream_finish();
    impl_->sim.reset();
}

const SimReport& StreamSimulator::report() const { return impl_->report; }
const SendTable& StreamSimulator::header() const { return impl_->header; }

std::optional<SimReport> stream_simulate_text(std::string_view text, const std::string& name, const CompileOptions& options,
                                             Diagnostics& diags, const SimOptions& sim) {
    StreamSimulator consumer(sim);
    if (!compile_stream(text, name, options, diags, consumer)) return std::nullopt;
    return consumer.report();
}

std::string format_sim_report(const SimReport& r, const SendTable& t) {
    const Topology& topo = *t.topology;
    const Messages ms = t.messages();
    auto unit_of = [&](std::uint64_t k) {
        return std::string(r.wormhole ? "round" : "step") + (k == 1 ? "" : "s");
    };
    auto chan = [&](ChannelId c) {
        const Channel& ch = topo.channel(c);
        return fmt::format("{}->{}", topo.node_name(ch.from), topo.node_name(ch.to));
    };
    std::string out;
    for (const std::string& line : r.trace) out += line + '\n';
    out += fmt::format("simulate {}: {}, {}\n", topo.spec(), t.collective.to_string(), to_string(t.model));
    switch (r.status) {
        case SimStatus::completed:
            out += fmt::format("status: completed in {} {} ({})\n", r.steps, unit_of(r.steps), support::count_of(r.transfers, "transfer"));
            break;
        case SimStatus::halted:
            out += fmt::format("status: halted on rule '{}' after {} of {} {}\n  {}\n", to_string(r.violation->rule),
                               r.simulated_steps, r.steps, unit_of(r.steps), r.violation->message);
            break;
        case SimStatus::incomplete:
            out += fmt::format("status: incomplete after {} {} ({})\n  {}\n", r.steps, unit_of(r.steps), support::count_of(r.transfers, "transfer"),
                               r.violation->message);
            break;
    }
    if (r.wormhole) {
        std::string how = cost_breakdown(t);  // bundles: payloads differ from round to round
        out += how.empty() ? fmt::format("cost: {} rounds x (ts + tc) = {}\n", r.steps, r.cost) : fmt::format("cost: {} = {}\n", how, r.cost);
    }
    out += fmt::format("deliveries: {} of {}", r.deliveries_done, r.deliveries_required);
    if (!r.missing.empty()) {
        out += "; missing ";
        for (std::size_t i = 0; i < r.missing.size() && i < 4; ++i)
            out += fmt::format("{}{} at {}", i ? ", " : "", ms.name(r.missing[i].message), topo.node_name(r.missing[i].at));
        if (r.missing_count > 4) out += fmt::format(", ... ({} in all)", r.missing_count);
    }
    out += '\n';
    std::uint64_t used = 0, moved = 0, capacity = 0;
    for (std::size_t c = 0; c < r.channel_transfers.size(); ++c) {
        used += r.channel_transfers[c] > 0;
        moved += r.channel_transfers[c];
        capacity += topo.channels()[c].cap;
    }
    const double mean = r.simulated_steps == 0 || capacity == 0
                            ? 0.0
                            : static_cast<double>(moved) / (static_cast<double>(capacity) * r.simulated_steps);
    out += fmt::format("channels: {} of {} used over {} {}, mean utilization {:.3f}\n", used, r.channel_transfers.size(),
                       r.simulated_steps, unit_of(r.simulated_steps), mean);
    if (!r.busiest.empty()) {
        out += "busiest:";
        for (std::size_t i = 0; i < r.busiest.size(); ++i)
            out += fmt::format("{} {} {:.3f} ({})", i ? "," : "", chan(r.busiest[i]), r.utilization(t, r.busiest[i]),
                               r.channel_transfers[idx(r.busiest[i])]);
        out += '\n';
    }
    if (!r.queues_apply) {
        out += "queues: do not apply (wormhole timing)\n";
    } else if (topo.routers() > 0) {
        out += fmt::format("queue high-water: max {}", r.max_high_water);
        if (r.level_high_water.size() > 1) {
            out += " (";
            for (std::size_t l = 0; l < r.level_high_water.size(); ++l)
                out += fmt::format("{}level {}: {}", l ? ", " : "", l + 1, r.level_high_water[l]);
            out += ")";
        }
        out += '\n';
    }
    if (!r.holes.empty()) {
        auto most = std::max_element(r.holes.begin(), r.holes.end());
        out += fmt::format("holes: {} idle receive {} in all; most at processor {} ({} of {})\n", r.total_holes, unit_of(r.total_holes),
                           topo.node_name(Node{static_cast<std::uint32_t>(most - r.holes.begin())}), *most, r.simulated_steps);
    }
    return out;
}

std::string sim_report_to_json(const SimReport& r, const SendTable& t) {
    const Topology& topo = *t.topology;
    const Messages ms = t.messages();
    fmt::memory_buffer b;
    auto it = std::back_inserter(b);
    auto channel_obj = [&](ChannelId c) {
        const Channel& ch = topo.channel(c);
        fmt::format_to(it, "{{\"from\": {}, \"to\": {}, \"cap\": {}, \"transfers\": {}, \"utilization\": {}}}",
                       json_escape(topo.node_name(ch.from)), json_escape(topo.node_name(ch.to)), ch.cap,
                       r.channel_transfers[idx(c)], rounded(r.utilization(t, c)));
    };
    fmt::format_to(it, "{{\"status\": \"{}\", \"rule\": ", to_string(r.status));
    if (r.violation) fmt::format_to(it, "\"{}\"", to_string(r.violation->rule));
    else fmt::format_to(it, "null");
    fmt::format_to(it, ", \"steps\": {}, \"simulated_steps\": {}, \"timing\": \"{}\", \"cost\": {}, \"transfers\": {}", r.steps,
                   r.simulated_steps, r.wormhole ? "wormhole" : "hop", r.cost, r.transfers);
    fmt::format_to(it, ", \"deliveries\": {{\"done\": {}, \"required\": {}}}", r.deliveries_done, r.deliveries_required);
    fmt::format_to(it, ", \"halt\": ");
    if (r.status == SimStatus::halted) {
        const SimViolation& v = *r.violation;
        fmt::format_to(it, "{{\"rule\": \"{}\", \"step\": {}, \"message\": {}, \"node\": ", to_string(v.rule), v.step,
                       json_escape(v.message));
        if (v.node) fmt::format_to(it, "{}", json_escape(topo.node_name(*v.node)));
        else fmt::format_to(it, "null");
        fmt::format_to(it, ", \"channel\": ");
        if (v.channel) {
            const Channel& ch = topo.channel(*v.channel);
            fmt::format_to(it, "{{\"from\": {}, \"to\": {}}}", json_escape(topo.node_name(ch.from)), json_escape(topo.node_name(ch.to)));
        } else {
            fmt::format_to(it, "null");
        }
        if (v.group) fmt::format_to(it, ", \"group\": {}", json_escape(topo.groups()[*v.group].name));
        fmt::format_to(it, ", \"messages\": [");
        for (std::size_t i = 0; i < v.messages.size(); ++i) fmt::format_to(it, "{}\"{}\"", i ? ", " : "", ms.name(v.messages[i]));
        fmt::format_to(it, "]}}");
    } else {
        fmt::format_to(it, "null");
    }
    fmt::format_to(it, ", \"missing\": [");
    for (std::size_t i = 0; i < r.missing.size(); ++i)
        fmt::format_to(it, "{}{{\"message\": \"{}\", \"at\": {}}}", i ? ", " : "", ms.name(r.missing[i].message),
                       json_escape(topo.node_name(r.missing[i].at)));
    fmt::format_to(it, "], \"queue_high_water\": ");
    if (r.queues_apply) {
        fmt::format_to(it, "{{\"max\": {}, \"per_level\": {{", r.max_high_water);
        for (std::size_t l = 0; l < r.level_high_water.size(); ++l)
            fmt::format_to(it, "{}\"{}\": {}", l ? ", " : "", l + 1, r.level_high_water[l]);
        fmt::format_to(it, "}}, \"per_router\": {{");
        for (std::size_t i = 0; i < r.router_high_water.size(); ++i)
            fmt::format_to(it, "{}{}: {}", i ? ", " : "", json_escape(topo.node_name(Node{topo.processors() + static_cast<std::uint32_t>(i)})),
                           r.router_high_water[i]);
        fmt::format_to(it, "}}}}");
    } else {
        fmt::format_to(it, "null");
    }
    fmt::format_to(it, ", \"holes\": {{\"total\": {}, \"per_processor\": [", r.total_holes);
    for (std::size_t p = 0; p < r.holes.size(); ++p) fmt::format_to(it, "{}{}", p ? ", " : "", r.holes[p]);
    fmt::format_to(it, "]}}, \"busiest\": [");
    for (std::size_t i = 0; i < r.busiest.size(); ++i) {
        if (i) fmt::format_to(it, ", ");
        channel_obj(r.busiest[i]);
    }
    fmt::format_to(it, "], \"channels\": [");
    for (std::uint32_t c = 0; c < r.channel_transfers.size(); ++c) {
        if (c) fmt::format_to(it, ", ");
        channel_obj(ChannelId{c});
    }
    fmt::format_to(it, "]");
    if (!r.trace.empty()) {
        fmt::format_to(it, ", \"trace\": [");
        for (std::size_t i = 0; i < r.trace.size(); ++i) fmt::format_to(it, "{}{}", i ? ", " : "", json_escape(r.trace[i]));
        fmt::format_to(it, "]");
    }
    fmt::format_to(it, "}}\n");
    return fmt::to_string(b);
}

}  // namespace collsched
