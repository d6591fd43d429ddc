// The Z3 engine's program: the relations and facts of a table and the Horn rules of every
// property family (verifier/check/z3_engine_impl.hpp has the class; z3_engine_run.cpp runs it).
#include "verifier/check/z3_engine_impl.hpp"

// The encoding in one paragraph (details and soundness arguments: verifier/check/Z3_ENGINE.md).
//
// The table is a set of facts tr(i, step, channel, message) over bit-vector columns, the
// topology is chn(channel, from, to, capacity), proc(node) and rtr(node), the collective is
// init(message, holder) and goal(message, processor), and fixed routes are onroute(message,
// channel). Each property family P is a set of Horn rules that derive bad_P tuples exactly when
// P fails, following the direct checker's semantics; the query `bad_P(x)?` is answered by Z3's
// fixedpoint engine (muZ) with its relational Datalog backend, which computes the least model
// with hash joins. "Nothing derivable" (unsat) is the proof; derived tuples are the
// counterexamples. Joins, existence and absence ("no earlier arrival") are plain Datalog with
// stratified negation. Counting ("more than cap transfers on a channel in a step", queue
// occupancy, FIFO matching) is not expressible in Datalog, so it goes through rank
// certificates: for each group this file numbers the members 0, 1, 2, ... (sorted by a value
// where order matters) and Z3 checks, in a separate query run before any property, that the
// numbering is a bijection onto 0..g-1 of every group it derives itself (and sorted). Then
// "count > c" is "some member has rank >= c", and the k-th smallest value is the member with
// rank k. A wrong certificate can only make that check fail (reported as an internal error, and
// the families that use it as unknown); it can never make a property look proved.

