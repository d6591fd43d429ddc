#include "verifier/check/direct.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <exception>
#include <limits>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"
#include "verifier/check/by_message.hpp"
#include "verifier/check/composite.hpp"
#include "verifier/check/findings.hpp"
#include "verifier/check/limit_poll.hpp"

namespace collsched {

namespace {

using detail::Findings;
using detail::never;

using detail::Hop;
using detail::MessageGroups;

/// The checker's state for one table; each pass is a member function.
class Checker {
public:
    Checker(const SendTable& t, const VerifyOptions& opt, VerifyReport& r)
        : t_(t), topo_(*t.topology), ms_(t.messages()), opt_(opt), found_(r, opt.max_violations) {}

    /// Pass 1; with `count_messages` it also counts the transfers per bucket of messages for
    /// by_message (so the regroup needs no pass of its own over the table).
    void by_step(bool count_messages);
    /// Pass 2; with `threads` >= 2 the messages are split into two halves of about equal
    /// transfers, checked by two threads.
    void by_message(unsigned threads);
    void queue_intervals();

private:
    /// Throws LimitReached once the deadline has passed or (VerifyOptions::memory_limit) the resident size has reached
    /// the memory budget: every step, and every 4096 messages. The check of a reduction holds about 130 to 280 bytes
    /// per transfer (rail 128 x 8 allreduce in three pieces, 12.6 million transfers: 1.6 GB).
    void poll(bool now) { limits_(now); }
    std::string node(Node n) const { return topo_.node_name(n); }
    std::string chan(ChannelId c) const {
        const Channel& ch = topo_.channel(c);
        return fmt::format("{}->{}", node(ch.from), node(ch.to));
    }
    std::string msg(MessageId m) const { return ms_.name(m); }
    std::string msg_list(const std::vector<MessageId>& ms) const { return message_list(ms_, ms); }

    void check_ports(std::size_t begin, std::size_t end);
    void check_groups(std::size_t begin, std::size_t end);
    void queue_bound();
    void start_by_message();
    std::vector<MessageId> goal_messages() const;
    void message(MessageId m, const Hop* first, const Hop* last);
    void injections(MessageId m, Node origin, const Hop* first, const Hop* last);
    void hop_message(MessageId m, const Hop* first, const Hop* last);
    void wormhole_message(MessageId m, const Hop* first, const Hop* last);
    void note(std::uint32_t router, std::vector<Step>& one, Step step);
    void routes(MessageId m, const Hop* first, const Hop* last);
    void routers_no_replicate(MessageId m);
    void routers_replicate(MessageId m);
    void goals(MessageId m, const MessageKey& k, bool initial);
    template <class F>
    void goal_processors(const MessageKey& k, bool initial, F&& f) const;

    const SendTable& t_;
    const Topology& topo_;
    Messages ms_;
    const VerifyOptions& opt_;
    Findings found_;

    // by-step state
    std::vector<std::uint32_t> sends_, recvs_;
    std::vector<std::vector<MessageId>> port_msgs_;
    std::vector<std::uint64_t> group_load_;

