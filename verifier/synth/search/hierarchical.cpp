// Hierarchical synthesis for machines of boxes (verifier/synth/search/hierarchical.hpp).
//
// How it builds (moved from docs/synthesis.md; the user's summary stays there):
//
// - **Boxes.** The components of the fastest channels (largest bandwidth of `link_types`), which
//   must be K >= 2 runs of B >= 2 consecutive processors (p is GPU p mod B of box p / B). Else exit 2
//   with the reason (no speeds, routers, other shapes).
// - **Two sub-machines.** Box 0 (its B processors and channels between them) and rail 0 (the K
//   processors of index 0 and the channels between them), link groups cut to them. Every box must be
//   box 0 renumbered (p -> p + bB) and every rail rail 0 (p -> p + j), compared by canonical graph
//   text; else refused naming the one that differs.
// - **Exact phases.** The collective (allgather for allgather and reduce_scatter; alltoall) on each
//   sub-machine by `optimize` itself (a third of the time left each); multibox and rail 4 x 8: box
//   phase 7 steps, rail phase 3, both proved. Each runs on every box (rail) at once, renumbered.
// - **Compositions.** Allgather: chunks of local index < l inter-box first, the others intra-box
//   first (l = 0..B; for 0 < l < B three orders: intra first, inter first, interleaved): 23 for B = 8.
//   Alltoall: m((b, i), (b', i')) with b != b', i != i' inter-box first when (i' - i) mod B <= l, the
//   same orders, one-hop messages first or last: 40 for B = 8. Each copy is the phase's schedule with
//   messages renamed (transfers of messages it does not carry dropped: each message's chain is its
//   own). reduce_scatter (C = P) is the composed allgather reversed. Allreduce is not done.
// - **Compaction.** Laid out phase after phase (62 steps for 4 x 8 allgather, 94 alltoall), valid by
//   construction; then each transfer in layout order moves to the earliest step where its sender holds
//   the message and its channel, link groups and ports have room (up to 4 passes while completion
//   falls); a transfer to a holder is dropped. Phases overlap where their links differ.
#include "verifier/synth/search/hierarchical.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <numeric>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/core/flat_map.hpp"
#include "compiler/table/builder.hpp"
#include "compiler/table/duality.hpp"
#include "compiler/topology/machine_view.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/parallel.hpp"
#include "support/units.hpp"
#include "verifier/check/direct.hpp"