namespace collsched::z3e {

// Column sorts and relations. Widths follow the table, so every value fits and the sentinel
// (all ones in IX) is no rank.
void Engine::declare() {
    hop_ = t_.model.timing == Timing::hop;
    comp_ = t_.has_composites() || t_.collective.combines() || t_.collective.reduces();
    partials_ = uses_partials(t_);
    switches_ = detail::uses_switch_functions(t_.model);
    none_ = hop_ && t_.model.queues == QueueKind::none;
    bounded_ = hop_ && t_.model.queues == QueueKind::bounded;
    replicate_ = t_.model.replicate;
    N_ = t_.transfers.size();
    unsigned ix = bits_for(N_ + 2);
    sentinel_ = (U64{1} << ix) - 1;
    B_ = std::min<U64>(t_.model.queue_bound, N_ + 1);
    IX_ = c_.bv_sort(ix);
    ST_ = c_.bv_sort(bits_for(U64{t_.steps()} + 2));
    CH_ = c_.bv_sort(bits_for(topo_.channels().size()));
    ND_ = c_.bv_sort(bits_for(topo_.nodes()));
    MS_ = c_.bv_sort(bits_for(ms_.size()));
    CODE_ = c_.bv_sort(6);
    rounds_ = !t_.step_rounds.empty();
    groups_ = !topo_.groups().empty();
    GR_ = c_.bv_sort(bits_for(topo_.groups().size() + 1));
    const z3::sort IX = *IX_, ST = *ST_, CH = *CH_, ND = *ND_, MS = *MS_;
    auto rel = [&](const std::string& n, std::vector<z3::sort> cols) { rel_.emplace(n, dl_.relation(n, cols)); };
    if (rounds_) {
        rel("stepcap", {ST, CH, IX});  // the capacity of channel c in step s: cap(c) * rounds(s)
        rel("srnd", {ST, IX});         // the rounds of step s
    }
    if (groups_) {
        rel("ingrp", {*GR_, CH});       // channel c is in group g
        rel("gcap", {ST, *GR_, IX});    // the capacity of group g in step s: cap(g) * rounds(s)
        rel("bad_group", {ST, *GR_});
    }
    // facts
    rel("tr", {IX, ST, CH, MS});
    rel("chn", {CH, ND, ND, IX});
    rel("proc", {ND});
    rel("rtr", {ND});
    rel("init", {MS, ND});
    rel("goal", {MS, ND});
    rel("onroute", {MS, CH});
    rel("succ", {ST, ST});
    // derived
    rel("dep", {IX, MS, ND, ST});
    rel("arr", {IX, MS, ND, ST});
    rel("early", {IX});
    rel("legal", {IX});
    rel("delivered", {MS, ND});
    rel("rdep", {IX, MS, ND, ST});   // departures from routers
    rel("rarr", {IX, MS, ND, ST});   // arrivals at routers
    rel("postdep", {IX, MS, ND, ST});  // router departures after an earlier arrival (hop)
    rel("legal_arr", {IX, MS, ND, ST});
    rel("legal_dep", {IX, MS, ND, ST});
    rel("bad_cert", {*CODE_});
    for (Property p : {Property::capacity, Property::ports, Property::queues, Property::replication, Property::causality,
                       Property::routes, Property::completeness}) {
        std::string n = fmt::format("bad_{}", to_string(p));
        bad_[p] = n;
    }
    rel("bad_capacity", {ST, CH});
    rel("bad_ports", {ST, ND});
    rel("bad_queues", {IX, MS, ND, ST});  // (witness transfer or 0, message, node, boundary/step)
    rel("bad_replication", {IX, MS, ND, ST});
    rel("bad_causality", {IX});
    rel("bad_routes", {IX});
    rel("bad_completeness", {MS, ND});
}

void Engine::base_facts() {
    const auto& xs = t_.transfers;
    for (U64 i = 0; i < N_; ++i) dl_.fact(R("tr"), {i, xs[i].step, idx(xs[i].channel), idx(xs[i].message)});
    auto chans = topo_.channels();
    for (U64 c = 0; c < chans.size(); ++c)
        dl_.fact(R("chn"), {c, idx(chans[c].from), idx(chans[c].to), std::min<U64>(chans[c].cap, N_ + 1)});
    for (U64 v = 0; v < topo_.nodes(); ++v) dl_.fact(R(is_router(v) ? "rtr" : "proc"), {v});
    // Rounds and groups: the capacities of the steps and channels (groups) the table uses,
    // multiplied out here by the model's definition (cap times the step's rounds), capped like chn.
    if (rounds_) {
        U64 last_step = 0, last_channel = ~U64{0};
        for (const Transfer& x : xs) {
            const U64 r = t_.rounds(x.step);
            if (x.step != last_step) dl_.fact(R("srnd"), {x.step, std::min<U64>(r, N_ + 1)});
            if (x.step != last_step || idx(x.channel) != last_channel)
                dl_.fact(R("stepcap"), {x.step, idx(x.channel), std::min<U64>(U64{topo_.channel(x.channel).cap} * r, N_ + 1)});
            last_step = x.step;
            last_channel = idx(x.channel);
        }
    }
    if (groups_) {
        const auto& groups = topo_.groups();
        for (U64 g = 0; g < groups.size(); ++g)
            for (ChannelId c : groups[g].channels) dl_.fact(R("ingrp"), {g, idx(c)});
        std::set<std::pair<U64, U64>> used;
        for (const Transfer& x : xs)
            for (std::uint32_t g : topo_.groups_of(x.channel))
                if (used.emplace(x.step, g).second)
                    dl_.fact(R("gcap"), {x.step, g, std::min<U64>(U64{groups[g].cap} * t_.rounds(x.step), N_ + 1)});
    }
    // succ(t, t+1) around every step used (not for all of 0..T: T can be 2^31 with few transfers).
    {
        std::vector<U64> steps;
        for (const Transfer& x : xs) steps.push_back(x.step);
        std::sort(steps.begin(), steps.end());
        steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
        U64 last = ~U64{0};
        for (U64 s : steps) {
            if (s != 0 && s - 1 != last) dl_.fact(R("succ"), {s - 1, s});
            dl_.fact(R("succ"), {s, s + 1});
            last = s;
        }
    }
    // Initial data (the precondition) for every message that moves or is a goal; goals (the
    // collective's postcondition and the table's requirements). Facts are sets: repeats are harmless.
    std::unordered_set<U64> seen;
    auto initial = [&](U64 m) {
        if (!seen.insert(m).second) return;
        MessageId id{static_cast<std::uint32_t>(m)};
        if (t_.collective.initial(ms_, id)) dl_.fact(R("init"), {m, idx(ms_.origin(id))});
    };
    for (const Transfer& x : xs) initial(idx(x.message));
    auto goal = [&](MessageId m, Node p) {
        dl_.fact(R("goal"), {idx(m), idx(p)});
        initial(idx(m));
    };
    t_.collective.for_each_goal(topo_.processors(), goal);
    for (const Requirement& q : t_.requirements) goal(q.message, q.at);
    if (comp_) {
        // Values combine: every initial a(k) may take part, and so may the parts of bundles.
        for (std::uint32_t k = 0; k < topo_.processors(); ++k) initial(idx(ms_.value(k)));
        if (const Composites* reg = ms_.composites())
            for (const Composite& cp : reg->items())
                for (MessageId q : cp.parts) initial(idx(q));
        if (!partials_) t_.collective.for_each_value_goal(topo_.processors(), [&](std::uint32_t lo, std::uint32_t hi, Node p) {
            auto id = ms_.composites()->find({MessageKind::combined, lo, hi, {}, {}});
            COLLSCHED_ASSERT(id.has_value());  // SendTable::canonicalize_composites interns the goals
            goal(*id, p);
        });
    }
    // Fixed routes of the personalized messages that move (both timings, as the direct checker).
    if (opt_.fixed_routes) {
        std::unordered_set<U64> done;
        std::vector<ChannelId> route;
        for (const Transfer& x : xs) {
            MessageKey k = ms_.key(x.message);
            if (k.kind != MessageKind::personal || !done.insert(idx(x.message)).second) continue;
            route.clear();
            topo_.route(Node{k.src}, Node{k.dst}, route);
            for (ChannelId c : route) dl_.fact(R("onroute"), {idx(x.message), idx(c)});
        }
    }
}

void Engine::base_rules() {
    const z3::sort IX = *IX_, ST = *ST_, CH = *CH_, ND = *ND_, MS = *MS_;
    z3::expr i = var("i", IX), s = var("s", ST), t = var("t", ST), t1 = var("t1", ST);
    z3::expr c = var("c", CH), u = var("u", ND), v = var("v", ND), m = var("m", MS), cap = var("cap", IX);
    dl_.rule("departure", R("dep")(i, m, u, s), {R("tr")(i, s, c, m), R("chn")(c, u, v, cap)});
    dl_.rule("arrival", R("arr")(i, m, v, s), {R("tr")(i, s, c, m), R("chn")(c, u, v, cap)});
    // Every rule below joins at most two relations, so the engine's joins are keyed on their
    // shared columns (a third atom can otherwise be joined as a cross product first).
    dl_.rule("router_departure", R("rdep")(i, m, u, s), {R("dep")(i, m, u, s), R("rtr")(u)});
    dl_.rule("router_arrival", R("rarr")(i, m, v, s), {R("arr")(i, m, v, s), R("rtr")(v)});
    dl_.rule("post_departure", R("postdep")(i, m, u, s), {R("rdep")(i, m, u, s), R("early")(i)});
    // The arithmetic table succ: checked (t1 = t + 1), and present around every step used.
    dl_.rule("cert_succ", R("bad_cert")(num(0, *CODE_)), {R("succ")(t, t1), t1 != t + num(1, ST)});
    rel_.emplace("has_succ", dl_.relation("has_succ", {ST}));
    rel_.emplace("has_pred", dl_.relation("has_pred", {ST}));
    dl_.rule("has_succ", R("has_succ")(t), {R("succ")(t, t1)});
    dl_.rule("has_pred", R("has_pred")(t1), {R("succ")(t, t1)});
    dl_.rule("cert_succ_cover", R("bad_cert")(num(0, *CODE_)), {R("tr")(i, s, c, m), !R("has_succ")(s)});
    dl_.rule("cert_pred_cover", R("bad_cert")(num(0, *CODE_)), {R("tr")(i, s, c, m), !R("has_pred")(s)});
    cert_names_.push_back("succ (the step successor table)");
    cert_users_.push_back(Property::queues);
}

/// The generic rank certificate of one family. Members are derived by Z3 through `mem`
/// (columns id ++ group [++ value]); the certificate is the facts rk_<name>(id ++ group
/// [++ value] ++ [k, kp] [++ kmb]), one per member, numbering each group 0, 1, ... (by value,
/// then id). Z3 checks that every member has a rank fact and every rank fact names a member with
/// its true group and value, that a member has one rank, that a rank occurs once per group,
/// that kp = k - 1 and rank k > 0 has rank k - 1 in its group (so a group of g members has
/// exactly the ranks 0..g-1), with a value that consecutive ranks have non-decreasing values
/// (rank k is then the k-th smallest), and with kmb that kmb = k - B for k >= B. Since the rank
/// facts carry the group and value, the checks and the property rules need no join with `mem`.
z3::func_decl Engine::ranking(Property user, const std::string& name, const z3::func_decl& mem_in,
                              const std::vector<z3::expr>& id, const std::vector<z3::expr>& group,
                              std::optional<z3::expr> value, bool kmb, const std::vector<Member>& members) {
    z3::func_decl mem = mem_in;
    const z3::sort IX = *IX_;
    U64 code = cert_names_.size();
    cert_names_.push_back(name);
    cert_users_.push_back(user);
    z3::expr bad = R("bad_cert")(num(code, *CODE_));
    auto sorts_of = [](const std::vector<z3::expr>& xs) {
        std::vector<z3::sort> out;
        for (const z3::expr& x : xs) out.push_back(x.get_sort());
        return out;
    };
    auto cat = [](auto a, const auto& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    // rk columns: id ++ group ++ [value] ++ [k, kp] ++ [kmb]
    std::vector<z3::expr> key = cat(id, group);
    if (value) key.push_back(*value);
    std::vector<z3::sort> rk_cols = cat(sorts_of(key), std::vector<z3::sort>{IX, IX});
    if (kmb) rk_cols.push_back(IX);
    z3::func_decl rk = dl_.relation("rk_" + name, rk_cols);
    rel_.emplace("rk_" + name, rk);
    std::vector<U64> rank = ranks_of(members);
    for (std::size_t n = 0; n < members.size(); ++n) {
        const Member& mb = members[n];
        U64 k = rank[n];
        std::vector<U64> vals;
        for (std::size_t a = 0; a < id.size(); ++a) vals.push_back(mb.id[a]);
        for (std::size_t a = 0; a < group.size(); ++a) vals.push_back(mb.group[a]);
        if (value) vals.push_back(mb.value);
        vals.push_back(k);
        vals.push_back(k ? k - 1 : sentinel_);
        if (kmb) vals.push_back(k >= B_ ? k - B_ : sentinel_);
        dl_.fact(rk, vals);
    }
    auto copy = [&](const std::vector<z3::expr>& xs, const char* suffix) {
        std::vector<z3::expr> out;
        for (const z3::expr& x : xs) out.push_back(c_.constant((x.decl().name().str() + suffix).c_str(), x.get_sort()));
        return out;
    };
    std::vector<z3::expr> id2 = copy(id, "_2"), grp2 = copy(group, "_2");
    z3::expr k = var("rk_k", IX), kp = var("rk_kp", IX), k2 = var("rk_k2", IX), kp2 = var("rk_kp2", IX);
    z3::expr mb = var("rk_mb", IX), mb2 = var("rk_mb2", IX);
    std::optional<z3::expr> val2;
    if (value) val2 = c_.constant("rk_val2", value->get_sort());
    auto app = [&](const z3::func_decl& f, const std::vector<z3::expr>& args) {
        z3::expr_vector a(c_);
        for (const z3::expr& x : args) a.push_back(x);
        return f(a);
    };
    // rk(ids, grp, val, k, kp, mb)
    auto rk_app = [&](const std::vector<z3::expr>& ids, const std::vector<z3::expr>& grp, std::optional<z3::expr> v,
                      const z3::expr& kk, const z3::expr& kkp, const z3::expr& m) {
        std::vector<z3::expr> a = cat(ids, grp);
        if (value) a.push_back(*v);
        a.push_back(kk);
        a.push_back(kkp);
        if (kmb) a.push_back(m);
        return app(rk, a);
    };
    auto ids_differ = [&](const std::vector<z3::expr>& a, const std::vector<z3::expr>& b) {
        z3::expr_vector d(c_);
        for (std::size_t n = 0; n < a.size(); ++n) d.push_back(a[n] != b[n]);
        return z3::mk_or(d);
    };
    z3::func_decl has = dl_.relation("has_" + name, sorts_of(id));
    z3::func_decl gr = dl_.relation("gr_" + name, cat(sorts_of(group), std::vector<z3::sort>{IX}));
    z3::expr mine = rk_app(id, group, value, k, kp, mb);
    dl_.rule("has_" + name, app(has, id), {mine});
    dl_.rule("gr_" + name, app(gr, cat(group, std::vector<z3::expr>{k})), {mine});
    dl_.rule("cert_" + name + "_cover", bad, {app(mem, key), !app(has, id)});
    dl_.rule("cert_" + name + "_true", bad, {mine, !app(mem, key)});
    dl_.rule("cert_" + name + "_one", bad, {mine, rk_app(id, grp2, val2, k2, kp2, mb2), k != k2});
    dl_.rule("cert_" + name + "_unique", bad, {mine, rk_app(id2, group, val2, k, kp2, mb2), ids_differ(id, id2)});
    dl_.rule("cert_" + name + "_pred", bad, {mine, k != num(0, IX), kp + num(1, IX) != k});
    dl_.rule("cert_" + name + "_gap", bad, {mine, k != num(0, IX), !app(gr, cat(group, std::vector<z3::expr>{kp}))});
    if (value) {
        z3::func_decl gv = dl_.relation("gv_" + name, cat(sorts_of(group), std::vector<z3::sort>{IX, value->get_sort()}));
        dl_.rule("gv_" + name, app(gv, cat(group, std::vector<z3::expr>{k, *value})), {mine});
        dl_.rule("cert_" + name + "_sorted", bad,
                 {mine, k != num(0, IX), app(gv, cat(group, std::vector<z3::expr>{kp, *val2})), z3::ugt(*val2, *value)});
    }
    if (kmb) dl_.rule("cert_" + name + "_kmb", bad, {mine, z3::uge(k, num(B_, IX)), mb + num(B_, IX) != k});
    return rk;
}

// ---------------------------------------------------------------------------------------------
// Property families. Each derives bad_<family> tuples exactly when the family fails.

/// capacity: more transfers on (step, channel) than its capacity. Ranks number each group;
/// count > cap iff some member has rank >= cap.
void Engine::capacity_rules() {
    const z3::sort IX = *IX_, ST = *ST_, CH = *CH_, ND = *ND_, MS = *MS_;
    z3::expr i = var("i", IX), s = var("s", ST), c = var("c", CH), m = var("m", MS), u = var("u", ND), v = var("v", ND);
    z3::expr k = var("k", IX), kp = var("kp", IX), cap = var("cap", IX);
    rel_.emplace("mem_cap", dl_.relation("mem_cap", {IX, ST, CH}));
    dl_.rule("mem_cap", R("mem_cap")(i, s, c), {R("tr")(i, s, c, m)});
    std::vector<Member> members;
    for (U64 x = 0; x < N_; ++x) members.push_back({{x, 0}, {t_.transfers[x].step, idx(t_.transfers[x].channel), 0}, 0});
    z3::func_decl rk = ranking(Property::capacity, "cap", R("mem_cap"), {i}, {s, c}, std::nullopt, false, members);
    if (rounds_) dl_.rule("capacity", R("bad_capacity")(s, c), {rk(i, s, c, k, kp), R("stepcap")(s, c, cap), z3::uge(k, cap)});
    else dl_.rule("capacity", R("bad_capacity")(s, c), {rk(i, s, c, k, kp), R("chn")(c, u, v, cap), z3::uge(k, cap)});
    if (!groups_) return;
    // Link groups: the transfers on the channels of group g in step s, ranked per (s, g); one
    // member per (transfer, group), so the member id is (i, g).
    z3::expr g = var("g", *GR_);
    rel_.emplace("mem_grp", dl_.relation("mem_grp", {IX, *GR_, ST, *GR_}));
    dl_.rule("mem_grp", R("mem_grp")(i, g, s, g), {R("tr")(i, s, c, m), R("ingrp")(g, c)});
    std::vector<Member> gmembers;
    for (U64 x = 0; x < N_; ++x)
        for (std::uint32_t gi : topo_.groups_of(t_.transfers[x].channel)) gmembers.push_back({{x, gi}, {t_.transfers[x].step, gi, 0}, 0});
    z3::func_decl grk = ranking(Property::capacity, "grp", R("mem_grp"), {i, g}, {s, g}, std::nullopt, false, gmembers);
    z3::expr_vector args(c_);
    for (const z3::expr& a : {i, g, s, g, k, kp}) args.push_back(a);
    dl_.rule("group", R("bad_group")(s, g), {grk(args), R("gcap")(s, g, cap), z3::uge(k, cap)});
}

/// ports: single = two sends or two receives of a processor in one step; half = two transfers
/// of any direction. "Two" is rank 1 in the (step, processor) group.
void Engine::ports_rules() {
    if (t_.model.ports == Ports::multi) return;
    const z3::sort IX = *IX_, ST = *ST_, CH = *CH_, ND = *ND_, MS = *MS_;
    z3::expr i = var("i", IX), s = var("s", ST), c = var("c", CH), m = var("m", MS), u = var("u", ND), v = var("v", ND);
    z3::expr p = var("p", ND), k = var("k", IX), kp = var("kp", IX), cap = var("cap", IX);
    for (const char* dir : {"snd", "rcv"}) {
        std::string mem = fmt::format("mem_{}", dir);
        rel_.emplace(mem, dl_.relation(mem, {IX, ST, ND}));
        bool send = dir[0] == 's';
        dl_.rule(mem, R(mem)(i, s, p), {send ? R("dep")(i, m, p, s) : R("arr")(i, m, p, s), R("proc")(p)});
        std::vector<Member> members;
        for (U64 x = 0; x < N_; ++x) {
            U64 node = send ? from(x) : to(x);
            if (!is_router(node)) members.push_back({{x, 0}, {t_.transfers[x].step, node, 0}, 0});
        }
        z3::func_decl rk = ranking(Property::ports, dir, R(mem), {i}, {s, p}, std::nullopt, false, members);
        if (rounds_) {  // a step of r rounds allows r sends and r receives: rank r is one too many
            z3::expr r = var("r", IX);
            dl_.rule(std::string("ports_two_") + dir, R("bad_ports")(s, p), {rk(i, s, p, k, kp), R("srnd")(s, r), z3::uge(k, r)});
        } else {
            dl_.rule(std::string("ports_two_") + dir, R("bad_ports")(s, p), {rk(i, s, p, k, kp), k != num(0, IX)});
        }
    }
    if (t_.model.ports == Ports::half) {
        z3::expr j = var("j", IX);
        rel_.emplace("sends_at", dl_.relation("sends_at", {ST, ND}));
        rel_.emplace("recvs_at", dl_.relation("recvs_at", {ST, ND}));
        dl_.rule("sends_at", R("sends_at")(s, p), {R("mem_snd")(i, s, p)});
        dl_.rule("recvs_at", R("recvs_at")(s, p), {R("mem_rcv")(j, s, p)});
        dl_.rule("ports_half", R("bad_ports")(s, p), {R("sends_at")(s, p), R("recvs_at")(s, p)});
    }
}

/// causality. hop: a transfer from u in step s needs u to hold the message at the end of step
/// s-1: u is its initial holder, or some transfer delivered it to u in an earlier step (any
/// transfer, as the direct checker: one broken hop is reported once, not again downstream).
/// wormhole: the least fixpoint `legal` of "the sender held the message before the round, or a
/// legal transfer of this round reached it"; every transfer outside it is a violation.
void Engine::causality_rules() {
    const z3::sort IX = *IX_, ST = *ST_, ND = *ND_, MS = *MS_;
    z3::expr i = var("i", IX), j = var("j", IX), s = var("s", ST), s2 = var("s2", ST), m = var("m", MS), u = var("u", ND);
    if (hop_) {
        dl_.rule("held_before", R("early")(i), {R("dep")(i, m, u, s), R("arr")(j, m, u, s2), z3::ult(s2, s)});
        dl_.rule("held_initially", R("early")(i), {R("dep")(i, m, u, s), R("init")(m, u)});
        // Routers with switch functions: whether a router holds what it sends depends on the order
        // of its sends (verifier/check/z3_switch.cpp decides every router send); here they count as held.
        if (switches_) dl_.rule("router_send_decided", R("early")(i), {R("rdep")(i, m, u, s)});
        dl_.rule("causality", R("bad_causality")(i), {R("dep")(i, m, u, s), !R("early")(i)});
    } else {
        rel_.emplace("pdep", dl_.relation("pdep", {IX, MS, ND, ST}));
        dl_.rule("processor_departure", R("pdep")(i, m, u, s), {R("dep")(i, m, u, s), R("proc")(u)});
        dl_.rule("legal_arrival", R("legal_arr")(j, m, u, s2), {R("arr")(j, m, u, s2), R("legal")(j)});
        dl_.rule("legal_departure", R("legal_dep")(j, m, u, s2), {R("dep")(j, m, u, s2), R("legal")(j)});
        dl_.rule("legal_initial", R("legal")(i), {R("dep")(i, m, u, s), R("init")(m, u)});
        dl_.rule("legal_earlier_round", R("legal")(i), {R("pdep")(i, m, u, s), R("legal_arr")(j, m, u, s2), z3::ult(s2, s)});
        dl_.rule("legal_same_round", R("legal")(i), {R("dep")(i, m, u, s), R("legal_arr")(j, m, u, s)});
        dl_.rule("causality", R("bad_causality")(i), {R("dep")(i, m, u, s), !R("legal")(i)});
    }
}

/// replication (replicate=no). hop: per (message, router), FIFO: the k-th departure after the
/// first arrival needs the k-th arrival (by step) to come strictly earlier. wormhole: per
/// (message, router, round), no more legal departures than legal arrivals.
void Engine::replication_rules() {
    if (replicate_ || switches_) return;  // switch functions: verifier/check/z3_switch.cpp
    const z3::sort IX = *IX_, ST = *ST_, ND = *ND_, MS = *MS_;
    z3::expr i = var("i", IX), j = var("j", IX), s = var("s", ST), sa = var("sa", ST), sd = var("sd", ST);
    z3::expr m = var("m", MS), r = var("r", ND), k = var("k", IX), kp = var("kp", IX), kq = var("kq", IX);
    const auto& xs = t_.transfers;
    if (hop_) {
        // Members and ranks of the router arrivals and post-first-arrival departures.
        rel_.emplace("mem_ar", dl_.relation("mem_ar", {IX, MS, ND, ST}));
        dl_.rule("mem_ar", R("mem_ar")(j, m, r, s), {R("rarr")(j, m, r, s)});
        std::vector<Member> ar;
        for (U64 x = 0; x < N_; ++x)
            if (is_router(to(x))) ar.push_back({{x, 0}, {idx(xs[x].message), to(x), 0}, xs[x].step});
        z3::func_decl rk_ar = ranking(Property::replication, "ar", R("mem_ar"), {j}, {m, r}, s, false, ar);
        rel_.emplace("arK", dl_.relation("arK", {MS, ND, IX, ST}));
        rel_.emplace("okpost", dl_.relation("okpost", {IX}));
        dl_.rule("arK", R("arK")(m, r, k, sa), {ap(rk_ar, {j, m, r, sa, k, kp})});
        dl_.rule("fifo_match", R("okpost")(i), {ap(R("rk_post"), {i, m, r, sd, k, kq}), R("arK")(m, r, k, sa), z3::ult(sa, sd)});
        dl_.rule("replication", R("bad_replication")(i, m, r, sd), {R("mem_post")(i, m, r, sd), !R("okpost")(i)});
    } else {
        std::vector<char> legal = comp_ ? wormhole_legal_composite() : wormhole_legal();
        for (const char* dir : {"wa", "wd"}) {
            std::string mem = fmt::format("mem_{}", dir);
            bool arrive = dir[1] == 'a';
            rel_.emplace(mem, dl_.relation(mem, {IX, MS, ND, ST}));
            dl_.rule(mem, R(mem)(i, m, r, s), {arrive ? R("legal_arr")(i, m, r, s) : R("legal_dep")(i, m, r, s), R("rtr")(r)});
            std::vector<Member> members;
            for (U64 x = 0; x < N_; ++x) {
                U64 node = arrive ? to(x) : from(x);
                if (legal[x] && is_router(node)) members.push_back({{x, 0}, {idx(xs[x].message), node, xs[x].step}, 0});
            }
            ranking(Property::replication, dir, R(mem), {i}, {m, r, s}, std::nullopt, false, members);
        }
        rel_.emplace("waK", dl_.relation("waK", {MS, ND, ST, IX}));
        dl_.rule("waK", R("waK")(m, r, s, k), {ap(R("rk_wa"), {j, m, r, s, k, kp})});
        dl_.rule("replication", R("bad_replication")(i, m, r, s), {ap(R("rk_wd"), {i, m, r, s, k, kp}), !R("waK")(m, r, s, k)});
    }
}

/// queues (hop timing; routers only).
///  none, replicate=no: per (message, router, step t), every copy that arrives in t leaves in
///    t+1: arrival rank k needs departure rank k in t+1 (the FIFO of the direct checker fails
///    first exactly where #arrivals(t) > #departures(t+1)).
///  none, replicate=yes: a router sends a message it holds only in the step after an arrival.
///  bound B, replicate=no: copies waiting at boundary b (1 <= b < T) are #arrivals(<= b) -
///    #departures(<= b+1); with arrivals a_0 <= a_1 <= ... and departures d_0 <= d_1 <= ... of the
///    router this exceeds B at an arrival boundary b = a_k iff k >= B and d_{k-B} is missing or
///    d_{k-B} >= a_k + 2.
///  bound B, replicate=yes: a message waits from its first arrival F to its last departure L
///    minus 2; the same argument on starts F and ends L-1 ranked per router.
void Engine::queue_rules() {
    if (!hop_ || t_.model.queues == QueueKind::unbounded || switches_) return;  // switch functions: verifier/check/z3_switch.cpp
    const z3::sort IX = *IX_, ST = *ST_, ND = *ND_, MS = *MS_, CH = *CH_;
    z3::expr i = var("i", IX), j = var("j", IX), s = var("s", ST), t = var("t", ST), t1 = var("t1", ST);
    z3::expr sa = var("sa", ST), sd = var("sd", ST), f = var("f", ST), e = var("e", ST), L = var("L", ST);
    z3::expr m = var("m", MS), r = var("r", ND), k = var("k", IX), kp = var("kp", IX), q = var("q", IX), c = var("c", CH);
    const auto& xs = t_.transfers;
    if (none_ && !replicate_) {
        for (const char* dir : {"qa", "qd"}) {
            std::string mem = fmt::format("mem_{}", dir);
            bool arrive = dir[1] == 'a';
            rel_.emplace(mem, dl_.relation(mem, {IX, MS, ND, ST}));
            dl_.rule(mem, R(mem)(i, m, r, s), {arrive ? R("rarr")(i, m, r, s) : R("rdep")(i, m, r, s)});
            std::vector<Member> members;
            for (U64 x = 0; x < N_; ++x) {
                U64 node = arrive ? to(x) : from(x);
                if (is_router(node)) members.push_back({{x, 0}, {idx(xs[x].message), node, xs[x].step}, 0});
            }
            ranking(Property::queues, dir, R(mem), {i}, {m, r, s}, std::nullopt, false, members);
        }
        rel_.emplace("qdK", dl_.relation("qdK", {MS, ND, ST, IX}));
        dl_.rule("qdK", R("qdK")(m, r, s, k), {ap(R("rk_qd"), {j, m, r, s, k, kp})});
        dl_.rule("queues_none", R("bad_queues")(i, m, r, t1),
                 {ap(R("rk_qa"), {i, m, r, t, k, kp}), R("succ")(t, t1), !R("qdK")(m, r, t1, k)});
    } else if (none_) {
        rel_.emplace("arrat", dl_.relation("arrat", {MS, ND, ST}));
        dl_.rule("arrat", R("arrat")(m, r, t), {R("rarr")(j, m, r, t)});
        dl_.rule("queues_none", R("bad_queues")(i, m, r, s), {R("postdep")(i, m, r, s), R("succ")(t, s), !R("arrat")(m, r, t)});
    } else if (bounded_ && !replicate_) {
        for (const char* dir : {"ra", "rd"}) {
            std::string mem = fmt::format("mem_{}", dir);
            bool arrive = dir[1] == 'a';
            rel_.emplace(mem, dl_.relation(mem, {IX, ND, ST}));
            dl_.rule(mem, R(mem)(i, r, s), {arrive ? R("rarr")(i, m, r, s) : R("rdep")(i, m, r, s)});
            std::vector<Member> members;
            for (U64 x = 0; x < N_; ++x) {
                U64 node = arrive ? to(x) : from(x);
                if (is_router(node)) members.push_back({{x, 0}, {node, 0, 0}, xs[x].step});
            }
            ranking(Property::queues, dir, R(mem), {i}, {r}, s, arrive, members);
        }
        rel_.emplace("rdK", dl_.relation("rdK", {ND, IX, ST}));
        rel_.emplace("need", dl_.relation("need", {ND, IX, ST}));
        rel_.emplace("endok", dl_.relation("endok", {ND, IX, ST}));
        rel_.emplace("raK", dl_.relation("raK", {IX, ND, ST, IX}));
        rel_.emplace("qover", dl_.relation("qover", {IX, ND, ST}));
        dl_.rule("rdK", R("rdK")(r, k, sd), {ap(R("rk_rd"), {j, r, sd, k, kp})});
        // Boundaries are those between steps, 1..T-1: a copy arriving in the last step waits at none.
        dl_.rule("raK", R("raK")(i, r, sa, q),
                 {ap(R("rk_ra"), {i, r, sa, k, kp, q}), z3::uge(k, num(B_, IX)), z3::ult(sa, num(t_.steps(), ST))});
        dl_.rule("need", R("need")(r, q, sa), {R("raK")(i, r, sa, q)});
        dl_.rule("endok", R("endok")(r, q, sa), {R("need")(r, q, sa), R("rdK")(r, q, sd), z3::ule(sd, sa + num(1, ST))});
        dl_.rule("qover", R("qover")(i, r, sa), {R("raK")(i, r, sa, q), !R("endok")(r, q, sa)});
        dl_.rule("queues_bound", R("bad_queues")(i, m, r, sa), {R("qover")(i, r, sa), R("tr")(i, sa, c, m)});
    } else if (bounded_) {
        rel_.emplace("earlier_arr", dl_.relation("earlier_arr", {IX}));
        rel_.emplace("haspost", dl_.relation("haspost", {MS, ND}));
        rel_.emplace("istart", dl_.relation("istart", {MS, ND, ST}));
        rel_.emplace("postsucc", dl_.relation("postsucc", {MS, ND, IX}));
        rel_.emplace("lastpost", dl_.relation("lastpost", {MS, ND, ST}));
        rel_.emplace("iend", dl_.relation("iend", {MS, ND, ST}));
        rel_.emplace("ival", dl_.relation("ival", {MS, ND, ST, ST}));
        z3::expr j2 = var("j2", IX), s2 = var("s2", ST);
        dl_.rule("earlier_arr", R("earlier_arr")(j), {R("rarr")(j, m, r, s), R("rarr")(j2, m, r, s2), z3::ult(s2, s)});
        dl_.rule("haspost", R("haspost")(m, r), {R("mem_post")(i, m, r, s)});
        dl_.rule("istart", R("istart")(m, r, f), {R("rarr")(j, m, r, f), R("haspost")(m, r), !R("earlier_arr")(j)});
        dl_.rule("postsucc", R("postsucc")(m, r, kp), {ap(R("rk_post"), {i, m, r, s, k, kp}), k != num(0, IX)});
        dl_.rule("lastpost", R("lastpost")(m, r, L), {ap(R("rk_post"), {i, m, r, L, k, kp}), !R("postsucc")(m, r, k)});
        dl_.rule("iend", R("iend")(m, r, e), {R("lastpost")(m, r, L), R("succ")(e, L)});
        // Waiting at boundaries f..e-1; empty when e = f (the direct checker keeps no interval then).
        dl_.rule("interval", R("ival")(m, r, f, e), {R("istart")(m, r, f), R("iend")(m, r, e), z3::ugt(e, f)});
        // Intervals per (message, router), ranked per router by start and by end.
        std::map<std::pair<U64, U64>, std::pair<U64, U64>> iv;  // (m, r) -> (first arrival, last post departure)
        {
            std::map<std::pair<U64, U64>, U64> first;
            for (U64 x = 0; x < N_; ++x)
                if (is_router(to(x))) {
                    auto key = std::pair<U64, U64>(idx(xs[x].message), to(x));
                    auto it = first.find(key);
                    if (it == first.end() || xs[x].step < it->second) first[key] = xs[x].step;
                }
            for (U64 x = 0; x < N_; ++x)
                if (is_router(from(x))) {
                    auto key = std::pair<U64, U64>(idx(xs[x].message), from(x));
                    auto it = first.find(key);
                    if (it == first.end() || it->second >= xs[x].step) continue;
                    auto [pos, fresh] = iv.emplace(key, std::pair<U64, U64>(it->second, xs[x].step));
                    if (!fresh) pos->second.second = std::max<U64>(pos->second.second, xs[x].step);
                }
        }
        for (const char* dir : {"is", "ie"}) {
            std::string mem = fmt::format("mem_{}", dir);
            bool start = dir[1] == 's';
            rel_.emplace(mem, dl_.relation(mem, {MS, ND, ND, ST}));
            z3::expr val = start ? f : e;
            dl_.rule(mem, R(mem)(m, r, r, val), {R("ival")(m, r, f, e)});
            std::vector<Member> members;
            for (const auto& [key, se] : iv)
                if (se.second >= se.first + 2)
                    members.push_back({{key.first, key.second}, {key.second, 0, 0}, start ? se.first : se.second - 1});
            ranking(Property::queues, dir, R(mem), {m, r}, {r}, val, start, members);
        }
        rel_.emplace("ieK", dl_.relation("ieK", {ND, IX, ST}));
        rel_.emplace("needI", dl_.relation("needI", {ND, IX, ST}));
        rel_.emplace("iendok", dl_.relation("iendok", {ND, IX, ST}));
        rel_.emplace("isK", dl_.relation("isK", {MS, ND, ST, IX}));
        dl_.rule("ieK", R("ieK")(r, k, e), {ap(R("rk_ie"), {m, r, r, e, k, kp})});
        dl_.rule("isK", R("isK")(m, r, f, q), {ap(R("rk_is"), {m, r, r, f, k, kp, q}), z3::uge(k, num(B_, IX))});
        dl_.rule("needI", R("needI")(r, q, f), {R("isK")(m, r, f, q)});
        dl_.rule("iendok", R("iendok")(r, q, f), {R("needI")(r, q, f), R("ieK")(r, q, e), z3::ule(e, f)});
        dl_.rule("queues_bound", R("bad_queues")(num(0, IX), m, r, f), {R("isK")(m, r, f, q), !R("iendok")(r, q, f)});
    }
}

/// routes (fixed routes, either timing, as the direct checker): a personalized message m(s,d)
/// may only cross channels of route(s, d); under wormhole timing this is every channel of its worms.
void Engine::route_rules() {
    if (!opt_.fixed_routes) return;
    const z3::sort IX = *IX_, ST = *ST_, CH = *CH_, MS = *MS_;
    z3::expr i = var("i", IX), s = var("s", ST), c = var("c", CH), m = var("m", MS);
    U64 P = topo_.processors();
    dl_.rule("routes", R("bad_routes")(i), {R("tr")(i, s, c, m), z3::ult(m, num(P * P, MS)), !R("onroute")(m, c)});
}

/// Facts of composite messages: val(m, lo, hi) for every value a(k) (lo = hi = k) and combined
/// value a(lo..hi); nxt(k, k+1) over sources; a bundle's parts as a list bfirst(b, q),
/// bnext(b, q, q'), blast(b, q), and part(b, q).
void Engine::composite_facts() {
    const z3::sort ND = *ND_, MS = *MS_;
    for (const char* n : {"val"}) rel_.emplace(n, dl_.relation(n, {MS, ND, ND}));
    rel_.emplace("nxt", dl_.relation("nxt", {ND, ND}));
    rel_.emplace("bfirst", dl_.relation("bfirst", {MS, MS}));
    rel_.emplace("blast", dl_.relation("blast", {MS, MS}));
    rel_.emplace("part", dl_.relation("part", {MS, MS}));
    rel_.emplace("bnext", dl_.relation("bnext", {MS, MS, MS}));
    const U64 P = topo_.processors();
    for (U64 k = 0; k < P; ++k) {
        dl_.fact(R("val"), {idx(ms_.value(static_cast<std::uint32_t>(k))), k, k});
        if (k + 1 < P) dl_.fact(R("nxt"), {k, k + 1});
    }
    if (const Composites* reg = ms_.composites()) {
        for (std::size_t n = 0; n < reg->size(); ++n) {
            const Composite& cp = reg->items()[n];
            const U64 id = reg->base() + n;
            if (cp.kind == MessageKind::combined) {
                dl_.fact(R("val"), {id, cp.lo, cp.hi});
                continue;
            }
            if (cp.kind == MessageKind::partial) continue;  // verifier/check/z3_partial.cpp
            dl_.fact(R("bfirst"), {id, idx(cp.parts.front())});
            dl_.fact(R("blast"), {id, idx(cp.parts.back())});
            for (std::size_t a = 0; a < cp.parts.size(); ++a) {
                dl_.fact(R("part"), {id, idx(cp.parts[a])});
                if (a + 1 < cp.parts.size()) dl_.fact(R("bnext"), {id, idx(cp.parts[a]), idx(cp.parts[a + 1])});
            }
        }
    }
}

/// What processors hold when values combine and bundles carry parts (docs/z3-engine.md,
/// "Combined values and bundles"). got(m, p, s): processor p has m from the end of step s (0:
/// initially): it received m (hop: any transfer; wormhole: a legal one) or a bundle with m.
/// A processor's send i of a value a(lo..hi) in step s is held when chain(i, hi): a chain of
/// values got before s covers lo..hi; of a bundle when bhas reaches its last part; of a base
/// message when got before s. These add to `early` (hop) and `legal` (wormhole), positively.
void Engine::composite_rules() {
    const z3::sort IX = *IX_, ST = *ST_, ND = *ND_, MS = *MS_;
    z3::expr i = var("i", IX), j = var("j", IX), s = var("s", ST), s2 = var("s2", ST), m = var("m", MS), b = var("b", MS);
    z3::expr q = var("q", MS), q2 = var("q2", MS), u = var("u", ND), p = var("p", ND);
    z3::expr lo = var("lo", ND), hi = var("hi", ND), x = var("x", ND), x1 = var("x1", ND), y = var("y", ND);
    auto rel = [&](const std::string& n, std::vector<z3::sort> cols) { rel_.emplace(n, dl_.relation(n, cols)); };
    rel("got", {MS, ND, ST});
    rel("cdep", {IX, ND, ND, ND, ST});
    rel("chain", {IX, ND});
    rel("bhas", {IX, MS});
    rel("gwant", {ND, ND});
    rel("fchain", {ND, ND, ND});
    z3::func_decl held = R(hop_ ? "early" : "legal");
    if (hop_)
        dl_.rule("got", R("got")(m, p, s), {R("arr")(i, m, p, s), R("proc")(p)});
    else
        dl_.rule("got", R("got")(m, p, s), {R("legal_arr")(i, m, p, s), R("proc")(p)});
    dl_.rule("got_initially", R("got")(m, p, num(0, ST)), {R("init")(m, p)});
    dl_.rule("got_part", R("got")(q, p, s), {R("got")(b, p, s), R("part")(b, q)});
    // sends of base messages held through a bundle
    dl_.rule("held_part", held(i), {R("dep")(i, m, u, s), R("proc")(u), R("got")(m, u, s2), z3::ult(s2, s)});
    // sends of values: a chain of values got before the step, from lo on
    dl_.rule("value_departure", R("cdep")(i, lo, hi, u, s), {R("dep")(i, m, u, s), R("proc")(u), R("val")(m, lo, hi)});
    dl_.rule("chain_start", R("chain")(i, y), {R("cdep")(i, lo, hi, u, s), R("got")(m, u, s2), z3::ult(s2, s), R("val")(m, lo, y)});
    dl_.rule("chain_step", R("chain")(i, y),
             {R("chain")(i, x), R("nxt")(x, x1), R("cdep")(i, lo, hi, u, s), R("got")(m, u, s2), z3::ult(s2, s), R("val")(m, x1, y)});
    dl_.rule("held_value", held(i), {R("cdep")(i, lo, hi, u, s), R("chain")(i, hi)});
    // sends of bundles: every part, in order
    dl_.rule("bundle_first", R("bhas")(i, q),
             {R("dep")(i, b, u, s), R("proc")(u), R("bfirst")(b, q), R("got")(q, u, s2), z3::ult(s2, s)});
    dl_.rule("bundle_next", R("bhas")(i, q2),
             {R("bhas")(i, q), R("dep")(i, b, u, s), R("bnext")(b, q, q2), R("got")(q2, u, s2), z3::ult(s2, s)});
    dl_.rule("held_bundle", held(i), {R("bhas")(i, q), R("dep")(i, b, u, s), R("blast")(b, q)});
    // completeness: parts of bundles, and goals a(lo..hi) formed from the values held at the end
    dl_.rule("delivered_part", R("delivered")(m, p), {R("got")(m, p, s)});
    dl_.rule("goal_value", R("gwant")(p, lo), {R("goal")(m, p), R("val")(m, lo, hi)});
    dl_.rule("final_chain_start", R("fchain")(p, lo, y), {R("gwant")(p, lo), R("got")(m, p, s), R("val")(m, lo, y)});
    dl_.rule("final_chain_step", R("fchain")(p, lo, y), {R("fchain")(p, lo, x), R("nxt")(x, x1), R("got")(m, p, s), R("val")(m, x1, y)});
    dl_.rule("delivered_value", R("delivered")(m, p), {R("goal")(m, p), R("val")(m, lo, hi), R("fchain")(p, lo, hi)});
    (void)j;
}

/// completeness: every goal (message, processor) is initial data there or is delivered there
/// by some transfer (hop), by some legal transfer (wormhole).
void Engine::completeness_rules() {
    const z3::sort IX = *IX_, ST = *ST_, ND = *ND_, MS = *MS_;
    z3::expr i = var("i", IX), s = var("s", ST), m = var("m", MS), p = var("p", ND);
    if (hop_)
        dl_.rule("delivered", R("delivered")(m, p), {R("arr")(i, m, p, s)});
    else
        dl_.rule("delivered", R("delivered")(m, p), {R("legal_arr")(i, m, p, s), R("proc")(p)});
    dl_.rule("delivered_initially", R("delivered")(m, p), {R("init")(m, p)});
    dl_.rule("completeness", R("bad_completeness")(m, p), {R("goal")(m, p), !R("delivered")(m, p)});
}

}  // namespace collsched::z3e
