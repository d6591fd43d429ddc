// Spanning out-trees of every chunk, packed into steps by one max flow per step.
//
// The packing (moved from docs/synthesis.md; the user's summary stays there):
//
// **One max flow per step** (every other network of processors): each step the network, processors
// split into sending and receiving sides, carries as many chunks as it can from holders to
// processors lacking them; each receiver takes per unit a chunk its sender holds, preferring one no
// other neighbour holds or receives now, then the rarest (ties by a hash of (chunk, receiver, step)
// or not: both tried); unusable units go back and the next flow reroutes, until a flow adds nothing.
// Where the network relaxes the model, a unit is taken only if the channel, its groups and the ports
// stay within their exact budgets.
#include "verifier/constructions/steps/tree_packing.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "verifier/synth/bounds/capacity_network.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/constructions/steps/translate_packing.hpp"

namespace collsched {

namespace {

/// The one-round network with each topology node split: arcs into node v end at its receiving
/// copy (vertex base + v), so a step's flow never passes through a processor.
struct SplitNetwork {
    CapacityNetwork net;
    std::vector<std::uint32_t> receive;  // per topology node: its receiving copy
};

SplitNetwork split(CapacityNetwork net) {
    SplitNetwork s;
    const std::uint32_t base = net.vertices;
    for (CapacityArc& a : net.arcs)
        if (a.to < net.topology_nodes) a.to = base + a.to;
    for (std::uint32_t v = 0; v < net.topology_nodes; ++v) s.receive.push_back(base + v);
    net.vertices += net.topology_nodes;
    s.net = std::move(net);
    return s;
}

/// Which chunks each processor holds, as bit rows, and how many hold each chunk.
class Holdings {
public:
    Holdings(std::uint32_t processors, std::uint32_t chunks)
        : P_(processors), K_(chunks), W_((chunks + 63) / 64), bits_(std::size_t{processors} * W_, 0), holders_(chunks, 0),
          depth_(std::size_t{processors} * chunks, 0) {}
    const std::uint64_t* row(std::uint32_t v) const { return bits_.data() + std::size_t{v} * W_; }
    bool has(std::uint32_t v, std::uint32_t k) const { return row(v)[k / 64] >> (k % 64) & 1u; }
    void add(std::uint32_t v, std::uint32_t k, std::uint16_t depth) {
        bits_[std::size_t{v} * W_ + k / 64] |= std::uint64_t{1} << (k % 64);
        ++holders_[k];
        depth_[std::size_t{v} * K_ + k] = depth;
    }
    std::uint16_t depth(std::uint32_t v, std::uint32_t k) const { return depth_[std::size_t{v} * K_ + k]; }
    std::uint32_t holders(std::uint32_t k) const { return holders_[k]; }
    std::uint32_t words() const { return W_; }

private:
    std::uint32_t P_, K_, W_;
    std::vector<std::uint64_t> bits_;
    std::vector<std::uint32_t> holders_;
    std::vector<std::uint16_t> depth_;
};

/// One run of the packing with C chunks per datum.
class Packer {
public:
    Packer(const SynthInstance& in, std::uint32_t chunks, bool spread, const RunLimits& limits)
        : limits_(limits), spread_(spread), in_(in), t_(*in.topology), P_(t_.processors()), C_(chunks),
          allgather_(in.collective.kind == CollectiveKind::allgather), K_(allgather_ ? P_ * chunks : chunks),
          sn_(split(capacity_network(t_, in.model))), flow_(sn_.net, sn_.receive), hold_(P_, K_) {
        for (std::size_t i = 0; i < sn_.net.arcs.size(); ++i)
            if (sn_.net.arcs[i].kind == CapacityArc::Kind::channel) channel_arcs_.push_back(i);
        incoming_.resize(P_);
    }

