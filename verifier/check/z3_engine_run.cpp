// The Z3 engine's run: the wormhole legality it ranks, the post-arrival departures, the
// certificate check, one query per property family, and verify_z3() around it all.
#include "verifier/check/z3_engine_impl.hpp"
#include "compiler/table/step_runs.hpp"

namespace collsched::z3e {

/// The wormhole `legal` set, computed here only to rank legal arrivals and departures (Z3
/// derives its own and checks that the ranked sets are exactly it).
std::vector<char> Engine::wormhole_legal() const {
    const auto& xs = t_.transfers;
    std::vector<U64> order(N_);
    for (U64 i = 0; i < N_; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](U64 a, U64 b) {
        return std::tuple(idx(xs[a].message), xs[a].step) < std::tuple(idx(xs[b].message), xs[b].step);
    });
    std::vector<char> legal(N_, 0);
    std::unordered_map<U64, Step> since;  // processor -> first round after which it holds the message
    for (U64 a = 0; a < N_;) {
        MessageId m = xs[order[a]].message;
        since.clear();
        if (t_.collective.initial(ms_, m)) since[idx(ms_.origin(m))] = 0;
        U64 end_m = a;
        while (end_m < N_ && xs[order[end_m]].message == m) ++end_m;
        for (U64 b = a; b < end_m;) {
            Step r = xs[order[b]].step;
            U64 end_r = b;
            while (end_r < end_m && xs[order[end_r]].step == r) ++end_r;
            std::set<U64> reached;
            for (bool changed = true; changed;) {
                changed = false;
                for (U64 q = b; q < end_r; ++q) {
                    U64 x = order[q];
                    if (legal[x]) continue;
                    U64 f = from(x);
                    auto it = since.find(f);
                    bool held = (!is_router(f) && it != since.end() && it->second + 1 <= r) || reached.count(f);
                    if (held) {
                        legal[x] = 1;
                        reached.insert(to(x));
                        changed = true;
                    }
                }
            }
            for (U64 q = b; q < end_r; ++q)
                if (legal[order[q]] && !is_router(to(order[q])) && !since.count(to(order[q]))) since[to(order[q])] = r;
            b = end_r;
        }
        a = end_m;
    }
    return legal;
}

/// wormhole_legal for tables with composites: rounds in order, since holding a value or a
/// bundle depends on several messages. Mirrors the rules of composite_rules().
std::vector<char> Engine::wormhole_legal_composite() const {
    const auto& xs = t_.transfers;
    const U64 P = topo_.processors();
    std::vector<std::set<U64>> got(P);  // per processor: messages held (parts of bundles too)
    for (std::uint32_t k = 0; k < P; ++k)
        if (t_.collective.initial(ms_, ms_.value(k))) got[k].insert(idx(ms_.value(k)));
    auto span = [&](U64 m, U64& lo, U64& hi) {  // values and combined values
        MessageKey k = ms_.key(MessageId{static_cast<std::uint32_t>(m)});
        if (k.kind == MessageKind::value) lo = hi = k.src;
        else if (k.kind == MessageKind::combined) lo = k.src, hi = k.dst;
        else return false;
        return true;
    };
    auto has = [&](U64 p, U64 m) {
        MessageId id{static_cast<std::uint32_t>(m)};
        if (partials_ && partial_of(ms_, id)) return true;  // decided by verifier/check/z3_partial.cpp (the pchecked rule)
        if (got[p].count(m) || (t_.collective.initial(ms_, id) && idx(ms_.origin(id)) == p)) return true;
        U64 lo = 0, hi = 0;
        if (span(m, lo, hi)) {
            std::set<U64> ends;  // x such that a(lo..x) can be formed
            for (bool more = true; more;) {
                more = false;
                for (U64 g : got[p]) {
                    U64 a = 0, z = 0;
                    if (!span(g, a, z) || z > hi || ends.count(z)) continue;
                    if (a == lo || (a > lo && ends.count(a - 1))) ends.insert(z), more = true;
                }
            }
            return ends.count(hi) > 0;
        }
        if (ms_.is_composite(id) && ms_.composite(id).kind == MessageKind::bundle) {
            for (MessageId q : ms_.composite(id).parts)
                if (!got[p].count(idx(q)) && !(t_.collective.initial(ms_, q) && idx(ms_.origin(q)) == p)) return false;
            return true;
        }
        return false;
    };
    std::vector<char> legal(N_, 0);
    for_each_step_run(xs, [&](Step, U64 a, U64 e) {
        std::set<std::pair<U64, U64>> reached;  // (node, message) reached in the round
        for (bool changed = true; changed;) {
            changed = false;
            for (U64 x = a; x < e; ++x) {
                if (legal[x]) continue;
                U64 f = from(x), m = idx(xs[x].message);
                if (!reached.count({f, m}) && (is_router(f) || !has(f, m))) continue;
                legal[x] = 1;
                reached.insert({to(x), m});
                changed = true;
            }
        }
        for (U64 x = a; x < e; ++x) {
            if (!legal[x] || is_router(to(x))) continue;
            ms_.for_each_part(xs[x].message, [&](MessageId q) { got[to(x)].insert(idx(q)); });
            got[to(x)].insert(idx(xs[x].message));
        }
        return true;
    });
    return legal;
}

