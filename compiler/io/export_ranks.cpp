#include "compiler/io/export_ranks.hpp"

#include "compiler/table/partials.hpp"
#include "compiler/table/step_runs.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

constexpr std::uint64_t none = ~std::uint64_t{0};

struct Arrival {
    Step step;
    std::uint64_t index;  ///< the transfer that brought the copy into the router
    std::uint32_t uses = 0;
};

/// Traces copies through routers (see endpoint_view in the header for the matching rule).
class Tracer {
public:
    Tracer(const SendTable& t, const std::vector<Transfer>& tr)
        : table_(t), topo_(*t.topology), ms_(t.messages()), tr_(tr), wormhole_(t.model.timing == Timing::wormhole),
          origin_(tr.size(), none) {}

    void run() {
        for_each_step_run(tr_, [&](Step, std::size_t b, std::size_t e) {
            if (wormhole_) round(b, e);
            else step(b, e);
            return true;
        });
    }

    const std::vector<std::uint64_t>& origin() const { return origin_; }
    std::uint64_t stranded() const { return count([](const Arrival& a) { return a.uses == 0; }); }
    std::uint64_t fanout() const { return count([](const Arrival& a) { return a.uses > 1; }); }

private:
    static std::uint64_t key(Node n, MessageId m) { return (std::uint64_t{idx(n)} << 32) | idx(m); }
    const Channel& ch(std::uint64_t i) const { return topo_.channel(tr_[i].channel); }

    template <class P>
    std::uint64_t count(P p) const {
        std::uint64_t c = 0;
        for (const auto& [k, list] : arrivals_)
            for (const Arrival& a : list) c += p(a) ? 1 : 0;
        return c;
    }

    void arrive(std::uint64_t i) {
        Node to = ch(i).to;
        if (!topo_.is_processor(to)) arrivals_[key(to, tr_[i].message)].push_back({tr_[i].step, i});
    }

    /// Hop timing: departures of step s use arrivals of earlier steps only.
    void step(std::uint64_t b, std::uint64_t e) {
        for (std::uint64_t i = b; i < e; ++i) {
            if (topo_.is_processor(ch(i).from)) origin_[i] = i;
            else if (!match(i)) throw not_causal(i);
        }
        for (std::uint64_t i = b; i < e; ++i) arrive(i);
    }

    /// Wormhole timing: a worm passes through routers within its round, so departures may use
    /// arrivals of the same round once those are traced themselves; passes until no progress.
    void round(std::uint64_t b, std::uint64_t e) {
        std::vector<std::uint64_t> pending;
        for (std::uint64_t i = b; i < e; ++i) {
            if (topo_.is_processor(ch(i).from)) {
                origin_[i] = i;
                arrive(i);
            } else {
                pending.push_back(i);
            }
        }
        bool progress = true;
        while (!pending.empty() && progress) {
            progress = false;
            std::vector<std::uint64_t> left;
            for (std::uint64_t i : pending) {
                if (match(i)) {
                    arrive(i);
                    progress = true;
                } else {
                    left.push_back(i);
                }
            }
            pending = std::move(left);
        }
        if (!pending.empty()) throw not_causal(pending.front());
    }

    bool match(std::uint64_t i) {
        auto it = arrivals_.find(key(ch(i).from, tr_[i].message));
        if (it == arrivals_.end()) return false;
        std::vector<Arrival>& list = it->second;
        const Step s = tr_[i].step;
        const Step want = wormhole_ ? s : s - 1;
        const Node next = ch(i).to;
        auto eligible = [&](const Arrival& a) { return wormhole_ ? a.step <= s : a.step < s; };
        auto pick = [&](auto&& pred) -> Arrival* {
            for (Arrival& a : list)
                if (eligible(a) && pred(a)) return &a;
            return nullptr;
        };
        Arrival* a = pick([&](const Arrival& x) { return x.uses == 0 && x.step == want && ch(x.index).from != next; });
        if (!a) a = pick([&](const Arrival& x) { return x.uses == 0 && x.step == want; });
        if (!a) a = pick([&](const Arrival& x) { return x.uses == 0; });
        if (!a) a = pick([](const Arrival&) { return true; });
        if (!a) return false;
        ++a->uses;
        origin_[i] = origin_[a->index];
        return true;
    }