namespace collsched {

namespace {

/// A sub-machine: the processors `members` (local number i is members[i]) and the channels
/// between them that `keep` accepts, as the text of a graph file numbered locally, with every
/// link group cut to those channels (a group with none left is dropped). The text is canonical
/// (edges and groups sorted, groups named by their place), so two sub-machines alike after
/// renumbering have equal texts.
struct SubText {
    std::string text;
    std::size_t channels = 0, groups = 0;
};

std::optional<SubText> sub_text(const Topology& t, const std::vector<std::uint32_t>& members, const std::function<bool(ChannelId)>& keep,
                                std::string* why, const RunLimits& limits) {
    std::uint64_t ticks = 0;
    // Polled every 65,536 channels: a rail of 512 boxes has 261,632 channels to write.
    auto tick = [&] {
        if ((++ticks & 0xffff) == 0) limits.check("the sub-machines of a hierarchical machine");
    };
    std::vector<std::int64_t> local(t.nodes(), -1);
    for (std::size_t i = 0; i < members.size(); ++i) local[members[i]] = static_cast<std::int64_t>(i);
    std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> chans;  // (from, to, cap), local
    // The link groups of the kept channels, each with its kept channels (local ends): found from
    // the channels, not by walking every group of the machine for every copy (4,096 GPUs: 520
    // copies times millions of grouped channels).
    std::vector<std::uint32_t> group_ids;
    std::unordered_map<std::uint32_t, std::vector<std::pair<std::uint32_t, std::uint32_t>>> by_group;
    for (std::uint32_t u : members)
        for (ChannelId c : t.out_channels(Node{u})) {
            tick();
            const Channel& ch = t.channel(c);
            if (local[idx(ch.to)] < 0 || !keep(c)) continue;
            const auto a = static_cast<std::uint32_t>(local[u]), b = static_cast<std::uint32_t>(local[idx(ch.to)]);
            chans.emplace_back(a, b, ch.cap);
            for (std::uint32_t g : t.groups_of(c)) {
                auto [it, fresh] = by_group.try_emplace(g);
                if (fresh) group_ids.push_back(g);
                it->second.emplace_back(a, b);
            }
        }
    std::sort(chans.begin(), chans.end());
    SubText s;
    s.channels = chans.size();
    std::string edges;
    for (const auto& [a, b, cap] : chans) {
        tick();
        if (a > b) continue;
        // chans is sorted: the reverse (b, a, *) by binary search
        auto rev = std::lower_bound(chans.begin(), chans.end(), std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>{b, a, 0});
        if (rev == chans.end() || std::get<0>(*rev) != b || std::get<1>(*rev) != a || std::get<2>(*rev) != cap) {
            if (why) *why = fmt::format("the channel {} -> {} has no reverse of equal capacity", members[a], members[b]);
            return std::nullopt;
        }
        edges += fmt::format("{}[{}, {}, {}]", edges.empty() ? "" : ", ", a, b, cap);
    }
    std::vector<std::pair<std::vector<std::pair<std::uint32_t, std::uint32_t>>, std::uint32_t>> groups;
    for (std::uint32_t g : group_ids) {
        std::vector<std::pair<std::uint32_t, std::uint32_t>>& cs = by_group[g];
        std::sort(cs.begin(), cs.end());
        groups.emplace_back(std::move(cs), t.groups()[g].cap);
    }
    std::sort(groups.begin(), groups.end());
    s.groups = groups.size();
    std::string gs;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        std::string cs;
        for (const auto& [a, b] : groups[i].first) {
            tick();
            cs += fmt::format("{}[{}, {}]", cs.empty() ? "" : ", ", a, b);
        }
        gs += fmt::format("{}{{\"name\": \"g{}\", \"cap\": {}, \"channels\": [{}]}}", gs.empty() ? "" : ",\n  ", i, groups[i].second, cs);
    }
    s.text = fmt::format("{{\"processors\": {}, \"routers\": 0,\n \"edges\": [{}],\n \"groups\": [{}]}}\n", members.size(), edges, gs);
    return s;
}

/// The boxes (scope 0) or the rails (scope 1) of a layout: the members of copy g, in local order.
std::vector<std::uint32_t> members_of(const BoxLayout& L, int scope, std::uint32_t g) {
    std::vector<std::uint32_t> m;
    if (scope == 0)
        for (std::uint32_t i = 0; i < L.per_box; ++i) m.push_back(g * L.per_box + i);
    else
        for (std::uint32_t k = 0; k < L.boxes; ++k) m.push_back(k * L.per_box + g);
    return m;
}

/// Channels inside one box (scope 0), or between boxes (scope 1).
std::function<bool(ChannelId)> keep_of(const Topology& t, const BoxLayout& L, int scope) {
    return [&t, B = L.per_box, scope](ChannelId c) {
        const bool inside = idx(t.channel(c).from) / B == idx(t.channel(c).to) / B;
        return scope == 0 ? inside : !inside;
    };
}

/// The sub-machine of each scope, checked alike in every copy (`all`; else copy 0 only): its
/// text, or why not. `limits` polled (LimitReached).
std::string check_alike(const Topology& t, const BoxLayout& L, std::string texts[2], const RunLimits& limits, bool all = true) {
    for (int scope = 0; scope < 2; ++scope) {
        const std::uint32_t copies = !all ? 1 : scope == 0 ? L.boxes : L.per_box;
        const char* what = scope == 0 ? "box" : "rail";
        for (std::uint32_t g = 0; g < copies; ++g) {
            std::string why;
            auto s = sub_text(t, members_of(L, scope, g), keep_of(t, L, scope), &why, limits);
            if (!s) return fmt::format("{} {} of {}: {}", what, g, t.spec(), why);
            if (s->channels == 0) return fmt::format("{} {} of {} has no channels", what, g, t.spec());
            if (g == 0) texts[scope] = s->text;
            else if (s->text != texts[scope])
                return fmt::format("{} {} of {} is not {} 0 renumbered (other channels, capacities or link groups); hierarchical synthesis "
                                   "copies one {}'s schedule to every {}",
                                   what, g, t.spec(), what, what, what);
        }
    }
    return "";
}

/// Where each transfer of a sub-machine's schedule goes in the whole machine: per copy, the
/// channel of every sub channel.
std::vector<std::vector<ChannelId>> channel_maps(const Topology& t, const Topology& sub, const BoxLayout& L, int scope, const RunLimits& limits) {
    const std::uint32_t copies = scope == 0 ? L.boxes : L.per_box;
    std::vector<std::vector<ChannelId>> maps(copies);
    for (std::uint32_t g = 0; g < copies; ++g) {
        limits.check("the channels of the sub-machines' copies");
        const std::vector<std::uint32_t> m = members_of(L, scope, g);
        for (const Channel& ch : sub.channels()) {
            auto c = t.find_channel(Node{m[idx(ch.from)]}, Node{m[idx(ch.to)]});
            COLLSCHED_ASSERT(c.has_value());
            maps[g].push_back(*c);
        }
    }
    return maps;
}

/// A phase's schedule on every copy of its scope, laid out after `offset`: message(g, key) names
/// the whole machine's message that the sub-schedule's message `key` stands for on copy g (none:
/// the transfer is left out). Returns the steps used.
using MessageMap = std::function<std::optional<MessageId>(std::uint32_t g, const MessageKey&)>;

struct Layout {
    std::vector<Transfer> transfers;
    Step offset = 0;
    RunLimits limits;  ///< polled per copy of a phase (LimitReached)