/// Post-first-arrival router departures (the replication FIFO, replicate=yes queue intervals):
/// ranked per (message, router) by step; the ranks go to decode() as post_rank_.
void Engine::post_departures() {
    const auto& xs = t_.transfers;
    const z3::sort IX = *IX_, ST = *ST_, ND = *ND_, MS = *MS_;
    z3::expr i = var("i", IX), s = var("s", ST), m = var("m", MS), r = var("r", ND);
    rel_.emplace("mem_post", dl_.relation("mem_post", {IX, MS, ND, ST}));
    dl_.rule("mem_post", R("mem_post")(i, m, r, s), {R("postdep")(i, m, r, s)});
    std::unordered_map<U64, Step> first;  // m * nodes + router -> first arrival step
    const U64 nodes = topo_.nodes();
    for (U64 x = 0; x < N_; ++x)
        if (is_router(to(x))) {
            U64 key = idx(xs[x].message) * nodes + to(x);
            auto it = first.find(key);
            if (it == first.end() || xs[x].step < it->second) first[key] = xs[x].step;
        }
    std::vector<Member> post;
    std::vector<U64> which;
    for (U64 x = 0; x < N_; ++x) {
        if (!is_router(from(x))) continue;
        auto it = first.find(idx(xs[x].message) * nodes + from(x));
        if (it == first.end() || it->second >= xs[x].step) continue;
        post.push_back({{x, 0}, {idx(xs[x].message), from(x), 0}, xs[x].step});
        which.push_back(x);
    }
    ranking(replicate_ ? Property::queues : Property::replication, "post", R("mem_post"), {i}, {m, r}, s, false, post);
    std::vector<U64> rk = ranks_of(post);
    post_rank_.assign(N_, sentinel_);
    for (std::size_t a = 0; a < which.size(); ++a) post_rank_[which[a]] = rk[a];
}

/// The buffer rule is decided by its own bit-vector query; here its sends count as held, and
/// the query's violations join causality and completeness (merge_partials).
std::optional<detail::PartialAnswer> Engine::partial_query() {
    detail::PartialAnswer partial = detail::z3_partials(t_, static_cast<unsigned>(std::max<U64>(1, remaining_ms())));
    rel_.emplace("pchecked", dl_.relation("pchecked", {*IX_}));
    for (std::uint64_t i : partial.checked) dl_.fact(R("pchecked"), {i});
    z3::expr i = var("i", *IX_);
    dl_.rule("partial_held", R(hop_ ? "early" : "legal")(i), {R("pchecked")(i)});
    return partial;
}

/// The router query's violations join causality, replication and queues (the Datalog program
/// has no rules for router sends of such tables: their families hold there unless this adds).
void Engine::merge_switches(detail::SwitchAnswer& routers) {
    merge_query("the switches' query", routers.unknown, routers.reason,
                {{Property::causality, &routers.causality}, {Property::replication, &routers.replication}, {Property::queues, &routers.queues}});
}

