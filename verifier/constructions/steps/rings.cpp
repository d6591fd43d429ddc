// Rings (docs/synthesis.md, "Known schedules", rings): k Hamiltonian cycles that the machine
// can run at once, one chunk per ring channel and step, and on them NCCL's ring
// algorithms: allgather (each ring forwards one chunk per step), reduce-scatter (a chunk's
// partial travels P-1 hops to its owner, combining on the way) and allreduce (reduce-scatter,
// then the complete chunk travels P-1 hops more). Where the rings use every processor's per-step
// limit they meet the receptions bound (allgather, C a multiple of k) and the transfers bound
// (allreduce, C a multiple of kP): proved optima without a solver. Every table returned holds in
// the direct checker.
//
// The search (moved from docs/synthesis.md, "Rings run at once"): each cycle is found in what the
// earlier ones leave (channels, link groups, single ports) by depth-first search from processor 0
// (20,000 moves; odd seeds alternate link kinds, NVSwitch, NIC, ..., even seeds keep NCCL's shape; then
// fewest onward choices), each ring's reverse added where every reverse channel is left; the best of
// 64 seeded attempts (5 s).
#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "verifier/synth/problem/network.hpp"
#include "verifier/synth/problem/internal.hpp"

namespace collsched {

namespace {

/// The search for k rings over what the machine has left per step: channel capacities, link
/// groups' capacities and, under single ports, one send and one receive per processor. A ring is
/// grown by depth-first search from processor 0, the next processor the one with the fewest
/// onward choices (Warnsdorff's rule, ties by a seeded shuffle), with a budget of steps per
/// attempt; the rings are taken one after the other, and a failed set is tried again with
/// another seed until the deadline.
class RingSearch {
public:
    RingSearch(const Topology& t, Ports ports, Clock::time_point deadline) : t_(t), ports_(ports), deadline_(deadline) {
        senders_.resize(t.groups().size());
        for (std::size_t g = 0; g < senders_.size(); ++g) {
            for (ChannelId c : t.groups()[g].channels) senders_[g].push_back(idx(t.channel(c).from));
            std::sort(senders_[g].begin(), senders_[g].end());
        }
    }

    /// As many rings as one attempt can take, up to `most` (each a cycle of processors, as
    /// channels in cycle order): the best of 16 seeded attempts, the odd ones alternating link
    /// kinds, the even ones keeping to one kind while they can (NCCL's shape: through a box on
    /// NVSwitch, then a NIC to the next box; where NVSwitch has many times a NIC's ports, more
    /// rings fit that way).
    std::vector<std::vector<ChannelId>> find(std::uint32_t most) {
        std::vector<std::vector<ChannelId>> best;
        for (std::uint32_t seed = 1; seed <= 64 && best.size() < most && Clock::now() < deadline_; ++seed) {
            reset();
            rng_.seed(seed);
            alternate_ = seed % 2 == 1;
            std::vector<std::vector<ChannelId>> rings;
            while (rings.size() < most) {
                std::vector<ChannelId> ring = one_ring();
                if (ring.empty()) break;
                for (ChannelId c : ring) take(c, -1);
                rings.push_back(std::move(ring));
                if (rings.size() < most)
                    if (std::vector<ChannelId> back = reversed(rings.back()); !back.empty()) rings.push_back(std::move(back));
            }
            if (rings.size() > best.size()) best = std::move(rings);
        }
        return best;
    }

private:
    void reset() {
        chan_left_.assign(t_.channels().size(), 0);
        for (std::size_t c = 0; c < chan_left_.size(); ++c) chan_left_[c] = t_.channels()[c].cap;
        group_left_.assign(t_.groups().size(), 0);
        for (std::size_t g = 0; g < group_left_.size(); ++g) group_left_[g] = t_.groups()[g].cap;
        const std::int64_t port = ports_ == Ports::single ? 1 : std::numeric_limits<std::int32_t>::max();
        send_left_.assign(t_.processors(), port);
        recv_left_.assign(t_.processors(), port);
    }

    bool usable(ChannelId c) const {
        const Channel& ch = t_.channel(c);
        if (chan_left_[idx(c)] <= 0 || send_left_[idx(ch.from)] <= 0 || recv_left_[idx(ch.to)] <= 0) return false;
        for (std::uint32_t g : t_.groups_of(c))
            if (group_left_[g] <= 0) return false;
        return true;
    }