    void add(const SendTable& sub, const std::vector<std::vector<ChannelId>>& maps, const MessageMap& message) {
        const Messages ms = sub.messages();
        for (std::uint32_t g = 0; g < maps.size(); ++g) {
            limits.check("laying out a composition");
            for (const Transfer& tr : sub.transfers)
                if (auto m = message(g, ms.key(tr.message))) transfers.push_back({offset + tr.step, maps[g][idx(tr.channel)], *m});
        }
        offset += sub.steps();
    }
};

/// A graph topology from the text of a graph file, named `name` (its spec() and the name in
/// messages): the text goes through a temporary file, the graph reader's only input.
std::shared_ptr<const Topology> graph_from_text(const std::string& name, const std::string& text, const RunLimits& limits) {
    char path[] = "/tmp/collsched-machine-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) throw InputError(fmt::format("cannot create a temporary file for the sub-machine {}", name));
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    std::shared_ptr<const Topology> topo;
    try {
        if (!written) throw InputError(fmt::format("cannot write the temporary file {} for the sub-machine {}", path, name));
        TopologyArgs args;
        args.file = path;
        args.limits = limits;
        topo = Topology::make(Family::graph, args, name);
    } catch (...) {
        ::unlink(path);
        throw;
    }
    ::unlink(path);
    return topo;
}

/// The copies 1 .. K-1 of a box phase and 1 .. B-1 of a rail phase in one of the three orders of
/// the compositions: 0 every box copy first, 1 every rail copy first, 2 interleaved copy by copy
/// (box before rail, or rail before box with `rail_leads`).
void copies_in_order(int order, std::uint32_t K, std::uint32_t B, const std::function<void(std::uint32_t)>& box,
                     const std::function<void(std::uint32_t)>& rail, bool rail_leads = false) {
    if (order == 0) {
        for (std::uint32_t rr = 1; rr < K; ++rr) box(rr);
        for (std::uint32_t rr = 1; rr < B; ++rr) rail(rr);
    } else if (order == 1) {
        for (std::uint32_t rr = 1; rr < B; ++rr) rail(rr);
        for (std::uint32_t rr = 1; rr < K; ++rr) box(rr);
    } else {
        for (std::uint32_t rr = 1; rr < std::max(K, B); ++rr) {
            if (rail_leads && rr < B) rail(rr);
            if (rr < K) box(rr);
            if (!rail_leads && rr < B) rail(rr);
        }
    }
}

class Deadlined {
public:
    explicit Deadlined(Deadline d, MemoryBudget m) : d_(d), m_(m) {}
    void check(std::string_view where) const {
        if (d_.passed()) throw std::runtime_error(fmt::format("time limit ({})", where));
        if (m_.exceeded(0.9))
            throw std::runtime_error(fmt::format("memory limit ({}): {} resident, limit {}", where, format_bytes(resident_memory_recent()),
                                                 format_bytes(m_.limit())));
    }

private:
    Deadline d_;
    MemoryBudget m_;
};

}  // namespace

std::optional<BoxLayout> find_boxes(const Topology& t, std::string* why) {
    auto no = [&](std::string s) -> std::optional<BoxLayout> {
        if (why) *why = std::move(s);
        return std::nullopt;
    };
    if (t.routers() > 0) return no(fmt::format("{} has routers; hierarchical synthesis takes machines of processors only", t.spec()));
    if (!t.has_speeds())
        return no(fmt::format("{} states no link speeds; hierarchical synthesis finds the boxes as the components of the fastest "
                              "channels of a graph file with \"link_types\" (docs/topologies.md)",
                              t.spec()));
    // Routers are refused above: every channel joins two processors.
    const double fastest = fastest_processor_channel(t);
    const std::uint32_t P = t.processors();
    const std::vector<std::uint32_t> set = processor_components(t, fastest * (1 - 1e-9));
    // Components as runs of consecutive processors of one size.
    std::uint32_t B = 0;
    while (B < P && set[B] == 0) ++B;
    const std::string how = fmt::format("the components of the channels of {}", support::format_bandwidth(fastest));
    if (B < 2 || B == P || P % B != 0)
        return no(fmt::format("{}: {} are not boxes of at least 2 processors (the first has {} of {})", t.spec(), how, B, P));
    for (std::uint32_t p = 0; p < P; ++p)
        if (set[p] != p / B)
            return no(fmt::format("{}: {} are not runs of {} consecutive processors (processor {} is apart)", t.spec(), how, B, p));
    return BoxLayout{P / B, B, fmt::format("{} boxes of {} processors ({})", P / B, B, how)};
}