/// The violations of a query beside the Datalog program join their families (a skipped family
/// stays skipped); when the query could not decide, its families are unknown, with its reason.
void Engine::merge_query(const char* query, bool unknown, const std::string& reason,
                         std::initializer_list<std::pair<Property, std::vector<Violation>*>> lists) {
    for (auto [p, list] : lists) {
        const auto a = static_cast<std::size_t>(p);
        if (report_.status[a] == Status::skipped) continue;
        if (unknown) {
            set_status(p, Status::unknown);
            report_.notes.push_back(fmt::format("{}: unknown: {}: {}", to_string(p), query, reason));
            continue;
        }
        for (Violation& v : *list) found_[a].push_back(std::move(v));
        if (!found_[a].empty() && report_.status[a] == Status::holds) set_status(p, Status::violated);
    }
}

/// Which families run: as the direct checker, ports only with single/half ports, queues only
/// under hop timing with a queue rule, routes only with fixed routes. The others are skipped.
std::array<bool, property_count> Engine::families() {
    std::array<bool, property_count> run{};
    run.fill(true);
    auto at = [](Property p) { return static_cast<std::size_t>(p); };
    if (t_.model.ports == Ports::multi) run[at(Property::ports)] = false;
    if (!hop_ || t_.model.queues == QueueKind::unbounded) run[at(Property::queues)] = false;
    if (!opt_.fixed_routes) run[at(Property::routes)] = false;
    for (std::size_t a = 0; a < property_count; ++a)
        if (!run[a]) set_status(static_cast<Property>(a), Status::skipped);
    return run;
}

/// "time limit of N ms reached" once the time is up, else Z3's own reason.
std::string Engine::unknown_reason(const std::string& z3_reason) const {
    return remaining_ms() == 0 ? fmt::format("time limit of {} ms reached", opt_.timeout_ms) : "Z3 answered unknown (" + z3_reason + ")";
}

/// The certificate lemma first: a family whose certificate Z3 rejects (or cannot check in time)
/// is unknown, whatever its own query says. Returns why, per family ("" when not blocked).
std::array<std::string, property_count> Engine::check_certificates() {
    std::array<std::string, property_count> blocked;
    Datalog::Answer a = dl_.query(R("bad_cert"), remaining_ms());
    if (a.result == z3::sat) {
        for (const auto& tu : a.tuples) {
            Property user = cert_users_.at(tu[0]);
            blocked[static_cast<std::size_t>(user)] =
                fmt::format("internal error: Z3 rejected the {} rank certificate (a bug in collsched)", cert_names_.at(tu[0]));
        }
    } else if (a.result == z3::unknown) {
        for (Property user : cert_users_)
            blocked[static_cast<std::size_t>(user)] = fmt::format("the rank certificates could not be checked: {}", unknown_reason(a.reason));
    }
    return blocked;
}

/// One family's query and its status; link groups are capacity too.
void Engine::answer(Property p, const std::string& blocked) {
    if (!blocked.empty()) {
        set_status(p, Status::unknown);
        report_.notes.push_back(fmt::format("{}: unknown: {}", to_string(p), blocked));
        return;
    }
    U64 left = remaining_ms();
    if (left == 0) {
        set_status(p, Status::unknown);
        report_.notes.push_back(fmt::format("{}: unknown: time limit of {} ms reached before its query", to_string(p), opt_.timeout_ms));
        return;
    }
    Datalog::Answer ans = dl_.query(R(bad_.at(p)), left);
    if (p == Property::capacity && groups_ && ans.result != z3::unknown) {
        Datalog::Answer ga = dl_.query(R("bad_group"), remaining_ms());
        if (ga.result == z3::sat) {
            decode_groups(ga.tuples);
            if (ans.result == z3::unsat) ans.result = z3::sat, ans.tuples.clear();
        } else if (ga.result == z3::unknown) {
            ans = ga;
        }
    }
    if (ans.result == z3::unsat) {
        set_status(p, Status::holds);
    } else if (ans.result == z3::sat) {
        decode(p, ans.tuples);
        set_status(p, found_[static_cast<std::size_t>(p)].empty() ? Status::holds : Status::violated);
    } else {
        set_status(p, Status::unknown);
        report_.notes.push_back(fmt::format("{}: unknown: {}", to_string(p), unknown_reason(ans.reason)));
    }
}