    // by-message state
    std::vector<Step> since_;            ///< per node: first step at whose end it holds the message
    std::vector<std::uint32_t> touched_;
    /// One arrival or departure of the current message at a router: 16 bytes, so that the
    /// per-message sort moves little. The key packs (router, step, arrival after departure), the
    /// sort order.
    struct RouterEvent {
        std::uint64_t key;
        ChannelId channel;
        std::uint32_t router() const { return static_cast<std::uint32_t>(key >> 33); }
        Step step() const { return static_cast<Step>((key >> 1) & 0xFFFFFFFFu); }
        bool departure() const { return (key & 1) == 0; }
    };
    std::vector<RouterEvent> events_;
    /// replicate=no, per router of the current message: the step of its one arrival and of its
    /// one departure (never: none yet; `many`: more than one), to skip the sort of events_ when
    /// every router passes one copy on correctly (then there is nothing to report).
    std::vector<Step> one_arrival_, one_departure_;
    std::vector<std::uint32_t> event_routers_;
    static constexpr Step many = never - 1;
    std::vector<ChannelId> route_;
    MessageGroups grouped_;
    std::vector<const Hop*> late_;  ///< hop_message: sends by a processor that does not hold the message yet
    std::vector<detail::WaitInterval> waiting_;  ///< replicate=yes with a queue bound
    std::size_t req_ = 0;
    std::vector<Requirement> reqs_;
    detail::LimitPoll limits_{opt_};
};

// ---------------------------------------------------------------------------------------------
// Pass 1, by step: capacity per (step, channel), ports per (step, processor), and the queue
// bound. Transfers are sorted by (step, channel), so every check is a scan of one step's slice.

void Checker::by_step(bool count_messages) {
    const auto& xs = t_.transfers;
    if (count_messages) grouped_.plan(ms_.size(), xs.size(), t_.steps(), topo_.channels().size());
    count_messages = count_messages && !grouped_.sort;
    // The table must be sorted by (step, channel, message): checked on the way (steps increase
    // from one slice to the next, (channel, message) within a slice).
    bool sorted = true;
    Step previous = 0;
    bool ports = t_.model.ports != Ports::multi;
    bool bound = t_.model.timing == Timing::hop && t_.model.queues == QueueKind::bounded && !t_.model.replicate;
    if (ports) {
        sends_.assign(topo_.processors(), 0);
        recvs_.assign(topo_.processors(), 0);
        port_msgs_.resize(topo_.processors());
    }
    for (std::size_t i = 0; i < xs.size();) {
        poll(true);
        Step s = xs[i].step;
        const std::uint32_t rounds = t_.rounds(s);
        sorted = sorted && (i == 0 || s > previous);
        previous = s;
        std::size_t end = i;
        std::uint64_t last_key = 0;
        auto scan = [&](auto counting) {
            for (; end < xs.size() && xs[end].step == s; ++end) {
                const std::uint64_t key = (std::uint64_t{idx(xs[end].channel)} << 32) | idx(xs[end].message);
                sorted = sorted && key >= last_key;
                last_key = key;
                if constexpr (decltype(counting)::value) grouped_.add(xs[end].message);
            }
        };
        if (count_messages) scan(std::true_type{});
        else scan(std::false_type{});
        for (std::size_t a = i; a < end;) {
            std::size_t b = a;
            while (b < end && xs[b].channel == xs[a].channel) ++b;
            const std::uint32_t cap = topo_.channel(xs[a].channel).cap;
            if (b - a > std::uint64_t{cap} * rounds) {
                if (found_.wants(Property::capacity)) {
                    std::vector<MessageId> ms;
                    for (std::size_t k = a; k < b; ++k) ms.push_back(xs[k].message);
                    std::string detail = fmt::format("{} messages ({}) but capacity {}{}", b - a, msg_list(ms), cap, times_rounds(cap, rounds));
                    found_.add(Property::capacity, {Property::capacity, s, xs[a].channel, std::nullopt, std::move(ms), std::move(detail)});
                } else {
                    found_.count(Property::capacity);
                }
            }
            a = b;
        }
        if (ports) check_ports(i, end);
        if (!topo_.groups().empty()) check_groups(i, end);
        i = end;
    }
    COLLSCHED_ASSERT(sorted);
    if (bound) queue_bound();
}

/// Link groups: per step, the transfers on all channels of a group together, at most its
/// capacity times the step's rounds (docs/semantics.md, "Link groups"). Reported as capacity
/// violations naming the group.
void Checker::check_groups(std::size_t begin, std::size_t end) {
    const auto& xs = t_.transfers;
    const auto& groups = topo_.groups();
    group_load_.assign(groups.size(), 0);
    for (std::size_t k = begin; k < end; ++k)
        for (std::uint32_t g : topo_.groups_of(xs[k].channel)) ++group_load_[g];
    const Step s = xs[begin].step;
    const std::uint32_t rounds = t_.rounds(s);
    for (std::uint32_t g = 0; g < groups.size(); ++g) {
        if (group_load_[g] <= std::uint64_t{groups[g].cap} * rounds) continue;
        if (!found_.wants(Property::capacity)) {
            found_.count(Property::capacity);
            continue;
        }
        std::vector<MessageId> ms;
        for (std::size_t k = begin; k < end; ++k) {
            auto in = topo_.groups_of(xs[k].channel);
            if (std::find(in.begin(), in.end(), g) != in.end()) ms.push_back(xs[k].message);
        }
        std::string detail = group_detail(groups[g], group_load_[g], msg_list(ms), rounds);
        Violation v{Property::capacity, s, std::nullopt, std::nullopt, std::move(ms), std::move(detail)};
        v.group = g;
        found_.add(Property::capacity, std::move(v));
    }
}

void Checker::check_ports(std::size_t begin, std::size_t end) {
    const auto& xs = t_.transfers;
    std::vector<std::uint32_t> touched;
    for (std::size_t k = begin; k < end; ++k) {
        const Channel& c = topo_.channel(xs[k].channel);
        if (topo_.is_processor(c.from)) {
            if (sends_[idx(c.from)]++ == 0 && recvs_[idx(c.from)] == 0) touched.push_back(idx(c.from));
            port_msgs_[idx(c.from)].push_back(xs[k].message);
        }
        if (topo_.is_processor(c.to)) {
            if (recvs_[idx(c.to)]++ == 0 && sends_[idx(c.to)] == 0) touched.push_back(idx(c.to));
            port_msgs_[idx(c.to)].push_back(xs[k].message);
        }
    }
    std::sort(touched.begin(), touched.end());
    Step s = xs[begin].step;
    const std::uint32_t r = t_.rounds(s);  // a step of r rounds: r sends and r receives (single), r transfers (half)
    for (std::uint32_t p : touched) {
        std::uint32_t snd = sends_[p], rcv = recvs_[p];
        bool bad = t_.model.ports == Ports::single ? (snd > r || rcv > r) : snd + rcv > r;
        if (bad) {
            std::string detail = ports_detail(t_.model.ports, snd, rcv, msg_list(port_msgs_[p]), r);
            found_.add(Property::ports, {Property::ports, s, std::nullopt, Node{p}, port_msgs_[p], std::move(detail)});
        }
        sends_[p] = recvs_[p] = 0;
        port_msgs_[p].clear();
    }
}

/// Queue bound with replicate=no. The copies waiting in router r at the boundary after step b
/// (arrived at step <= b, leaving at step >= b+2) number A_r(<= b) - D_r(<= b+1): with FIFO
/// forwarding the departures up to b+1 take the earliest arrivals, all of which are <= b. So
/// the occupancy changes only at arrivals (boundary = step) and departures (boundary = step-1),
/// and two pointers into the step-sorted table visit every boundary where it changes.
void Checker::queue_bound() {
    const auto& xs = t_.transfers;
    const std::size_t N = xs.size();
    std::vector<std::int64_t> occupancy(topo_.nodes(), 0);
    std::vector<std::uint32_t> touched;
    std::size_t arrival = 0, departure = 0;
    while (arrival < N || departure < N) {
        Step b = std::min(arrival < N ? xs[arrival].step : never, departure < N ? xs[departure].step - 1 : never);
        if (b >= t_.steps()) break;  // the boundaries that count are those between steps: 0..T-1
        touched.clear();
        for (; arrival < N && xs[arrival].step == b; ++arrival) {
            Node to = topo_.channel(xs[arrival].channel).to;
            if (topo_.is_processor(to)) continue;
            ++occupancy[idx(to)];
            touched.push_back(idx(to));
        }
        for (; departure < N && xs[departure].step == b + 1; ++departure) {
            Node from = topo_.channel(xs[departure].channel).from;
            if (!topo_.is_processor(from)) --occupancy[idx(from)];
        }
        std::sort(touched.begin(), touched.end());
        touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        for (std::uint32_t r : touched)
            if (occupancy[r] > static_cast<std::int64_t>(t_.model.queue_bound))
                found_.add(Property::queues,
                           {Property::queues, b, std::nullopt, Node{r}, {},
                            fmt::format("{} messages wait in the router after step {} but the queue bound is {}", occupancy[r], b,
                                        t_.model.queue_bound)});
    }
}

// ---------------------------------------------------------------------------------------------
// Pass 2, by message: causality, replication, queue timing, routes and completeness. The
// transfers of one message are few (a path, or a tree for a broadcast), so each message is
// checked on its own with per-node state reset through a touched list.

void Checker::start_by_message() {
    since_.assign(topo_.nodes(), never);
    one_arrival_.assign(topo_.nodes(), never);
    one_departure_.assign(topo_.nodes(), never);
    reqs_ = t_.requirements;
    std::sort(reqs_.begin(), reqs_.end(), [](auto& a, auto& b) { return idx(a.message) < idx(b.message); });
}

/// The messages with goals, in id order (each is checked once, with the messages that move).
std::vector<MessageId> Checker::goal_messages() const {
    std::vector<MessageId> goal_msgs;
    const std::uint32_t P = topo_.processors();
    // Chunk 0 of each goal datum (ids datum * C; the rows give C = 1 ids); reductions: verifier/check/composite.cpp.
    t_.collective.for_each_goal_datum(P, [&](MessageId m) { goal_msgs.push_back(MessageId{idx(m) * ms_.chunks()}); });
    // Every chunk of a goal datum is a goal: the ids above are chunk 0's.
    if (const std::uint32_t C = ms_.chunks(); C > 1) {
        const std::size_t datums = goal_msgs.size();
        for (std::size_t i = 0; i < datums; ++i)
            for (std::uint32_t ch = 1; ch < C; ++ch) goal_msgs.push_back(MessageId{idx(goal_msgs[i]) + ch});  // ids datum * C + chunk
    }
    for (const Requirement& q : reqs_) goal_msgs.push_back(q.message);
    auto by_id = [](MessageId a, MessageId b) { return idx(a) < idx(b); };
    if (!std::is_sorted(goal_msgs.begin(), goal_msgs.end(), by_id)) std::sort(goal_msgs.begin(), goal_msgs.end(), by_id);
    goal_msgs.erase(std::unique(goal_msgs.begin(), goal_msgs.end()), goal_msgs.end());
    return goal_msgs;
}

void Checker::by_message(unsigned threads) {
    start_by_message();
    const std::vector<MessageId> goal_msgs = goal_messages();
    // Each message once, in id order: the messages that move (grouped by message), and between
    // them the goals that do not move. `visit` checks the goals in [first goal, `goals_end`) and
    // the buckets [b0, b1), whose ids lie below the goals from `goals_end` on.
    auto visit = [&](Checker& c, std::size_t gi, std::size_t goals_end, std::uint64_t b0, std::uint64_t b1,
                     detail::BucketScratch& scratch) {
        auto goals_below = [&](std::uint64_t bound) {
            for (; gi < goals_end && idx(goal_msgs[gi]) < bound; ++gi) c.message(goal_msgs[gi], nullptr, nullptr);
        };
        detail::for_each_message_in(grouped_, b0, b1, scratch, [&](MessageId m, const Hop* first, const Hop* last) {
            goals_below(idx(m));
            if (gi < goals_end && goal_msgs[gi] == m) ++gi;
            c.message(m, first, last);
        });
        goals_below(std::numeric_limits<std::uint64_t>::max());
    };
    if (grouped_.sort || t_.transfers.empty()) {
        std::size_t gi = 0;
        detail::for_each_message(t_.transfers, grouped_, [&](MessageId m, const Hop* first, const Hop* last) {
            for (; gi < goal_msgs.size() && idx(goal_msgs[gi]) < idx(m); ++gi) message(goal_msgs[gi], nullptr, nullptr);
            if (gi < goal_msgs.size() && goal_msgs[gi] == m) ++gi;
            message(m, first, last);
        });
        for (; gi < goal_msgs.size(); ++gi) message(goal_msgs[gi], nullptr, nullptr);
        return;
    }
    detail::regroup(t_.transfers, grouped_, [this] { poll(true); });
    const std::uint64_t split = threads >= 2 ? detail::half_split(grouped_) : grouped_.buckets;
    if (split == 0 || split >= grouped_.buckets) {
        detail::BucketScratch scratch;
        visit(*this, 0, goal_msgs.size(), 0, grouped_.buckets, scratch);
        return;
    }
    // Two threads: this checker takes the buckets below `split` (the lower message ids) and the
    // goals below them, a second checker with its own state and report the rest. Its findings
    // come after this one's in id order, so merging them keeps the report of a single pass:
    // the same counts, the same first max_violations counterexamples of each property.
    const std::uint64_t first_id = split << grouped_.shift;
    const auto goals_split = static_cast<std::size_t>(
        std::lower_bound(goal_msgs.begin(), goal_msgs.end(), first_id, [](MessageId m, std::uint64_t id) { return idx(m) < id; }) -
        goal_msgs.begin());
    VerifyReport upper_report;
    Checker upper(t_, opt_, upper_report);
    upper.start_by_message();
    detail::BucketScratch scratch, upper_scratch;
    std::exception_ptr failed;
    std::thread helper([&] {
        try {
            visit(upper, goals_split, goal_msgs.size(), split, grouped_.buckets, upper_scratch);
        } catch (...) {
            failed = std::current_exception();
        }
    });
    try {
        visit(*this, 0, goals_split, 0, split, scratch);
    } catch (...) {
        helper.join();
        throw;
    }
    helper.join();
    if (failed) std::rethrow_exception(failed);
    std::array<std::uint64_t, property_count> kept{};
    for (const Violation& v : upper_report.violations) ++kept[static_cast<std::size_t>(v.property)];
    for (Violation& v : upper_report.violations) found_.add(v.property, std::move(v));
    for (std::size_t p = 0; p < property_count; ++p) found_.count(static_cast<Property>(p), upper_report.violation_count[p] - kept[p]);
    waiting_.insert(waiting_.end(), upper.waiting_.begin(), upper.waiting_.end());
}

void Checker::message(MessageId m, const Hop* first, const Hop* last) {
    poll(false);
    touched_.clear();
    // The message's key and whether it is initial data, once per message (Messages::key divides).
    const MessageKey key = ms_.key(m);
    const bool initial = t_.collective.initial(ms_, m);
    const Node origin{key.src};
    if (initial) {
        since_[idx(origin)] = 0;
        touched_.push_back(idx(origin));
    }
    if (first != last) {
        if (t_.model.inject_once && initial) injections(m, origin, first, last);
        if (t_.model.timing == Timing::hop) hop_message(m, first, last);
        else wormhole_message(m, first, last);
        if (opt_.fixed_routes) routes(m, first, last);
    }
    goals(m, key, initial);
    for (std::uint32_t v : touched_) since_[v] = never;
}

void Checker::note(std::uint32_t router, std::vector<Step>& one, Step step) {
    if (one_arrival_[router] == never && one_departure_[router] == never) event_routers_.push_back(router);
    one[router] = one[router] == never ? step : many;
}

/// inject=once: an initial datum m is injected once and only spreads away from its source: the
/// source sends it over one transfer, and every other transfer moves it one hop farther from the
/// source (so no processor relays it back into the network and no copy turns back). A second
/// injection (by step, then channel: the order of the hops) or a transfer that does not move
/// away is a replication violation.
void Checker::injections(MessageId m, Node origin, const Hop* first, const Hop* last) {
    const Hop* once = nullptr;
    for (const Hop* p = first; p != last; ++p) {
        const Channel& c = topo_.channel(p->channel);
        if (c.from == origin) {
            if (!once) {
                once = p;
                continue;
            }
            found_.add(Property::replication,
                       {Property::replication, p->step, p->channel, origin, {m},
                        fmt::format("processor {} injects {} again in step {} on {} (first in step {} on {}); inject=once: each "
                                    "source injects its datum exactly once",
                                    node(origin), msg(m), p->step, chan(p->channel), once->step, chan(once->channel))});
        } else if (topo_.distance(origin, c.to) != topo_.distance(origin, c.from) + 1) {
            found_.add(Property::replication,
                       {Property::replication, p->step, p->channel, c.from, {m},
                        fmt::format("{} sends {} in step {} on {}, back toward its source {}; inject=once: a datum is injected "
                                    "once and only moves away from its source",
                                    node(c.from), msg(m), p->step, chan(p->channel), node(origin))});
        }
    }
}

void Checker::hop_message(MessageId m, const Hop* first, const Hop* last) {
    // One pass in step order: a processor's send in step s needs it to hold the message from the
    // end of step s-1, and every transfer that can give it that comes before in the group, so
    // checking against the arrivals so far gives the verdict of checking against all of them.
    // The sentence names the first step it holds the message at all: reported after the pass.
    late_.clear();
    for (const Hop* p = first; p != last; ++p) {
        const Hop& x = *p;
        const Channel& c = topo_.channel(x.channel);
        if (topo_.is_processor(c.from)) {
            if (since_[idx(c.from)] > x.step - 1) late_.push_back(p);
        } else {
            note(idx(c.from), one_departure_, x.step);
        }
        const std::uint32_t to = idx(c.to);
        if (since_[to] == never) touched_.push_back(to);
        since_[to] = std::min(since_[to], x.step);
        if (!topo_.is_processor(c.to)) note(to, one_arrival_, x.step);
    }
    for (const Hop* p : late_) {
        const Hop& x = *p;
        const Node from = topo_.channel(x.channel).from;
        std::string detail =
            since_[idx(from)] == never
                ? fmt::format("{} sends {} but never holds it", node(from), msg(m))
                : fmt::format("{} sends {} in step {} but holds it only from the end of step {}", node(from), msg(m), x.step,
                              since_[idx(from)]);
        found_.add(Property::causality, {Property::causality, x.step, x.channel, from, {m}, std::move(detail)});
    }
    // replicate=no: when every router of the message receives one copy and passes it on in a
    // later step (in the next step under queues=none), routers_no_replicate would find nothing:
    // its events are not even built. Otherwise they go through it in their canonical order.
    bool clean = !t_.model.replicate;
    const bool none = t_.model.queues == QueueKind::none;
    for (std::uint32_t r : event_routers_) {
        const Step a = one_arrival_[r], d = one_departure_[r];
        if (a == never || d == never || a == many || d == many || a >= d || (none && d != a + 1)) clean = false;
        one_arrival_[r] = one_departure_[r] = never;
    }
    const bool routers = !event_routers_.empty();
    event_routers_.clear();
    if (!routers || clean) return;
    events_.clear();
    auto event = [](std::uint32_t router, Step step, bool departure, ChannelId c) {
        return RouterEvent{(std::uint64_t{router} << 33) | (std::uint64_t{step} << 1) | (departure ? 0u : 1u), c};
    };
    for (const Hop* p = first; p != last; ++p) {
        const Channel& c = topo_.channel(p->channel);
        if (!topo_.is_processor(c.from)) events_.push_back(event(idx(c.from), p->step, true, p->channel));
        if (!topo_.is_processor(c.to)) events_.push_back(event(idx(c.to), p->step, false, p->channel));
    }
    // Per router, in step order; at equal steps departures first (an arrival in step s cannot
    // serve a departure in step s), then by channel: of two same-step departures the one on
    // the lower channel takes the copy, so the extra one reported is fixed.
    std::sort(events_.begin(), events_.end(), [](const RouterEvent& a, const RouterEvent& b) {
        return a.key != b.key ? a.key < b.key : idx(a.channel) < idx(b.channel);
    });
    if (t_.model.replicate) routers_replicate(m);
    else routers_no_replicate(m);
}

/// Fixed routes (both timings): every transfer of a personalized message m(s,d) lies on the
/// topology's route from s to d. Under wormhole timing the same rule checks every channel of
/// every worm of m(s,d), one violation per transfer off the route (as under hop timing).
void Checker::routes(MessageId m, const Hop* first, const Hop* last) {
    MessageKey k = ms_.key(m);
    if (k.kind == MessageKind::personal) {
        route_.clear();
        topo_.route(Node{k.src}, Node{k.dst}, route_);
        for (const Hop* p = first; p != last; ++p) {
            const Hop& x = *p;
            if (std::find(route_.begin(), route_.end(), x.channel) == route_.end())
                found_.add(Property::routes, {Property::routes, x.step, x.channel, std::nullopt, {m},
                                              fmt::format("{} crosses {}, which is not on its route {} -> {}", msg(m),
                                                          chan(x.channel), k.src, k.dst)});
        }
    }
}

/// replicate=no: each copy that enters a router leaves it exactly once. Departures are served
/// FIFO by the earliest unconsumed arrival of an earlier step; a departure with no such copy is
/// a causality violation if the router had not received the message yet, and a replication
/// violation if it had (it forwards more copies than it received). Under multicast=routers the
/// departures of one step from a router that multicasts take one copy together.
void Checker::routers_no_replicate(MessageId m) {
    const bool none = t_.model.queues == QueueKind::none;
    std::vector<const RouterEvent*> arrivals;
    for (std::size_t i = 0; i < events_.size();) {
        std::uint32_t r = events_[i].router();
        arrivals.clear();
        std::size_t head = 0;
        // multicast=routers: the departures of one step from a router that multicasts share the
        // copy the first of them took (one copy in, several out)
        const bool multicast = t_.model.multicast_routers && topo_.can_multicast(Node{r});
        Step took = never;
        for (; i < events_.size() && events_[i].router() == r; ++i) {
            const RouterEvent& e = events_[i];
            if (!e.departure()) {
                arrivals.push_back(&e);
                continue;
            }
            if (multicast && took == e.step()) continue;
            if (head < arrivals.size()) {
                took = e.step();
                Step a = arrivals[head++]->step();
                if (none && e.step() != a + 1)
                    found_.add(Property::queues,
                               {Property::queues, a + 1, e.channel, Node{r}, {m},
                                fmt::format("{} entered {} in step {} and leaves in step {}; with queues=none it must leave in step {}",
                                            msg(m), node(Node{r}), a, e.step(), a + 1)});
            } else if (arrivals.empty()) {
                found_.add(Property::causality, {Property::causality, e.step(), e.channel, Node{r}, {m},
                                                 fmt::format("{} forwards {} in step {} but has not received it", node(Node{r}), msg(m), e.step())});
            } else {
                found_.add(Property::replication,
                           {Property::replication, e.step(), e.channel, Node{r}, {m},
                            fmt::format("{} forwards {} in step {} but received only {} cop{} and has sent them on; "
                                        "routers do not replicate (replicate=no)",
                                        node(Node{r}), msg(m), e.step(), arrivals.size(), arrivals.size() == 1 ? "y" : "ies")});
            }
        }
        if (none)
            for (; head < arrivals.size(); ++head)
                found_.add(Property::queues, {Property::queues, arrivals[head]->step() + 1, arrivals[head]->channel, Node{r}, {m},
                                              fmt::format("{} entered {} in step {} and never leaves; with queues=none it must leave in step {}",
                                                          msg(m), node(Node{r}), arrivals[head]->step(), arrivals[head]->step() + 1)});
    }
}

/// replicate=yes: a router holds the message from its first arrival and may send it on any
/// number of channels. With queues=none every send must follow an arrival of the step before;
/// with a bound, the message waits from its first arrival to its last send.
void Checker::routers_replicate(MessageId m) {
    const bool none = t_.model.queues == QueueKind::none;
    const bool bound = t_.model.queues == QueueKind::bounded;
    for (std::size_t i = 0; i < events_.size();) {
        std::uint32_t r = events_[i].router();
        Step first_arrival = never, last_arrival = never, last_departure = 0;
        for (; i < events_.size() && events_[i].router() == r; ++i) {
            const RouterEvent& e = events_[i];
            if (!e.departure()) {
                first_arrival = std::min(first_arrival, e.step());
                last_arrival = e.step();
                continue;
            }
            if (first_arrival == never) {
                found_.add(Property::causality, {Property::causality, e.step(), e.channel, Node{r}, {m},
                                                 fmt::format("{} forwards {} in step {} but has not received it", node(Node{r}), msg(m), e.step())});
                continue;
            }
            last_departure = e.step();
            if (none && last_arrival + 1 != e.step())
                found_.add(Property::queues,
                           {Property::queues, e.step(), e.channel, Node{r}, {m},
                            fmt::format("{} sends {} in step {} but received it last in step {}; with queues=none a router "
                                        "sends only in the step after an arrival",
                                        node(Node{r}), msg(m), e.step(), last_arrival)});
        }
        if (bound && first_arrival != never && last_departure >= first_arrival + 2)
            waiting_.push_back({r, first_arrival, last_departure - 2});
    }
}

template <class F>
void Checker::goal_processors(const MessageKey& k, bool initial, F&& f) const {
    const Collective& c = t_.collective;
    const std::uint32_t P = topo_.processors();
    if (initial) c.for_each_sink(P, k, f);  // custom: only the requirements
}

void Checker::goals(MessageId m, const MessageKey& k, bool initial) {
    auto check = [&](Node p) {
        if (since_[idx(p)] != never) return;
        if (!found_.wants(Property::completeness)) return found_.count(Property::completeness);  // counted, not shown
        found_.add(Property::completeness, {Property::completeness, 0, std::nullopt, p, {m},
                                            fmt::format("{} never reaches processor {}", msg(m), node(p))});
    };
    goal_processors(k, initial, check);
    while (req_ < reqs_.size() && idx(reqs_[req_].message) < idx(m)) ++req_;
    for (; req_ < reqs_.size() && reqs_[req_].message == m; ++req_) check(reqs_[req_].at);
}

/// Wormhole timing: within a round a message travels a whole path. A transfer is legal if its
/// sender held the message at the end of the previous round (processors) or received it earlier
/// in the same round through a legal transfer (a worm passing through). Found by a fixpoint
/// over the round's transfers of this message, which are few.
void Checker::wormhole_message(MessageId m, const Hop* first, const Hop* last) {
    std::vector<const Hop*> round;
    std::vector<char> ok;
    std::vector<std::uint32_t> reached;
    for (const Hop* p = first; p != last;) {
        Step r = p->step;
        round.clear();
        for (; p != last && p->step == r; ++p) round.push_back(p);
        ok.assign(round.size(), 0);
        reached.clear();
        bool changed = true;
        while (changed) {
            changed = false;
            for (std::size_t i = 0; i < round.size(); ++i) {
                if (ok[i]) continue;
                const Channel& c = topo_.channel(round[i]->channel);
                bool held = (topo_.is_processor(c.from) && since_[idx(c.from)] <= r - 1) ||
                            std::find(reached.begin(), reached.end(), idx(c.from)) != reached.end();
                if (held) {
                    ok[i] = 1;
                    reached.push_back(idx(c.to));
                    changed = true;
                }
            }
        }
        // replicate=no: a router passes on at most as many copies as it receives in the round
        if (!t_.model.replicate) {
            std::vector<std::pair<std::uint32_t, int>> balance;
            for (std::size_t i = 0; i < round.size(); ++i) {
                if (!ok[i]) continue;
                const Channel& c = topo_.channel(round[i]->channel);
                if (!topo_.is_processor(c.to)) balance.push_back({idx(c.to), 1});
                if (!topo_.is_processor(c.from)) balance.push_back({idx(c.from), -1});
            }
            std::sort(balance.begin(), balance.end());
            for (std::size_t i = 0; i < balance.size();) {
                int sum = 0;
                std::size_t j = i;
                for (; j < balance.size() && balance[j].first == balance[i].first; ++j) sum += balance[j].second;
                if (sum < 0)
                    found_.add(Property::replication, {Property::replication, r, std::nullopt, Node{balance[i].first}, {m},
                                                       fmt::format("{} sends {} more often than it receives it in round {}",
                                                                   node(Node{balance[i].first}), msg(m), r)});
                i = j;
            }
        }
        for (std::size_t i = 0; i < round.size(); ++i) {
            const Channel& c = topo_.channel(round[i]->channel);
            if (!ok[i]) {
                found_.add(Property::causality, {Property::causality, r, round[i]->channel, c.from, {m},
                                                 fmt::format("{} sends {} in round {} but does not hold it", node(c.from), msg(m), r)});
                continue;
            }
            if (topo_.is_processor(c.to)) {
                if (since_[idx(c.to)] == never) touched_.push_back(idx(c.to));
                since_[idx(c.to)] = std::min(since_[idx(c.to)], r);
            }
        }
    }
}

/// Queue bound with replicate=yes: sweep the waiting intervals collected per (router, message).
void Checker::queue_intervals() { detail::sweep_waiting(waiting_, topo_.nodes(), t_.model.queue_bound, found_); }

}  // namespace

VerifyReport verify_direct(const SendTable& t, const VerifyOptions& opt) {
    if (std::string why = combine_problem(t.model); !why.empty()) throw InputError(why);
    auto start = std::chrono::steady_clock::now();
    VerifyReport r;
    r.engine = "direct";
    r.steps = t.steps();
    r.transfers = t.transfers.size();
    r.cost = table_cost(t);
    Checker c(t, opt, r);
    const bool composite = detail::needs_composite_check(t);
    bool stopped = false;
    try {
        c.by_step(!composite);  // asserts that the table is sorted
        if (composite) {
            detail::check_composites(t, opt, r);  // combined values and bundles: verifier/check/composite.cpp
        } else {
            // Two threads for the per-message pass of large tables (below about 2^18 transfers the
            // pass takes about a millisecond and a thread is not worth starting).
            unsigned threads = opt.threads;
            if (threads == 0) threads = t.transfers.size() >= (1u << 18) && std::thread::hardware_concurrency() >= 2 ? 2 : 1;
            c.by_message(threads);
            c.queue_intervals();
        }
    } catch (const LimitReached& e) {
        stopped = true;
        r.notes.push_back(fmt::format("{}: the direct check stopped before it ended; what it did not find violated is unknown", e.what()));
    }
    std::stable_sort(r.violations.begin(), r.violations.end(), [](const Violation& a, const Violation& b) {
        return std::tuple(static_cast<int>(a.property), a.step) < std::tuple(static_cast<int>(b.property), b.step);
    });
    for (std::size_t i = 0; i < property_count; ++i)
        r.status[i] = r.violation_count[i] ? Status::violated : stopped ? Status::unknown : Status::holds;
    auto skip = [&](Property p) { r.status[static_cast<std::size_t>(p)] = Status::skipped; };
    if (t.model.ports == Ports::multi) skip(Property::ports);
    if (t.model.timing == Timing::wormhole || t.model.queues == QueueKind::unbounded) {
        if (r.violation_count[static_cast<std::size_t>(Property::queues)] == 0) skip(Property::queues);
    }
    if (!opt.fixed_routes) skip(Property::routes);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

}  // namespace collsched