std::string hierarchical_problem(const SynthInstance& in, const RunLimits& limits) {
    const Topology& t = *in.topology;
    const CollectiveKind k = in.collective.kind;
    if (in.model.timing != Timing::hop) return "hierarchical synthesis takes hop timing only";
    if (in.rounds) return "hierarchical synthesis takes one round per step (no --rounds)";
    if (in.model.inject_once) return "hierarchical synthesis does not take inject=once";
    if (k == CollectiveKind::reduce_scatter) {
        if (in.collective.chunks != t.processors())
            return fmt::format("hierarchical synthesis takes reduce_scatter with {} chunks (the dual allgather's)", t.processors());
        if (std::string why = duality_problem(t, in.model); !why.empty()) return why;
    } else if (k == CollectiveKind::allgather || k == CollectiveKind::alltoall) {
        if (in.collective.chunks != 1) return "hierarchical synthesis takes one chunk per datum for allgather and alltoall";
    } else {
        return fmt::format("hierarchical synthesis takes allgather, alltoall and reduce_scatter, not {} (allreduce: not yet, "
                           "docs/synthesis.md)",
                           in.collective.to_string());
    }
    std::string why;
    auto L = find_boxes(t, &why);
    if (!L) return why;
    std::string texts[2];
    return check_alike(t, *L, texts, limits);
}

SendTable compact_schedule(const SynthInstance& in, std::vector<Transfer> transfers, int passes, Deadline deadline, MemoryBudget memory) {
    const Deadlined limits(deadline, memory);
    const Topology& t = *in.topology;
    const Messages ms = in.collective.messages(t.processors());
    const std::uint64_t C = t.channels().size(), G = t.groups().size(), N = t.nodes();
    const Ports ports = in.model.ports;
    for (int pass = 0; pass < passes; ++pass) {
        limits.check("compaction");
        std::stable_sort(transfers.begin(), transfers.end(), [](const Transfer& a, const Transfer& b) { return a.step < b.step; });
        const Step before = transfers.empty() ? 0 : transfers.back().step;
        // Flat maps, not std::unordered_map: one array each (a node per entry was 60 bytes and a
        // cache miss more, and freeing millions of nodes took seconds past the time limit).
        FlatMap held, used;  // (node, message) -> the step after which the node holds it; (resource, step) -> transfers
        held.reserve(transfers.size());
        used.reserve(2 * transfers.size());
        auto hkey = [&](Node n, MessageId m) { return std::uint64_t{idx(m)} * N + idx(n); };
        auto use_of = [&](std::uint64_t res, Step s) { return used.find((res << 24) | s); };
        auto use = [&](std::uint64_t res, Step s) -> std::uint32_t {
            const std::uint32_t u = use_of(res, s);
            return u == FlatMap::none ? 0 : u;
        };
        auto add_use = [&](std::uint64_t res, Step s) {
            auto [u, fresh] = used.find_or_insert((res << 24) | s, [] { return 1u; });
            if (!fresh) used.at((res << 24) | s) = u + 1;
        };
        auto holds_at = [&](Node n, MessageId m) -> std::optional<Step> {
            if (ms.origin(m) == n && in.collective.initial(ms, m)) return 0;
            const std::uint32_t s = held.find(hkey(n, m));
            if (s == FlatMap::none) return std::nullopt;
            return Step{s};
        };
        std::vector<Transfer> out;
        out.reserve(transfers.size());
        // Polled per 65,536 steps probed, not per transfer: on 1,024 GPUs a transfer may probe
        // hundreds of steps before its channel has room (alltoall: 65,536 transfers took seconds, and
        // the run ended 1.8 to 3 s past --timeout in here).
        std::uint64_t probes = 0;
        auto probe = [&] {
            if ((++probes & 0xffff) == 0) limits.check("compaction");
        };
        for (std::size_t i = 0; i < transfers.size(); ++i) {
            probe();
            const Transfer& tr = transfers[i];
            const Channel& ch = t.channel(tr.channel);
            auto from = holds_at(ch.from, tr.message);
            COLLSCHED_ASSERT_MSG(from.has_value(), fmt::format("compaction: {} sends {} before it holds it", t.node_name(ch.from), ms.name(tr.message)));
            if (holds_at(ch.to, tr.message)) continue;  // it got there another way
            auto room = [&](Step s) {
                if (use(idx(tr.channel), s) >= ch.cap) return false;
                for (std::uint32_t g : t.groups_of(tr.channel))
                    if (use(C + g, s) >= t.groups()[g].cap) return false;
                const std::uint32_t so = use(C + G + idx(ch.from), s), ri = use(C + G + N + idx(ch.to), s);
                if (ports == Ports::single) return so == 0 && ri == 0;
                if (ports == Ports::half)
                    return so + use(C + G + N + idx(ch.from), s) == 0 && use(C + G + idx(ch.to), s) + ri == 0;
                return true;
            };
            Step s = *from + 1;
            while (!room(s)) ++s, probe();
            add_use(idx(tr.channel), s);
            for (std::uint32_t g : t.groups_of(tr.channel)) add_use(C + g, s);
            add_use(C + G + idx(ch.from), s);
            add_use(C + G + N + idx(ch.to), s);
            held.find_or_insert(hkey(ch.to, tr.message), [&] { return std::uint32_t{s}; });
            out.push_back({s, tr.channel, tr.message});
        }
        transfers = std::move(out);
        const Step after = std::max_element(transfers.begin(), transfers.end(), [](auto& a, auto& b) { return a.step < b.step; })->step;
        if (after >= before && pass > 0) break;
    }
    TableBuilder b(in.topology, in.model, in.collective);
    b.reserve(transfers.size());
    for (const Transfer& tr : transfers) b.hop(tr.step, tr.channel, tr.message);
    return std::move(b).finish(deadline);
}