/// The partials query's violations join causality and completeness.
void Engine::merge_partials(detail::PartialAnswer& partial) {
    merge_query("the partials query", partial.unknown, partial.reason,
                {{Property::causality, &partial.causality}, {Property::completeness, &partial.completeness}});
}

/// The violations into the report: by step, at most max_violations per family, all counted.
void Engine::publish() {
    for (std::size_t a = 0; a < property_count; ++a) {
        auto& v = found_[a];
        std::stable_sort(v.begin(), v.end(), [](const Violation& x, const Violation& y) { return x.step < y.step; });
        report_.violation_count[a] = v.size();
        for (std::size_t n = 0; n < v.size() && n < opt_.max_violations; ++n) report_.violations.push_back(std::move(v[n]));
    }
}

/// The program (z3_engine.cpp), then the certificate check and one query per family.
void Engine::run() {
    declare();
    base_facts();
    base_rules();
    if (hop_ && (!replicate_ || bounded_) && !switches_) post_departures();
    capacity_rules();
    ports_rules();
    causality_rules();
    if (comp_) {
        composite_facts();
        composite_rules();
    }
    std::optional<detail::PartialAnswer> partial;
    if (partials_) partial = partial_query();
    std::optional<detail::SwitchAnswer> routers;
    if (switches_) routers = detail::z3_switches(t_, static_cast<unsigned>(std::max<U64>(1, remaining_ms())));
    replication_rules();
    queue_rules();
    route_rules();
    completeness_rules();
    const std::array<bool, property_count> run = families();
    const std::array<std::string, property_count> blocked = check_certificates();
    for (std::size_t a = 0; a < property_count; ++a)
        if (run[a]) answer(static_cast<Property>(a), blocked[a]);
    if (partial) merge_partials(*partial);
    if (routers) merge_switches(*routers);
    publish();
}

/// What is left of a run that failed inside: its size and cost, every property unknown, and why.
VerifyReport unknown_report(const VerifyReport& r, std::string why) {
    VerifyReport u;
    u.engine = "z3";
    u.steps = r.steps;
    u.transfers = r.transfers;
    u.cost = r.cost;
    u.status.fill(Status::unknown);
    u.notes.push_back(std::move(why));
    return u;
}

}  // namespace collsched::z3e

namespace collsched {

VerifyReport verify_z3(const SendTable& t, const Z3Options& opt) {
    COLLSCHED_ASSERT(t.is_sorted());
    if (!t.transfers.empty() && t.transfers.front().step < 1)
        throw InputError("a transfer in step 0: steps are numbered from 1 (time 0 is the initial state)");
    if (t.model.inject_once)
        throw InputError("the Z3 engine does not encode inject=once (each source injects its datum once); use the direct "
                         "checker (--engine direct) or simulate");
    // Switch functions outside the models they are defined for: refused as the direct checker refuses them.
    if (std::string why = combine_problem(t.model); !why.empty()) throw InputError(why);
    if (t.model.ports == Ports::half && !t.step_rounds.empty())
        throw InputError("the Z3 engine does not encode half-duplex ports in steps of several rounds (r transfers in all per "
                         "processor); use the direct checker (--engine direct) or simulate");
    auto start = Clock::now();
    VerifyReport r;
    r.engine = "z3";
    r.steps = t.steps();
    r.transfers = t.transfers.size();
    r.cost = table_cost(t);
    try {
        z3e::Engine e(t, opt, r);
        e.run();
    } catch (const z3::exception& ex) {
        r = z3e::unknown_report(r, fmt::format("Z3 failed: {}", ex.msg()));
    } catch (const z3e::EngineError& ex) {
        r = z3e::unknown_report(r, fmt::format("internal error: {}", ex.what()));
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
}

}  // namespace collsched