    InputError not_causal(std::uint64_t i) const {
        if (std::optional<std::string> r = in_switch_reduction(table_))
            return InputError(fmt::format("cannot build the endpoint view: {} (in-switch reduction): endpoint transfers go from processor to "
                                          "processor, so MSCCL-IR, per-rank JSON and Chakra traces have no in-switch reduction (an "
                                          "MSCCL++ plan's switch channels do: --format mscclpp)",
                                          *r));
        return InputError(fmt::format("cannot build the endpoint view: router {} sends {} in step {} but has received no copy of "
                                      "it before (the table breaks causality; `collsched verify` shows where)",
                                      topo_.node_name(ch(i).from), ms_.name(tr_[i].message), tr_[i].step));
    }

    const SendTable& table_;
    const Topology& topo_;
    Messages ms_;
    const std::vector<Transfer>& tr_;
    bool wormhole_;
    std::vector<std::uint64_t> origin_;
    std::unordered_map<std::uint64_t, std::vector<Arrival>> arrivals_;
};

}  // namespace

std::optional<std::string> in_switch_reduction(const SendTable& t) {
    if (!t.model.combine_routers) return std::nullopt;
    const Topology& topo = *t.topology;
    auto key = [](Node n, MessageId m) { return (std::uint64_t{idx(n)} << 32) | idx(m); };
    std::unordered_set<std::uint64_t> brought;  // (router, message) some transfer brings
    for (const Transfer& x : t.transfers)
        if (const Node to = topo.channel(x.channel).to; !topo.is_processor(to)) brought.insert(key(to, x.message));
    for (const Transfer& x : t.transfers) {
        const Node from = topo.channel(x.channel).from;
        if (!topo.is_processor(from) && topo.can_reduce(from) && !brought.contains(key(from, x.message)))
            return fmt::format("router {} sends {} in step {}, a value it combined from the partials it received", topo.node_name(from),
                               t.messages().name(x.message), x.step);
    }
    return std::nullopt;
}

namespace {

void write_message_list(fmt::memory_buffer& out, const Messages& ms, const std::vector<MessageId>& list) {
    auto it = std::back_inserter(out);
    out.push_back('[');
    for (std::size_t i = 0; i < list.size(); ++i) fmt::format_to(it, "{}\"{}\"", i ? ", " : "", ms.name(list[i]));
    out.push_back(']');
}

}  // namespace

EndpointView endpoint_view(const SendTable& table) {
    std::vector<Transfer> copy;
    const std::vector<Transfer>* tr = &table.transfers;
    if (!table.is_sorted()) {
        copy = table.transfers;
        std::sort(copy.begin(), copy.end());
        tr = &copy;
    }
    const Topology& topo = *table.topology;
    Tracer tracer(table, *tr);
    tracer.run();
    EndpointView view;
    const auto& origin = tracer.origin();
    for (std::uint64_t i = 0; i < tr->size(); ++i) {
        const Transfer& x = (*tr)[i];
        Node to = topo.channel(x.channel).to;
        if (!topo.is_processor(to)) continue;
        const Transfer& o = (*tr)[origin[i]];
        view.transfers.push_back({o.step, topo.channel(o.channel).from, to, x.message, x.step});
    }
    std::sort(view.transfers.begin(), view.transfers.end());
    view.stranded = tracer.stranded();
    view.fanout = tracer.fanout();

    std::vector<Transfer> rebuilt;
    rebuilt.reserve(tr->size());
    if (view.stranded || view.fanout || cut_through_hops(topo, table.model.timing, view.transfers, rebuilt)) {
        view.cut_through = false;
    } else {
        std::sort(rebuilt.begin(), rebuilt.end());
        view.cut_through = rebuilt == *tr;
    }
    return view;
}