    /// Uses (d = -1) or frees (d = +1) one unit of channel c.
    void take(ChannelId c, std::int64_t d) {
        const Channel& ch = t_.channel(c);
        chan_left_[idx(c)] += d;
        send_left_[idx(ch.from)] += d;
        recv_left_[idx(ch.to)] += d;
        for (std::uint32_t g : t_.groups_of(c)) group_left_[g] += d;
    }

    /// The ring run the other way, taken, where every reverse channel is left (a bidirectional
    /// machine: the reverse of an alternating ring is the complement it leaves, NVSwitch where the
    /// first took the NIC; on a torus the two use one undirected Hamiltonian cycle); else empty.
    std::vector<ChannelId> reversed(const std::vector<ChannelId>& ring) {
        std::vector<ChannelId> back;
        for (std::size_t i = ring.size(); i-- > 0;) {
            const Channel& ch = t_.channel(ring[i]);
            std::optional<ChannelId> c = t_.find_channel(ch.to, ch.from);
            if (!c || !usable(*c)) {
                for (ChannelId x : back) take(x, +1);
                return {};
            }
            take(*c, -1);
            back.push_back(*c);
        }
        return back;  // from processor 0 (the reverse of the closing channel) round the cycle backwards
    }

    /// Whether leaving over c continues the kind of link the ring arrived on (`via`): c's target
    /// could have sent into the same link group of c's sender as `via` did (an NVSwitch hop after
    /// an NVSwitch hop, a NIC after a NIC). Rings that alternate kinds leave the machine's other
    /// ports to the next ring in the same alternating shape (two boxes of 8 on NVSwitch and NICs:
    /// intra, NIC, intra, ...; the other ring the complement).
    bool same_kind(std::optional<ChannelId> via, ChannelId c) const {
        if (!via) return false;
        const std::uint32_t w = idx(t_.channel(c).to);
        for (std::uint32_t g : t_.groups_of(*via))
            if (std::binary_search(senders_[g].begin(), senders_[g].end(), w)) return true;
        return false;
    }

    /// Onward choices from v to processors not yet on the ring, counted up to `enough`.
    std::uint32_t onward(Node v, const std::vector<char>& on_ring, std::uint32_t enough) const {
        std::uint32_t n = 0;
        for (ChannelId c : t_.out_channels(v))
            if (!on_ring[idx(t_.channel(c).to)] && usable(c) && ++n >= enough) break;
        return n;
    }