namespace {

/// A composition: its name and how it lays out its phases, in order.
struct Candidate {
    std::string name;
    std::function<void(Layout&)> lay;
};

constexpr const char* orders[] = {"all intra-box copies, then all inter-box copies", "all inter-box copies, then all intra-box copies",
                                  "the two interleaved copy by copy"};

/// hierarchical_synthesize(), one method per stage, called in order by run(): the two phases
/// (each optimized on one box and one rail), the compositions (allgather's or alltoall's), and
/// every composition laid out, compacted and verified (on threads), the shortest kept.
class HierarchicalSynthesis {
public:
    HierarchicalSynthesis(const SynthInstance& whole, const HierarchicalOptions& opt)
        : whole_(whole), opt_(opt), t0_(Clock::now()), t_(*whole.topology), layout_(*find_boxes(t_)), B_(layout_.per_box), K_(layout_.boxes),
          reversed_(whole.collective.kind == CollectiveKind::reduce_scatter), in_(forward(whole, reversed_)),
          gather_(in_.collective.kind == CollectiveKind::allgather), ms_(in_.collective.messages(t_.processors())),
          limits_(opt.deadline, opt.memory) {
        res_.layout = layout_;
    }

    HierarchicalResult run() {
        if (!phases()) return done();
        if (gather_) gather_compositions();
        else alltoall_compositions();
        res_.space = cands_.size();
        compose_all();
        if (res_.table)
            res_.source = fmt::format("hierarchical composition ({}{}; phases of {} and {} steps on one box and one rail, copied to {} boxes "
                                      "and {} rails; compacted and verified whole)",
                                      res_.best, reversed_ ? ", the allgather reversed" : "", box_.steps(), rail_.steps(), K_, B_);
        return done();
    }

private:
    /// The forward instance: reduce_scatter is composed as its dual allgather, reversed at the end.
    static SynthInstance forward(const SynthInstance& whole, bool reversed) {
        SynthInstance in = whole;
        if (reversed) in.collective = Collective::parse("allgather", *whole.topology);
        return in;
    }

    HierarchicalResult done() {
        res_.seconds = seconds_since(t0_);
        return std::move(res_);
    }

    std::uint32_t P_of(std::uint32_t b, std::uint32_t i) const { return b * B_ + i; }

    /// The two phases, each optimized on its sub-machine (the same for every box, every rail);
    /// false (with the reason) when one has no schedule.
    bool phases() {
        try {
            return phases_within_limits();
        } catch (const LimitReached& e) {
            res_.reason = e.what();
            return false;
        }
    }