std::optional<std::string> cut_through_hops(const Topology& topo, Timing timing, std::span<const EndpointTransfer> list,
                                            std::vector<Transfer>& out) {
    std::vector<ChannelId> route;
    Messages ms(topo.processors());
    for (const EndpointTransfer& e : list) {
        if (e.src == e.dst)
            return fmt::format("processor {} sends {} to itself in step {}; the cut-through rule needs two different processors",
                               idx(e.src), ms.name(e.message), e.sent);
        route.clear();
        topo.route(e.src, e.dst, route);
        if (route.empty()) return fmt::format("there is no route from {} to {} in {}", idx(e.src), idx(e.dst), topo.spec());
        Step expect = timing == Timing::wormhole ? e.sent : e.sent + static_cast<Step>(route.size()) - 1;
        if (e.arrived != expect)
            return fmt::format("{} sent by {} to {} in step {} arrives in step {}, but cut-through along the route ({} "
                               "channel{}) arrives in step {}",
                               ms.name(e.message), idx(e.src), idx(e.dst), e.sent, e.arrived, route.size(),
                               route.size() == 1 ? "" : "s", expect);
        for (std::size_t k = 0; k < route.size(); ++k)
            out.push_back({timing == Timing::wormhole ? e.sent : e.sent + static_cast<Step>(k), route[k], e.message});
    }
    return std::nullopt;
}

std::vector<MessageId> initial_messages(const SendTable& t, Node p) {
    Messages ms = t.messages();
    std::uint32_t P = t.topology->processors();
    std::vector<MessageId> out;
    const std::uint32_t C = t.collective.chunks;  // every chunk of every datum it starts with
    for (std::uint32_t d = 0; d < P; ++d)
        for (std::uint32_t c = 0; c < C; ++c)
            if (t.collective.initial(ms, ms.personal(idx(p), d, c))) out.push_back(ms.personal(idx(p), d, c));
    for (std::uint32_t c = 0; c < C; ++c)
        if (t.collective.initial(ms, ms.broadcast(idx(p), c))) out.push_back(ms.broadcast(idx(p), c));
    for (std::uint32_t c = 0; c < C; ++c)
        if (t.collective.initial(ms, ms.value(idx(p), c))) out.push_back(ms.value(idx(p), c));
    return out;
}

std::vector<std::vector<MessageId>> final_messages(const SendTable& t) {
    std::uint32_t P = t.topology->processors();
    std::vector<std::vector<MessageId>> out(P);
    t.collective.for_each_goal(P, [&](MessageId m, Node at) { out[idx(at)].push_back(m); });
    for (const Requirement& r : t.requirements) out[idx(r.at)].push_back(r.message);
    if (uses_partials(t)) {  // reductions under the buffer rule: the goal partials, interned with the table
        const Messages ms = t.messages();
        t.collective.for_each_partial_goal(P, table_chunks(t), [&](std::uint32_t c, std::uint32_t hi, Node at) {
            if (auto id = find_partial(ms, SourceSet::range(0, hi), c)) out[idx(at)].push_back(*id);
        });
    } else if (const Composites* reg = t.composites.get()) {  // reduce, prefix: the goals a(lo..hi), interned with the table
        t.collective.for_each_value_goal(P, [&](std::uint32_t lo, std::uint32_t hi, Node at) {
            if (auto id = reg->find({MessageKind::combined, lo, hi, {}, {}})) out[idx(at)].push_back(*id);
        });
    }
    for (auto& list : out) {
        std::sort(list.begin(), list.end(), [](MessageId a, MessageId b) { return idx(a) < idx(b); });
        list.erase(std::unique(list.begin(), list.end()), list.end());
    }
    return out;
}