    std::optional<PackedSchedule> run() {
        Collective coll = in_.collective;
        coll.chunks = C_;
        const Messages ms = coll.messages(P_);
        // Chunk k: datum k / C (its origin), chunk k % C.
        for (std::uint32_t k = 0; k < K_; ++k) hold_.add(origin(k), k, 0);
        std::vector<Transfer> transfers;
        const std::uint64_t goal = std::uint64_t{P_} * K_;
        std::uint64_t held = K_;
        std::uint32_t depth = 0;
        for (Step s = 1; held < goal; ++s) {
            limits_.check("the tree packing");
            begin_step();
            // Fill the step by flows until one adds nothing: a unit the chunk choice could not
            // use (its sender's useful chunks all taken by other senders) is given back, and the
            // next flow may route it from another sender.
            for (int pass = 0; pass < 8; ++pass) {
                if (pass > 0) limits_.check("the tree packing");
                const std::size_t before = arrivals_.size();
                if (flow_pass() == 0) break;
                for (std::uint32_t v = 0; v < P_; ++v)
                    for (auto [c, units] : incoming_[v]) {
                        const std::uint32_t u = idx(t_.channel(ChannelId{c}).from);
                        for (std::uint32_t n = 0; n < units && fits(ChannelId{c}); ++n) {
                            const std::optional<std::uint32_t> k = choose(u, v, s);
                            if (!k) break;
                            transfers.push_back({s, ChannelId{c}, chunk_message(ms, *k)});
                            const auto d = static_cast<std::uint16_t>(hold_.depth(u, *k) + 1u);
                            arrivals_.push_back({v, *k, d});
                            use(ChannelId{c}, v, *k);
                            depth = std::max<std::uint32_t>(depth, d);
                        }
                    }
                if (arrivals_.size() == before) break;
            }
            if (arrivals_.empty()) return std::nullopt;  // stalled
            for (const Arrival& a : arrivals_) {  // held from the next step on
                hold_.add(a.v, a.k, a.depth);
                ++held;
            }
        }
        PackedSchedule out;
        out.chunks = C_;
        out.table.topology = in_.topology;
        out.table.model = in_.model;
        out.table.collective = coll;
        out.table.transfers = std::move(transfers);
        out.table.sort();
        out.steps = out.table.steps();
        out.rounds = out.steps;
        out.depth = depth;
        return out;
    }

private:
    std::uint32_t origin(std::uint32_t k) const { return allgather_ ? k / C_ : idx(in_.collective.root); }
    MessageId chunk_message(const Messages& ms, std::uint32_t k) const { return ms.broadcast(origin(k), k % C_); }

    struct Arrival {
        std::uint32_t v, k;
        std::uint16_t depth;
    };

    void begin_step() {
        arrivals_.clear();
        used_channel_.assign(t_.channels().size(), 0);
        used_group_.assign(t_.groups().size(), 0);
        used_out_.assign(P_, 0);
        used_in_.assign(P_, 0);
        pending_.assign(std::size_t{P_} * hold_.words(), 0);
        compute_nearby();
    }

    /// One max flow over what is left of the step's capacity (exact usage of channels, groups
    /// and ports so far) on the channels whose sender holds a chunk the receiver lacks and
    /// has not been given in this step; fills incoming_ per receiver. Returns the flow value.
    std::int64_t flow_pass() {
        std::vector<std::int64_t> caps(sn_.net.arcs.size());
        for (std::size_t i = 0; i < caps.size(); ++i) {
            const CapacityArc& a = sn_.net.arcs[i];
            switch (a.kind) {
                case CapacityArc::Kind::channel: {
                    const Channel& ch = t_.channel(ChannelId{a.what});
                    const std::uint32_t left = static_cast<std::uint32_t>(a.cap) - used_channel_[a.what];
                    caps[i] = left == 0 ? 0 : useful(idx(ch.from), idx(ch.to), left);
                    break;
                }
                // Where the network relaxes a budget (a group of several senders and receivers, a
                // dropped non-laminar group, half ports) the units it routes may exceed it: fits()
                // refuses those, and what is left here is never negative.
                case CapacityArc::Kind::group: caps[i] = std::max<std::int64_t>(0, static_cast<std::int64_t>(a.cap) - used_group_[a.what]); break;
                case CapacityArc::Kind::port:
                    caps[i] = std::max<std::int64_t>(0, static_cast<std::int64_t>(a.cap) - (a.out_port ? used_out_[a.what] : used_in_[a.what]));
                    break;
            }
        }
        const std::vector<std::int64_t> joins(P_, FlowSolver::unbounded);
        const std::int64_t f = flow_.max_flow_arcs(caps, joins, joins, FlowSolver::super_sink);
        for (auto& v : incoming_) v.clear();
        if (f == 0) return 0;
        for (std::size_t i : channel_arcs_) {
            const std::int64_t x = flow_.arc_flow(i);
            if (x > 0) incoming_[idx(t_.channel(ChannelId{sn_.net.arcs[i].what}).to)].push_back({sn_.net.arcs[i].what, static_cast<std::uint32_t>(x)});
        }
        // Per receiver, the senders with the fewest useful chunks choose first.
        for (std::uint32_t v = 0; v < P_; ++v)
            std::sort(incoming_[v].begin(), incoming_[v].end(), [&](auto a, auto b) {
                return useful(idx(t_.channel(ChannelId{a.first}).from), v, 1u << 30) < useful(idx(t_.channel(ChannelId{b.first}).from), v, 1u << 30);
            });
        return f;
    }