    std::vector<ChannelId> one_ring() {
        const std::uint32_t P = t_.processors();
        std::vector<char> on_ring(P, 0);
        struct Frame {
            std::vector<ChannelId> choices;  // best last
        };
        std::vector<Frame> stack;
        std::vector<ChannelId> path;
        auto expand = [&](Node u, std::optional<ChannelId> via) {
            Frame f;
            std::vector<std::pair<std::uint32_t, ChannelId>> next;
            for (ChannelId c : t_.out_channels(u)) {
                const Node v = t_.channel(c).to;
                if (!t_.is_processor(v) || on_ring[idx(v)] || !usable(c)) continue;
                const bool same = same_kind(via, c);
                if (alternate_ && same) continue;  // alternating attempts alternate strictly
                next.push_back({(same ? 0u : 1u << 20) + onward(v, on_ring, 16), c});
            }
            std::shuffle(next.begin(), next.end(), rng_);
            std::stable_sort(next.begin(), next.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
            for (auto& [deg, c] : next) f.choices.push_back(c);
            return f;
        };
        on_ring[0] = 1;
        stack.push_back(expand(Node{0}, std::nullopt));
        std::uint64_t budget = 20000;
        while (!stack.empty()) {
            if (--budget == 0 || (budget % 1024 == 0 && Clock::now() >= deadline_)) break;
            Frame& top = stack.back();
            if (path.size() == P - 1) {  // close the cycle back to processor 0
                for (ChannelId c : t_.out_channels(t_.channel(path.back()).to))
                    if (idx(t_.channel(c).to) == 0 && usable(c) &&
                        !(alternate_ && (same_kind(path.back(), c) || same_kind(c, path.front())))) {
                        for (ChannelId x : path) take(x, +1);
                        path.push_back(c);
                        return path;
                    }
            }
            if (top.choices.empty() || path.size() == P - 1) {  // back up
                if (path.empty()) break;
                const ChannelId c = path.back();
                path.pop_back();
                take(c, +1);
                on_ring[idx(t_.channel(c).to)] = 0;
                stack.pop_back();
                continue;
            }
            const ChannelId c = top.choices.back();
            top.choices.pop_back();
            if (!usable(c)) continue;
            take(c, -1);
            path.push_back(c);
            const Node v = t_.channel(c).to;
            on_ring[idx(v)] = 1;
            stack.push_back(expand(v, c));
        }
        for (ChannelId c : path) take(c, +1);
        return {};
    }

    const Topology& t_;
    Ports ports_;
    Clock::time_point deadline_;
    std::mt19937 rng_;
    bool alternate_ = true;  // prefer the other link kind than the arrival's (else the same)
    std::vector<std::vector<std::uint32_t>> senders_;  // per link group: the processors its channels leave
    std::vector<std::int64_t> chan_left_, group_left_, send_left_, recv_left_;
};

/// The least per-step limit of any processor, in and out: the most rings that can all use it;
/// nullopt once the deadline passes.
std::optional<std::uint32_t> ring_target(const Topology& t, Ports ports, Clock::time_point deadline) {
    std::uint64_t k = std::numeric_limits<std::uint64_t>::max();
    for (std::uint32_t p = 0; p < t.processors(); ++p) {
        if (p % 64 == 0 && Clock::now() >= deadline) return std::nullopt;
        k = std::min(k, synth::step_capacity(t, ports, t.in_channels(Node{p})).hops);
        k = std::min(k, synth::step_capacity(t, ports, t.out_channels(Node{p})).hops);
    }
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(k, 64));
}

/// The schedules on the rings. Ring r is v_0 -> v_1 -> ... -> v_{P-1} -> v_0 with channel i out
/// of v_i; a batch of a ring starts in step `at`.
class RingSchedules {
public:
    RingSchedules(const SynthInstance& in, std::vector<std::vector<ChannelId>> rings, Clock::time_point deadline)
        : in_(in), t_(*in.topology), P_(t_.processors()), rings_(std::move(rings)), deadline_(deadline),
          b_(in.topology, in.model, in.collective) {}

    /// The table; nullopt when the deadline passes first (checked every step of every batch:
    /// a reduce-scatter on 1,024 GPUs is a million partials).
    std::optional<SendTable> build() {
        try {
            switch (in_.collective.kind) {
            case CollectiveKind::allgather: allgather(); break;
            case CollectiveKind::allreduce: reductions(true); break;
            case CollectiveKind::reduce_scatter: reductions(false); break;
            default: return std::nullopt;
            }
            poll();
            SendTable table = std::move(b_).finish(Deadline::at(deadline_));
            if (in_.collective.row().has_partials()) {
                resolve_partials(table, Deadline::at(deadline_));
                canonicalize_composites(table, Deadline::at(deadline_));
            }
            return table;
        } catch (const LimitReached&) {
            return std::nullopt;
        }
    }

private:
    void poll() const {
        if (Clock::now() >= deadline_) throw LimitReached("time limit (the rings' table)");
    }

    Node at(std::size_t r, std::uint32_t i) const { return t_.channel(rings_[r][i % P_]).from; }

    /// Chunk c of every datum on ring c mod k; a ring's chunks one after the other, P-1 steps
    /// each: in step s of a batch v_i forwards the datum of v_{i-s+1}.
    void allgather() {
        const std::uint32_t C = in_.collective.chunks, k = static_cast<std::uint32_t>(rings_.size());
        const Messages ms = b_.messages();
        for (std::uint32_t c = 0; c < C; ++c) {
            const std::size_t r = c % k;
            const Step start = static_cast<Step>((c / k) * (P_ - 1));
            for (std::uint32_t s = 1; s < P_; ++s) {
                if (s % 16 == 0) poll();
                for (std::uint32_t i = 0; i < P_; ++i)
                    b_.hop(start + s, rings_[r][i], ms.broadcast(idx(at(r, i + P_ - s + 1)), c));
            }
        }
    }