    bool phases_within_limits() {
        const RunLimits limits{opt_.deadline, opt_.memory};
        std::string texts[2];
        check_alike(t_, layout_, texts, limits, false);  // every copy alike: hierarchical_synthesize checked
        for (int scope = 0; scope < 2; ++scope) {
            HierarchicalPhase ph;
            ph.name = scope == 0 ? "intra-box" : "inter-box (rails)";
            ph.copies = scope == 0 ? K_ : B_;
            subs_[scope] = graph_from_text(fmt::format("{}#{}0", t_.spec(), scope == 0 ? "box" : "rail"), texts[scope], limits);
            const std::vector<std::uint32_t> m0 = members_of(layout_, scope, 0);
            ph.machine = fmt::format("{} 0 ({} {}): processors {}, {} channels, {} link groups", scope == 0 ? "box" : "rail",
                                     subs_[scope]->spec(), scope == 0 ? "its own channels" : "the channels between boxes",
                                     fmt::join(m0, ","), subs_[scope]->channels().size(), subs_[scope]->groups().size());
            SynthInstance sub{subs_[scope], in_.model, Collective::parse(gather_ ? "allgather" : "alltoall", *subs_[scope]), in_.routes};
            OptimizeOptions po = opt_.phase;
            po.progress = nullptr;
            po.greedy_only = false;
            po.hierarchical = false;
            // Each phase gets at most a third of the time left (the compositions need the rest).
            if (!opt_.deadline.none()) po.timeout = std::max(0.01, opt_.deadline.left() / 3);
            po.synth.deadline = opt_.deadline.when();
            po.synth.memory = opt_.memory;
            ph.space = search_space(sub);
            ph.result = optimize(sub, po);
            res_.phases.push_back(std::move(ph));
            if (!res_.phases.back().result.witness) {
                res_.reason = fmt::format("the {} phase has no schedule ({})", res_.phases.back().name, to_string(res_.phases.back().result.status));
                return false;
            }
            (scope == 0 ? box_ : rail_) = *res_.phases.back().result.witness;
            maps_[scope] = channel_maps(t_, *subs_[scope], layout_, scope, limits);
        }
        return true;
    }

    /// The compositions of allgather (docs/synthesis.md, "Hierarchical synthesis"), each as a
    /// list of phases laid out in order.
    void gather_compositions() {
        // Chunks of local index < l go inter-box first (rail allgather, then one box allgather per
        // box they came from), the others intra-box first (box allgather, then one rail allgather
        // per box-mate whose chunk they carry).
        for (std::uint32_t l = 0; l <= B_; ++l)
            for (int o = 0; o < 3; ++o) {
                if ((l == 0 || l == B_) && o > 0) continue;
                const std::string split = l == 0   ? std::string("intra-box then inter-box")
                                          : l == B_ ? std::string("inter-box then intra-box")
                                                   : fmt::format("chunks of local index < {} inter-box first, the others intra-box first; {}", l,
                                                                 orders[o]);
                cands_.push_back({split, [&, l, o](Layout& lay) {
                                     lay.add(rail_, maps_[1], [&](std::uint32_t j, const MessageKey& k) -> std::optional<MessageId> {
                                         if (j >= l) return std::nullopt;
                                         return ms_.broadcast(P_of(k.src, j));
                                     });
                                     lay.add(box_, maps_[0], [&](std::uint32_t b, const MessageKey& k) -> std::optional<MessageId> {
                                         if (k.src < l) return std::nullopt;
                                         return ms_.broadcast(P_of(b, k.src));
                                     });
                                     auto box_copy = [&](std::uint32_t rr) {
                                         if (rr == 0) return;  // the own box's chunks of index < l: below, with rr = 0 of the rails' loop
                                         lay.add(box_, maps_[0], [&, rr](std::uint32_t b, const MessageKey& k) -> std::optional<MessageId> {
                                             if (k.src >= l) return std::nullopt;
                                             return ms_.broadcast(P_of((b + rr) % K_, k.src));
                                         });
                                     };
                                     auto rail_copy = [&](std::uint32_t rr) {
                                         if (rr == 0) return;  // own chunks of index >= l: the first box phase's senders
                                         lay.add(rail_, maps_[1], [&, rr](std::uint32_t j, const MessageKey& k) -> std::optional<MessageId> {
                                             const std::uint32_t i = (j + rr) % B_;
                                             if (i < l) return std::nullopt;
                                             return ms_.broadcast(P_of(k.src, i));
                                         });
                                     };
                                     // the own box's chunks of index < l and the rails' chunks of index >= l
                                     lay.add(box_, maps_[0], [&](std::uint32_t b, const MessageKey& k) -> std::optional<MessageId> {
                                         if (k.src >= l) return std::nullopt;
                                         return ms_.broadcast(P_of(b, k.src));
                                     });
                                     lay.add(rail_, maps_[1], [&](std::uint32_t j, const MessageKey& k) -> std::optional<MessageId> {
                                         if (j < l) return std::nullopt;
                                         return ms_.broadcast(P_of(k.src, j));
                                     });
                                     copies_in_order(o, K_, B_, box_copy, rail_copy);
                                 }});
            }
    }