    /// How many chunks u holds that v lacks and has not been given in this step, up to `cap`.
    std::uint32_t useful(std::uint32_t u, std::uint32_t v, std::uint32_t cap) const {
        const std::uint32_t W = hold_.words();
        const std::uint64_t *a = hold_.row(u), *b = hold_.row(v), *p = pending_.data() + std::size_t{v} * W;
        std::uint32_t n = 0;
        for (std::uint32_t w = 0; w < W && n < cap; ++w) n += static_cast<std::uint32_t>(std::popcount(a[w] & ~b[w] & ~p[w]));
        return std::min(n, cap);
    }

    /// Whether one more transfer on channel c keeps every exact budget of the model in this
    /// step: the channel's capacity, each of its link groups' capacities, and the ports
    /// (single: one send and one receive per processor; half: one of either). The flow network
    /// may be a relaxation of these (capacity_network.hpp); the table is held to them here.
    bool fits(ChannelId c) const {
        const Channel& ch = t_.channel(c);
        if (used_channel_[idx(c)] >= ch.cap) return false;
        for (std::uint32_t g : t_.groups_of(c))
            if (used_group_[g] >= t_.groups()[g].cap) return false;
        const std::uint32_t u = idx(ch.from), v = idx(ch.to);
        switch (in_.model.ports) {
            case Ports::multi: return true;
            case Ports::single: return !(u < P_ && used_out_[u] >= 1) && !(v < P_ && used_in_[v] >= 1);
            case Ports::half:
                return !(u < P_ && used_out_[u] + used_in_[u] >= 1) && !(v < P_ && used_out_[v] + used_in_[v] >= 1);
        }
        return false;
    }

    /// Records a transfer of chunk k over channel c into v: its capacity, groups and ports.
    void use(ChannelId c, std::uint32_t v, std::uint32_t k) {
        ++used_channel_[idx(c)];
        for (std::uint32_t g : t_.groups_of(c)) ++used_group_[g];
        const Channel& ch = t_.channel(c);
        if (idx(ch.from) < P_) ++used_out_[idx(ch.from)];
        if (idx(ch.to) < P_) ++used_in_[idx(ch.to)];
        pending_[std::size_t{v} * hold_.words() + k / 64] |= std::uint64_t{1} << (k % 64);
        mark_in_flight(v, k);
    }

    /// nearby[v]: the chunks some in-neighbour of v holds (or receives in this step). A chunk
    /// that is near can come over a neighbour's channel later; one that is not should take the
    /// channel now (on a rail machine: a datum no box-mate has yet takes the NIC, so no datum
    /// enters a box twice).
    void compute_nearby() {
        const std::uint32_t W = hold_.words();
        nearby_.assign(std::size_t{P_} * W, 0);
        for (std::uint32_t v = 0; v < P_; ++v) {
            std::uint64_t* n = nearby_.data() + std::size_t{v} * W;
            for (ChannelId c : t_.in_channels(Node{v})) {
                const std::uint64_t* a = hold_.row(idx(t_.channel(c).from));
                for (std::uint32_t w = 0; w < W; ++w) n[w] |= a[w];
            }
        }
    }
    void mark_in_flight(std::uint32_t v, std::uint32_t k) {
        const std::uint32_t W = hold_.words();
        for (ChannelId c : t_.out_channels(Node{v})) nearby_[std::size_t{idx(t_.channel(c).to)} * W + k / 64] |= std::uint64_t{1} << (k % 64);
    }