/// Writes the header, then one object per rank with one line per active step, then (for tables
/// that are not cut-through regular) the hops. The endpoint view is sorted twice by index, once
/// by sender and once by receiver, so every rank's steps come out in order without a map.
void write_table_ranks(const SendTable& t, fmt::memory_buffer& out, const Flush& flush, std::string_view file) {
    const Topology& topo = *t.topology;
    const std::uint32_t P = topo.processors();
    // Every rank lists its initial data: under `custom` every m(s,d) is initial at s, so
    // custom on 65,534 processors would list 4.3e9 messages (about 40 GB). Bounded like the goals.
    if (std::uint64_t n = t.collective.initial_count(P); n > max_goal_pairs)
        throw InputError(fmt::format("cannot write the per-rank view of {} on {}: its ranks would list {} initial messages, "
                                     "more than the {} collsched writes",
                                     t.collective.to_string(), topo.spec(), n, max_goal_pairs));
    EndpointView view = endpoint_view(t);
    Messages ms = t.messages();
    auto it = std::back_inserter(out);
    write_json_header(t, t.uses_bandwidth_model() ? ranks_format_2 : ranks_format, out, file);
    fmt::format_to(it, " \"steps\": {}, \"processors\": {}, \"endpoint_transfers\": {}, \"hops\": \"{}\",\n \"ranks\": [",
                   t.steps(), P, view.transfers.size(), view.cut_through ? "cut-through" : "listed");

    const auto& e = view.transfers;
    std::vector<std::uint64_t> by_src(e.size()), by_dst(e.size());
    std::iota(by_src.begin(), by_src.end(), 0);
    std::iota(by_dst.begin(), by_dst.end(), 0);
    std::stable_sort(by_src.begin(), by_src.end(), [&](auto a, auto b) { return idx(e[a].src) < idx(e[b].src); });
    std::stable_sort(by_dst.begin(), by_dst.end(), [&](auto a, auto b) {
        return std::tuple(idx(e[a].dst), e[a].arrived, idx(e[a].src), idx(e[a].message), e[a].sent) <
               std::tuple(idx(e[b].dst), e[b].arrived, idx(e[b].src), idx(e[b].message), e[b].sent);
    });
    std::vector<std::vector<MessageId>> finals = final_messages(t);
    std::size_t si = 0, ri = 0;
    for (std::uint32_t p = 0; p < P; ++p) {
        fmt::format_to(it, "{}\n  {{\"rank\": {},\n   \"initial\": ", p ? "," : "", p);
        write_message_list(out, ms, initial_messages(t, Node{p}));
        fmt::format_to(it, ",\n   \"final\": ");
        write_message_list(out, ms, finals[p]);
        fmt::format_to(it, ",\n   \"steps\": [");
        bool first_step = true;
        while ((si < by_src.size() && idx(e[by_src[si]].src) == p) || (ri < by_dst.size() && idx(e[by_dst[ri]].dst) == p)) {
            bool has_send = si < by_src.size() && idx(e[by_src[si]].src) == p;
            bool has_recv = ri < by_dst.size() && idx(e[by_dst[ri]].dst) == p;
            Step s = std::min(has_send ? e[by_src[si]].sent : ~Step{0}, has_recv ? e[by_dst[ri]].arrived : ~Step{0});
            fmt::format_to(it, "{}\n    {{\"step\": {}, \"send\": [", first_step ? "" : ",", s);
            first_step = false;
            for (bool first = true; si < by_src.size() && idx(e[by_src[si]].src) == p && e[by_src[si]].sent == s; ++si) {
                const EndpointTransfer& x = e[by_src[si]];
                fmt::format_to(it, "{}{{\"to\": {}, \"msg\": \"{}\", \"arrive\": {}}}", first ? "" : ", ", idx(x.dst),
                               ms.name(x.message), x.arrived);
                first = false;
            }
            fmt::format_to(it, "], \"recv\": [");
            for (bool first = true; ri < by_dst.size() && idx(e[by_dst[ri]].dst) == p && e[by_dst[ri]].arrived == s; ++ri) {
                const EndpointTransfer& x = e[by_dst[ri]];
                fmt::format_to(it, "{}{{\"from\": {}, \"msg\": \"{}\", \"sent\": {}}}", first ? "" : ", ", idx(x.src),
                               ms.name(x.message), x.sent);
                first = false;
            }
            fmt::format_to(it, "]}}");
            if (out.size() > table_flush_at) flush(out);
        }
        fmt::format_to(it, "{}]}}", first_step ? "" : "\n   ");
    }
    fmt::format_to(it, "\n ]");
    if (!view.cut_through) {
        fmt::format_to(it, ",\n \"transfers\": [");
        std::vector<std::string> names = node_names(topo);
        for (std::uint64_t i = 0; i < t.transfers.size(); ++i) {
            const Transfer& x = t.transfers[i];
            const Channel& c = topo.channel(x.channel);
            fmt::format_to(it, "{}\n  {{\"step\": {}, \"from\": \"{}\", \"to\": \"{}\", \"msg\": \"{}\"}}", i ? "," : "", x.step,
                           names[idx(c.from)], names[idx(c.to)], ms.name(x.message));
            if (out.size() > table_flush_at) flush(out);
        }
        fmt::format_to(it, "\n ]");
    }
    fmt::format_to(it, "}}\n");
    flush(out);
}

std::string table_to_ranks(const SendTable& t) {
    return write_to_string([&](fmt::memory_buffer& b, const Flush& f) { write_table_ranks(t, b, f); });
}

}  // namespace collsched