    /// Chunks by owner: allreduce's chunk c is owned by ring position c's slot in its batch,
    /// reduce_scatter's by the processor of its block. A batch holds at most one chunk per owner
    /// and lasts P-1 steps (reduce-scatter: the partial for owner v_q leaves v_{q+1} and is
    /// combined on its way round) plus, for allreduce, P-1 more (the complete chunk goes on from
    /// v_q). The partial sent is partial(sender, chunk): what the sender's buffer holds.
    void reductions(bool all) {
        const std::uint32_t C = in_.collective.chunks, k = static_cast<std::uint32_t>(rings_.size());
        const Step span = static_cast<Step>(all ? 2 * (P_ - 1) : P_ - 1);
        // per ring, its batches: slot q -> chunk (or none)
        std::vector<std::vector<std::vector<std::int64_t>>> batches(k);
        auto place = [&](std::size_t r, std::uint32_t q, std::uint32_t c) {
            auto& bs = batches[r];
            std::size_t j = 0;
            while (j < bs.size() && bs[j][q] >= 0) ++j;
            if (j == bs.size()) bs.emplace_back(P_, -1);
            bs[j][q] = c;
        };
        if (all) {
            for (std::uint32_t c = 0; c < C; ++c) place(c % k, (c / k) % P_, c);
        } else {
            const std::uint32_t per = C / P_;  // C a multiple of P (reduction_problem)
            std::vector<std::vector<std::uint32_t>> position(k, std::vector<std::uint32_t>(P_));
            for (std::size_t r = 0; r < k; ++r)
                for (std::uint32_t i = 0; i < P_; ++i) position[r][idx(at(r, i))] = i;
            for (std::uint32_t c = 0; c < C; ++c) {
                const std::uint32_t owner = c / per, r = (c % per) % k;
                place(r, position[r][owner], c);
            }
        }
        Composites& reg = b_.composites();
        for (std::size_t r = 0; r < k; ++r)
            for (std::size_t j = 0; j < batches[r].size(); ++j) {
                const Step start = static_cast<Step>(j) * span;
                for (Step s = 1; s <= span; ++s) {
                    if (s % 16 == 0) poll();
                    for (std::uint32_t i = 0; i < P_; ++i) {
                        // step s <= P-1: v_i sends the partial for owner v_{i-s}; step P-1+u:
                        // the complete chunk of owner v_{i-u+1}, the same position mod P
                        const std::uint32_t q = (i + 2 * P_ - static_cast<std::uint32_t>(s)) % P_;
                        const std::int64_t c = batches[r][j][q];
                        if (c < 0) continue;
                        const Step step = start + s;
                        const MessageId ref = reg.intern(
                            {MessageKind::partial, static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(step), {MessageId{idx(at(r, i))}}, {}});
                        b_.hop(step, rings_[r][i], ref);
                    }
                }
            }
    }

    const SynthInstance& in_;
    const Topology& t_;
    const std::uint32_t P_;
    std::vector<std::vector<ChannelId>> rings_;
    const Clock::time_point deadline_;
    TableBuilder b_;
};

}  // namespace

std::optional<KnownSchedule> ring_schedule(const SynthInstance& in, Clock::time_point deadline) {
    const Topology& t = *in.topology;
    const CollectiveKind kind = in.collective.kind;
    if (kind != CollectiveKind::allgather && kind != CollectiveKind::allreduce && kind != CollectiveKind::reduce_scatter) return std::nullopt;
    if (t.routers() != 0 || t.processors() < 3 || t.processors() > 4096 || in.rounds || in.model.timing != Timing::hop ||
        in.model.ports == Ports::half || in.model.inject_once)
        return std::nullopt;
    if (kind == CollectiveKind::reduce_scatter && in.collective.chunks % t.processors() != 0) return std::nullopt;
    // A few seconds at most: the rings are one upper bound among several. More rings than chunks carry nothing.
    // The search has a few seconds at most; the table and its check have the whole deadline.
    RingSearch search(t, in.model.ports, std::min(deadline, Clock::now() + std::chrono::seconds(5)));
    const std::optional<std::uint32_t> target = ring_target(t, in.model.ports, deadline);
    if (!target) return std::nullopt;
    std::vector<std::vector<ChannelId>> rings = search.find(std::min(*target, in.collective.chunks));
    if (rings.empty()) return std::nullopt;
    const std::size_t n = rings.size();
    std::optional<SendTable> table = RingSchedules(in, std::move(rings), deadline).build();
    if (!table || !synth_internal::holds(*table, in, false, deadline)) return std::nullopt;
    return KnownSchedule{std::move(*table), fmt::format("{} on {} ring{} run at once (NCCL's ring algorithm; collsched construction, docs/synthesis.md)",
                                                        in.collective.row().name, n, n == 1 ? "" : "s")};
}

}  // namespace collsched