    /// A chunk u holds, v lacks, not yet taken by v this step: among the first candidates met
    /// from a starting word that moves with v and the step (so that receivers spread over the
    /// chunks), at most 64 looked at, one that no other neighbour of v has, then the rarest.
    std::optional<std::uint32_t> choose(std::uint32_t u, std::uint32_t v, Step s) const {
        const std::uint64_t *a = hold_.row(u), *b = hold_.row(v), *p = pending_.data() + std::size_t{v} * hold_.words();
        const std::uint32_t W = hold_.words();
        const std::uint32_t start = static_cast<std::uint32_t>((std::uint64_t{v} * 7919u + s * 104729u) % W);
        std::optional<std::uint32_t> best;
        std::uint64_t best_score = 0;
        std::uint32_t seen = 0;
        for (std::uint32_t i = 0; i < W && seen < 64; ++i) {
            const std::uint32_t w = (start + i) % W;
            std::uint64_t x = a[w] & ~b[w] & ~p[w];
            while (x && seen < 64) {
                const std::uint32_t k = w * 64 + static_cast<std::uint32_t>(std::countr_zero(x));
                x &= x - 1;
                ++seen;
                // Ties broken by a hash of (chunk, receiver, step): receivers that see the same
                // rarest chunks take different ones, so neighbours stay different and keep
                // something to give each other.
                const std::uint64_t mix =
                    spread_ ? (std::uint64_t{k} * 0x9E3779B1u ^ std::uint64_t{v} * 0x85EBCA77u ^ std::uint64_t{s} * 0xC2B2AE3Du) & 0xFFFFu : 0;
                const std::uint64_t score = (near(v, k) ? std::uint64_t{1} << 48 : 0) | std::uint64_t{hold_.holders(k)} << 16 | mix;
                if (!best || score < best_score) best = k, best_score = score;
            }
        }
        return best;
    }

    bool near(std::uint32_t v, std::uint32_t k) const { return nearby_[std::size_t{v} * hold_.words() + k / 64] >> (k % 64) & 1u; }