    /// The compositions of alltoall.
    void alltoall_compositions() {
        // Alltoall: messages within a box by the box phase, within a rail by the rail phase; a
        // message m(s, d) between (b, i) and (b', i'), b != b', i != i', goes intra-box first
        // ((b, i) -> (b, i') -> (b', i')) when (i' - i) mod B > l, else inter-box first
        // ((b, i) -> (b', i) -> (b', i')).
        for (int late = 0; late < 2; ++late)
        for (std::uint32_t l = 0; l < B_; ++l)
            for (int o = 0; o < 3; ++o) {
                if ((l == 0 || l == B_ - 1) && o > 0) continue;
                std::string split = l == 0       ? std::string("intra-box then inter-box")
                                    : l == B_ - 1 ? std::string("inter-box then intra-box")
                                                 : fmt::format("messages to local index i + 1 .. i + {} inter-box first, the others "
                                                               "intra-box first; {}",
                                                               l, orders[o]);
                if (late) split += "; messages within a box or a rail laid out last";
                cands_.push_back({split, [&, l, o, late](Layout& lay) {
                                     auto rail_first = [&](std::uint32_t i, std::uint32_t i2) { return (i2 + B_ - i) % B_ <= l; };
                                     // messages within a box, within a rail: one hop each, first or last in the layout
                                     auto direct = [&] {
                                         lay.add(box_, maps_[0], [&](std::uint32_t b, const MessageKey& k) -> std::optional<MessageId> {
                                             return ms_.personal(P_of(b, k.src), P_of(b, k.dst));
                                         });
                                         lay.add(rail_, maps_[1], [&](std::uint32_t j, const MessageKey& k) -> std::optional<MessageId> {
                                             return ms_.personal(P_of(k.src, j), P_of(k.dst, j));
                                         });
                                     };
                                     if (!late) direct();
                                     // first hops: intra-box (to the destination's local index) and inter-box (to its box)
                                     auto box_first = [&](std::uint32_t rr) {
                                         lay.add(box_, maps_[0], [&, rr](std::uint32_t b, const MessageKey& k) -> std::optional<MessageId> {
                                             if (rail_first(k.src, k.dst)) return std::nullopt;
                                             return ms_.personal(P_of(b, k.src), P_of((b + rr) % K_, k.dst));
                                         });
                                     };
                                     auto rail_first_hop = [&](std::uint32_t rr) {
                                         lay.add(rail_, maps_[1], [&, rr](std::uint32_t j, const MessageKey& k) -> std::optional<MessageId> {
                                             const std::uint32_t i2 = (j + rr) % B_;
                                             if (!rail_first(j, i2)) return std::nullopt;
                                             return ms_.personal(P_of(k.src, j), P_of(k.dst, i2));
                                         });
                                     };
                                     // second hops: inter-box for the intra-box first, intra-box for the others
                                     auto rail_second = [&](std::uint32_t rr) {
                                         lay.add(rail_, maps_[1], [&, rr](std::uint32_t j, const MessageKey& k) -> std::optional<MessageId> {
                                             const std::uint32_t i = (j + rr) % B_;
                                             if (rail_first(i, j)) return std::nullopt;
                                             return ms_.personal(P_of(k.src, i), P_of(k.dst, j));
                                         });
                                     };
                                     auto box_second = [&](std::uint32_t rr) {
                                         lay.add(box_, maps_[0], [&, rr](std::uint32_t b, const MessageKey& k) -> std::optional<MessageId> {
                                             if (!rail_first(k.src, k.dst)) return std::nullopt;
                                             return ms_.personal(P_of((b + rr) % K_, k.src), P_of(b, k.dst));
                                         });
                                     };
                                     // first hops in the composition's order; second hops intra-box first
                                     // messages' before the others' (o = 0), after them (o = 1), or interleaved
                                     copies_in_order(o, K_, B_, box_first, rail_first_hop);
                                     copies_in_order(o == 2 ? 2 : 1 - o, K_, B_, box_second, rail_second, true);
                                     if (late) direct();
                                 }});
            }
    }

    /// One composition laid out, compacted and verified; a limit that stops it is its `stop`.
    struct Outcome {
        bool done = false;
        Composition comp;
        std::optional<SendTable> table;
        double verify_seconds = 0;
        std::string stop;
    };

    void compose(const Candidate& c, Outcome& o) {
        try {
            limits_.check("hierarchical compositions");
            Layout lay;
            lay.limits = {opt_.deadline, opt_.memory};
            c.lay(lay);
            o.comp = {c.name, lay.offset, 0};
            // Compaction holds about 120 bytes per transfer (its two hash maps and the moved copy),
            // reserved together with what the compositions on other threads have reserved.
            const std::uint64_t need = 120 * std::uint64_t{lay.transfers.size()};
            const std::uint64_t others = reserved_.fetch_add(need);
            const struct Unreserve {
                std::atomic<std::uint64_t>& r;
                std::uint64_t n;
                ~Unreserve() { r.fetch_sub(n); }
            } unreserve{reserved_, need};
            if (!opt_.memory.fits(need + others))
                throw std::runtime_error(fmt::format("memory limit: compacting {} transfers would need about {} ({} more for the "
                                                     "compositions on other threads), {} of the limit {} is left",
                                                     lay.transfers.size(), format_bytes(need), format_bytes(others),
                                                     format_bytes(opt_.memory.left()), format_bytes(opt_.memory.limit())));
            SendTable table = compact_schedule(in_, std::move(lay.transfers), 4, opt_.deadline, opt_.memory);
            if (reversed_) table = reduce_scatter_from_allgather(table, opt_.deadline);
            limits_.check("hierarchical compositions");
            const auto v0 = Clock::now();
            VerifyOptions vo;
            vo.deadline = opt_.deadline;
            VerifyReport rep = verify_direct(table, vo);
            o.verify_seconds = seconds_since(v0);
            if (rep.verdict() == "unknown") throw std::runtime_error("time limit (verifying a composition)");
            COLLSCHED_ASSERT_MSG(rep.holds(), fmt::format("the hierarchical composition '{}' for {} on {} does not verify: {}", c.name,
                                                          whole_.collective.to_string(), t_.spec(),
                                                          rep.violations.empty() ? std::string(rep.verdict()) : rep.violations.front().detail));
            o.comp.steps = table.steps();
            o.table = std::move(table);
            o.done = true;
        } catch (const std::runtime_error& e) {
            o.stop = e.what();
        }
    }

    /// Every composition on its own, on `jobs` threads; the results are taken in the order of
    /// the compositions, so the answer does not depend on the threads.
    /// More threads than cores only share the cores, each composition taking longer (past the
    /// time limit) while all of them hold their memory: at most one per core.
    void compose_all() {
        std::vector<Outcome> outcomes(cands_.size());
        const unsigned threads = std::min(opt_.phase.jobs, std::max(1u, std::thread::hardware_concurrency()));
        run_indexed(cands_.size(), threads, [&](std::size_t i) {
            compose(cands_[i], outcomes[i]);
            return outcomes[i].stop.empty();
        });
        for (Outcome& o : outcomes) {
            if (!o.stop.empty() && res_.reason.empty()) res_.reason = o.stop;
            if (!o.done) continue;
            res_.verify_seconds += o.verify_seconds;
            res_.compositions.push_back(o.comp);
            if (!res_.table || o.table->steps() < res_.table->steps()) {
                res_.table = std::move(o.table);
                res_.best = o.comp.name;
            }
        }
    }

    const SynthInstance& whole_;
    const HierarchicalOptions& opt_;
    const Clock::time_point t0_;
    const Topology& t_;
    const BoxLayout layout_;
    const std::uint32_t B_, K_;  ///< processors per box, boxes
    const bool reversed_;        ///< reduce_scatter, composed as its dual allgather
    const SynthInstance in_;     ///< the forward instance
    const bool gather_;
    const Messages ms_;
    Deadlined limits_;
    std::atomic<std::uint64_t> reserved_{0};  ///< bytes the compositions running now have reserved
    HierarchicalResult res_;
    std::shared_ptr<const Topology> subs_[2];
    std::vector<std::vector<ChannelId>> maps_[2];
    SendTable box_, rail_;  ///< the phases' schedules (copies: res_.phases grows)
    std::vector<Candidate> cands_;
};

}  // namespace

HierarchicalResult hierarchical_synthesize(const SynthInstance& whole, const HierarchicalOptions& opt) {
    std::string why;
    try {
        why = hierarchical_problem(whole, RunLimits{opt.deadline, opt.memory});
    } catch (const LimitReached& e) {  // the check of every copy did not finish: nothing composed
        HierarchicalResult r;
        if (auto L = find_boxes(*whole.topology)) r.layout = *L;
        r.reason = e.what();
        return r;
    }
    if (!why.empty()) throw InputError(why);
    return HierarchicalSynthesis(whole, opt).run();
}

}  // namespace collsched