    const RunLimits& limits_;
    bool spread_;
    const SynthInstance& in_;
    const Topology& t_;
    std::vector<std::uint64_t> nearby_, pending_;
    std::vector<std::uint32_t> used_channel_, used_group_, used_out_, used_in_;
    std::vector<Arrival> arrivals_;
    std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> incoming_;
    std::uint32_t P_, C_;
    bool allgather_;
    std::uint32_t K_;
    SplitNetwork sn_;
    FlowSolver flow_;
    Holdings hold_;
    std::vector<std::size_t> channel_arcs_;
};

}  // namespace

std::string packing_problem(const SynthInstance& in) {
    const CollectiveKind k = in.collective.kind;
    if (k != CollectiveKind::allgather && k != CollectiveKind::broadcast)
        return "tree packing builds allgather and broadcast (reduce-scatter and reduce by reversal)";
    if (in.model.timing != Timing::hop) return "tree packing needs hop timing";
    if (in.topology->routers() != 0) return "tree packing needs a network of processors (model switches as link groups)";
    if (in.model.ports == Ports::half) return "tree packing does not take ports=half";
    if (in.model.inject_once) return "tree packing does not take inject=once (a tree's root sends its datum to each of its children)";
    return "";
}

std::vector<std::uint32_t> chunks_for(const Ratio& bound, std::uint32_t limit, std::uint32_t outside, std::uint32_t processors) {
    std::vector<std::uint32_t> out;
    for (std::uint64_t j = 1; j <= 4; ++j)
        if (bound.den * j <= limit) out.push_back(static_cast<std::uint32_t>(bound.den * j));
    if (outside >= 2 && processors > 0)
        for (std::uint64_t j = 8; bound.den * j <= limit && std::uint64_t{processors} * processors * bound.den * j <= (std::uint64_t{1} << 22); j *= 2)
            out.push_back(static_cast<std::uint32_t>(bound.den * j));
    if (out.empty()) out.push_back(1);
    return out;
}

void merge_steps(PackedSchedule& p, const RunLimits& limits) {
    SendTable& t = p.table;
    if (t.transfers.empty() || !t.step_rounds.empty()) return;
    std::uint32_t lo = std::numeric_limits<std::uint32_t>::max(), hi = 0;
    for (const Transfer& x : t.transfers) lo = std::min(lo, idx(x.message)), hi = std::max(hi, idx(x.message));
    const std::uint64_t span = std::uint64_t{hi} - lo + 1;
    if (std::uint64_t{t.topology->nodes()} * span > (std::uint64_t{1} << 27)) return;  // the arrival table would be too large
    if (!limits.memory.none() && std::uint64_t{t.topology->nodes()} * span * sizeof(Step) > limits.memory.left()) return;
    // arrival[node * span + message - lo]: the step it arrives (0: held from the start or never).
    std::vector<Step> arrival(t.topology->nodes() * span, 0);
    std::size_t polled = 0;
    auto poll = [&] {
        if ((++polled & 0xFFFFu) == 0) limits.check("merging the packed steps");
    };
    for (const Transfer& x : t.transfers) {
        poll();
        Step& a = arrival[std::size_t{idx(t.topology->channel(x.channel).to)} * span + (idx(x.message) - lo)];
        if (a == 0) a = x.step;
    }
    // dep[s]: the latest arrival step a transfer of step s relies on.
    const Step S = t.steps();
    std::vector<Step> dep(S + 1, 0);
    for (const Transfer& x : t.transfers) {
        poll();
        dep[x.step] = std::max(dep[x.step], arrival[std::size_t{idx(t.topology->channel(x.channel).from)} * span + (idx(x.message) - lo)]);
    }
    std::vector<Step> merged(S + 1, 0);
    std::vector<std::uint32_t> rounds;
    Step start = 1;
    for (Step s = 1; s <= S; ++s) {
        if (s == 1 || dep[s] >= start) {
            start = s;
            rounds.push_back(0);
        }
        merged[s] = static_cast<Step>(rounds.size());
        ++rounds.back();
    }
    for (Transfer& x : t.transfers) x.step = merged[x.step];
    t.sort();
    t.step_rounds = std::move(rounds);
    t.normalize_rounds();
    p.steps = t.steps();
    p.rounds = static_cast<Step>(t.total_rounds());
}

Step least_rounds(const Ratio& b, std::uint32_t chunks, std::uint32_t outside) {
    // R >= b C + (1 - 1/m) = (p C m + q (m - 1)) / (q m), rounded up; m = 1: ceil(p C / q).
    const std::uint64_t m = std::max<std::uint32_t>(outside, 1);
    const std::uint64_t num = b.num * chunks * m + b.den * (m - 1), den = b.den * m;
    return static_cast<Step>((num + den - 1) / den);
}

std::uint32_t cut_outside(const BandwidthBound& bound, std::uint32_t processors) {
    if (!bound.certificate || bound.certificate->reversed) return 1;
    return processors - static_cast<std::uint32_t>(bound.certificate->inside.size());
}

std::optional<PackedSchedule> pack_trees(const SynthInstance& in, const PackingOptions& opt) {
    if (!packing_problem(in).empty()) return std::nullopt;
    const std::uint32_t P = in.topology->processors();
    std::optional<PackedSchedule> best;
    RunLimits limits = opt.limits;
    limits.deadline = limits.deadline.min(Deadline::after(opt.seconds));
    std::string stopped;
    const bool allgather = in.collective.kind == CollectiveKind::allgather;
    auto keep = [&](std::optional<PackedSchedule> p) {
        if (!p) return false;
        p->rounds = p->steps;  // one round per step until merged
        if (opt.merge) merge_steps(*p, limits);
        VerifyOptions vo;
        vo.deadline = limits.deadline;
        const VerifyReport r = verify_direct(p->table, vo);
        if (!r.holds() && r.verdict() == "unknown") throw LimitReached("time limit (verifying the packed table)");
        COLLSCHED_ASSERT_MSG(r.holds(), fmt::format("the packed {} table with {} chunks does not verify: {}", in.collective.to_string(), p->chunks,
                                                    r.violations.empty() ? std::string(r.verdict()) : r.violations.front().detail));
        if (opt.target) p->least_rounds = least_rounds(*opt.target, p->chunks, opt.outside);
        if (!best || p->rounds_per_chunk() < best->rounds_per_chunk()) best = std::move(p);
        return opt.target && best->rounds_per_chunk() == *opt.target;
    };
    auto finish = [&] {
        if (opt.stopped) *opt.stopped = stopped;
        return std::move(best);
    };
    // The table of C chunks has P * K deliveries (K = P C for allgather), estimated before it is
    // built: a C that does not fit is left out (a smaller one may).
    auto fits = [&](std::uint32_t C, std::uint64_t more = 0) {
        const std::uint64_t deliveries = mul_sat(std::uint64_t{P} * C, allgather ? P : 1);
        try {
            limits.reserve(add_sat(mul_sat(deliveries, bytes_per_transfer), more),
                           fmt::format("the packed table of {} chunks ({} deliveries)", C, deliveries));
            return true;
        } catch (const LimitReached& e) {
            stopped = e.what();
            return false;
        }
    };
    try {
        // First the translates of one tree set, when the machine has a translation group: its
        // quotient has P elements, not P^2 deliveries.
        if (allgather) {
            if (const std::optional<std::uint32_t> B = translation_box(*in.topology, limits)) {
                // The chunk counts by the least R/C the cut allows them (least_rounds(C) / C), so
                // that the first run that reaches its least rounds is the best of the list.
                std::vector<std::uint32_t> order = opt.chunks;
                if (opt.target)
                    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
                        return Ratio::of(least_rounds(*opt.target, a, opt.outside), a) < Ratio::of(least_rounds(*opt.target, b, opt.outside), b);
                    });
                for (std::uint32_t C : order) {
                    if (C == 0 || C > max_chunks || std::uint64_t{P} * P * C > opt.max_deliveries) continue;
                    limits.check("the tree packing");
                    if (!fits(C)) continue;
                    SynthInstance one = in;
                    one.collective.chunks = C;
                    const Step target = opt.target ? least_rounds(*opt.target, C, opt.outside) : 1;
                    std::optional<PackedSchedule> p = pack_translates(one, C, target, limits.deadline.when(), limits);
                    if (p) p->method = "translates of one tree set under " + translation_group_name(*in.topology, limits);
                    if (keep(std::move(p))) return finish();
                    // Its least rounds reached: no later chunk count of the list can do better.
                    if (opt.target && best && best->chunks == C && best->rounds == best->least_rounds) return finish();
                }
            }
        }
        for (std::uint32_t C : opt.chunks) {
            if (C == 0 || C > max_chunks) continue;
            const std::uint64_t deliveries = std::uint64_t{P} * C * (allgather ? P : 1);
            if (deliveries > opt.max_deliveries) continue;
            SynthInstance one = in;
            one.collective.chunks = C;
            for (bool spread : {true, false}) {
                limits.check("the tree packing");
                // with the flow network: 300 bytes per arc (bandwidth_bound.hpp)
                if (!fits(C, mul_sat(in.topology->channels().size() + 2 * std::uint64_t{in.topology->nodes()}, 300))) break;
                std::optional<PackedSchedule> p = Packer(one, C, spread, limits).run();
                if (p) p->method = "one max flow per step";
                if (keep(std::move(p))) return finish();
            }
        }
    } catch (const LimitReached& e) {
        stopped = e.what();
    }
    return finish();
}

}  // namespace collsched
