/** \file
 * The Z3 engine's insides (verifier/check/z3_engine.hpp is its face), shared by the few sources of
 * verifier/ that hold it, as Halide keeps LLVM behind one header: the Datalog program in Z3's
 * fixedpoint engine, the rank certificates and the Engine class. verifier/check/z3_engine.cpp builds
 * the program (one method per property family, with the encoding's paragraph),
 * verifier/check/z3_engine_run.cpp runs the queries and fills the report, verifier/check/z3_decode.cpp
 * words the counterexamples. Include it only from the .cpp files of verifier/: it brings <z3++.h>.
 */
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <z3++.h>

#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/check/z3_engine.hpp"
#include "verifier/check/z3_partial.hpp"
#include "verifier/check/z3_switch.hpp"

namespace collsched::z3e {

using U64 = std::uint64_t;

using U64 = std::uint64_t;

/// Bits needed to represent every value 0..max_value.
inline unsigned bits_for(U64 max_value) {
    unsigned b = 1;
    while (b < 63 && (max_value >> b) != 0) ++b;
    return b;
}

/// f(args...) for any number of arguments (z3::func_decl::operator() stops at five).
inline z3::expr ap(const z3::func_decl& f, std::initializer_list<z3::expr> args) {
    z3::expr_vector v(f.ctx());
    for (const z3::expr& a : args) v.push_back(a);
    return f(v);
}

/// Raised when Z3 answers in a form this file does not expect; the run reports it as unknown.
struct EngineError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// A Datalog program in Z3's fixedpoint engine: relations over bit-vector columns, facts, named
// rules (each closed over its free variables) and queries that return the derived tuples.

class Datalog {
public:
    explicit Datalog(z3::context& c) : c_(c), fp_(c) {
        z3::params p(c_);
        p.set("engine", "datalog");
        fp_.set(p);
    }

    z3::func_decl relation(const std::string& name, const std::vector<z3::sort>& columns) {
        z3::sort_vector dom(c_);
        for (const z3::sort& s : columns) dom.push_back(s);
        z3::func_decl f = c_.function(name.c_str(), dom, c_.bool_sort());
        fp_.register_relation(f);
        return f;
    }

    void fact(z3::func_decl& rel, std::initializer_list<U64> values) { fact(rel, values.begin(), values.size()); }
    void fact(z3::func_decl& rel, const std::vector<U64>& values) { fact(rel, values.data(), values.size()); }
    void fact(z3::func_decl& rel, const U64* values, std::size_t n) {
        std::array<unsigned, 8> args{};
        COLLSCHED_ASSERT(n == rel.arity() && n <= args.size());
        for (std::size_t k = 0; k < n; ++k) {
            COLLSCHED_ASSERT(values[k] <= 0xffffffffull);
            args[k] = static_cast<unsigned>(values[k]);
        }
        fp_.add_fact(rel, args.data());
    }

    /// head :- body[0], body[1], ...; the free variables (uninterpreted constants) are bound.
    void rule(const std::string& name, const z3::expr& head, const std::vector<z3::expr>& body) {
        std::vector<Z3_app> vars;
        std::set<unsigned> seen;
        collect_vars(head, vars, seen);
        for (const z3::expr& b : body) collect_vars(b, vars, seen);
        z3::expr_vector conj(c_);
        for (const z3::expr& b : body) conj.push_back(b);
        z3::expr imp = body.empty() ? head : z3::implies(z3::mk_and(conj), head);
        z3::expr closed = vars.empty()
                              ? imp
                              : z3::expr(c_, Z3_mk_forall_const(c_, 0, static_cast<unsigned>(vars.size()), vars.data(), 0,
                                                                nullptr, imp));
        fp_.add_rule(closed, c_.str_symbol(name.c_str()));
    }

    struct Answer {
        z3::check_result result = z3::unknown;
        std::vector<std::vector<U64>> tuples;  ///< derived tuples of the queried relation (sat)
        std::string reason;                    ///< why the answer is unknown
    };

    /// Is anything derivable in `rel`? Runs with a time limit in milliseconds.
    Answer query(const z3::func_decl& rel, U64 timeout_ms) {
        Answer a;
        if (timeout_ms == 0) {  // Z3 reads a zero time limit as "none"
            a.reason = "time limit reached";
            return a;
        }
        z3::params p(c_);
        p.set("engine", "datalog");
        // Keep the rules as written: inlining merges the two-relation joins back into
        // many-atom rules, which the relational backend may evaluate as cross products.
        p.set("xform.inline_eager", false);
        p.set("xform.inline_linear", false);
        p.set("timeout", static_cast<unsigned>(std::min<U64>(timeout_ms, 0xffffffffu)));
        fp_.set(p);
        z3::func_decl_vector rels(c_);
        rels.push_back(rel);
        a.result = fp_.query(rels);
        if (a.result == z3::sat) parse_answer(fp_.get_answer(), rel.arity(), a.tuples);
        if (a.result == z3::unknown) a.reason = fp_.reason_unknown();
        return a;
    }

private:
    void collect_vars(const z3::expr& e, std::vector<Z3_app>& vars, std::set<unsigned>& seen) {
        if (!e.is_app()) return;
        unsigned id = Z3_get_ast_id(c_, e);
        if (!seen.insert(id).second) return;
        if (e.num_args() == 0) {
            if (!e.is_numeral() && e.decl().decl_kind() == Z3_OP_UNINTERPRETED && !e.is_bool()) vars.push_back(Z3_to_app(c_, e));
            return;
        }
        for (unsigned i = 0; i < e.num_args(); ++i) collect_vars(e.arg(i), vars, seen);
    }

    static U64 numeral(const z3::expr& e) {
        U64 v = 0;
        if (!e.is_numeral() || !Z3_get_numeral_uint64(e.ctx(), e, &v)) throw EngineError("unexpected value in a Z3 answer");
        return v;
    }

    void parse_eq(const z3::expr& e, std::vector<U64>& tuple, std::vector<char>& set) {
        if (e.decl().decl_kind() != Z3_OP_EQ || e.num_args() != 2)
            throw EngineError("unexpected answer form from Z3: " + e.to_string().substr(0, 200));
        z3::expr a = e.arg(0), b = e.arg(1);
        if (!a.is_var()) std::swap(a, b);
        if (!a.is_var()) throw EngineError("unexpected answer form from Z3: " + e.to_string().substr(0, 200));
        unsigned k = Z3_get_index_value(c_, a);
        if (k >= tuple.size()) throw EngineError("answer column out of range");
        tuple[k] = numeral(b);
        set[k] = 1;
    }

    void parse_conj(const z3::expr& e, unsigned arity, std::vector<std::vector<U64>>& out) {
        std::vector<U64> tuple(arity, 0);
        std::vector<char> set(arity, 0);
        if (e.decl().decl_kind() == Z3_OP_AND)
            for (unsigned i = 0; i < e.num_args(); ++i) parse_eq(e.arg(i), tuple, set);
        else
            parse_eq(e, tuple, set);
        if (std::find(set.begin(), set.end(), 0) != set.end())
            throw EngineError("Z3 answer leaves a column open: " + e.to_string().substr(0, 200));
        out.push_back(std::move(tuple));
    }

    void parse_answer(const z3::expr& e, unsigned arity, std::vector<std::vector<U64>>& out) {
        if (e.is_false()) return;
        if (e.decl().decl_kind() == Z3_OP_OR)
            for (unsigned i = 0; i < e.num_args(); ++i) parse_conj(e.arg(i), arity, out);
        else
            parse_conj(e, arity, out);
    }

    z3::context& c_;
    z3::fixedpoint fp_;
};

// ---------------------------------------------------------------------------------------------
// Rank certificates, computed here and checked by Z3. A member has an id (up to two values), a
// group key and a sort value; ranks number each group's members 0, 1, ... by (value, id).

struct Member {
    std::array<U64, 2> id{};
    std::array<U64, 3> group{};
    U64 value = 0;
};

inline std::vector<U64> ranks_of(const std::vector<Member>& ms) {
    std::vector<std::size_t> order(ms.size());
    for (std::size_t i = 0; i < ms.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::tie(ms[a].group, ms[a].value, ms[a].id) < std::tie(ms[b].group, ms[b].value, ms[b].id);
    });
    std::vector<U64> rank(ms.size(), 0);
    for (std::size_t k = 1; k < order.size(); ++k)
        if (ms[order[k]].group == ms[order[k - 1]].group) rank[order[k]] = rank[order[k - 1]] + 1;
    return rank;
}

// ---------------------------------------------------------------------------------------------
// The engine for one table.

class Engine {
public:
    Engine(const SendTable& t, const Z3Options& opt, VerifyReport& r)
        : t_(t), topo_(*t.topology), ms_(t.messages()), opt_(opt), report_(r), dl_(c_), start_(Clock::now()) {}

    void run();

private:
    // --- helpers -------------------------------------------------------------------------------
    z3::expr var(const char* name, const z3::sort& s) { return c_.constant(name, s); }
    z3::expr num(U64 v, const z3::sort& s) { return c_.bv_val(static_cast<std::uint64_t>(v), s.bv_size()); }
    const Channel& chan(U64 i) const { return topo_.channel(t_.transfers[i].channel); }
    U64 from(U64 i) const { return idx(chan(i).from); }
    U64 to(U64 i) const { return idx(chan(i).to); }
    bool is_router(U64 node) const { return node >= topo_.processors(); }
    std::string node_name(U64 n) const { return topo_.node_name(Node{static_cast<std::uint32_t>(n)}); }
    std::string msg_name(U64 m) const { return ms_.name(MessageId{static_cast<std::uint32_t>(m)}); }
    std::string chan_name(ChannelId c) const {
        const Channel& ch = topo_.channel(c);
        return fmt::format("{}->{}", topo_.node_name(ch.from), topo_.node_name(ch.to));
    }
    U64 remaining_ms() const {
        auto used = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
        return used >= static_cast<long long>(opt_.timeout_ms) ? 0 : opt_.timeout_ms - static_cast<U64>(used);
    }

    // --- building --------------------------------------------------------------------------------
    void declare();
    void base_facts();
    void base_rules();
    z3::func_decl ranking(Property user, const std::string& name, const z3::func_decl& mem, const std::vector<z3::expr>& id,
                          const std::vector<z3::expr>& group, std::optional<z3::expr> value, bool kmb,
                          const std::vector<Member>& members);
    void capacity_rules();
    void ports_rules();
    void causality_rules();
    void replication_rules();
    void queue_rules();
    void route_rules();
    void completeness_rules();
    void composite_facts();
    void composite_rules();
    std::vector<char> wormhole_legal() const;
    std::vector<char> wormhole_legal_composite() const;

    // --- answering -------------------------------------------------------------------------------
    void add(Property p, Violation v) {
        v.property = p;
        found_[static_cast<std::size_t>(p)].push_back(std::move(v));
    }
    void post_departures();
    std::optional<detail::PartialAnswer> partial_query();
    void merge_switches(detail::SwitchAnswer& routers);
    void merge_query(const char* query, bool unknown, const std::string& reason,
                     std::initializer_list<std::pair<Property, std::vector<Violation>*>> lists);
    std::array<bool, property_count> families();
    std::array<std::string, property_count> check_certificates();
    void answer(Property p, const std::string& blocked);
    void merge_partials(detail::PartialAnswer& partial);
    void publish();
    std::string unknown_reason(const std::string& z3_reason) const;

    // --- counterexamples from derived tuples (z3_decode.cpp) ------------------------------------
    void decode(Property p, const std::vector<std::vector<U64>>& tuples);
    void decode_capacity(const std::vector<std::vector<U64>>& tuples);
    void decode_groups(const std::vector<std::vector<U64>>& tuples);
    void decode_ports(const std::vector<std::vector<U64>>& tuples);
    void decode_queues(const std::vector<std::vector<U64>>& tuples);
    void decode_replication(const std::vector<std::vector<U64>>& tuples);
    void decode_causality(const std::vector<std::vector<U64>>& tuples);
    void decode_routes(const std::vector<std::vector<U64>>& tuples);
    void decode_completeness(const std::vector<std::vector<U64>>& tuples);
    void set_status(Property p, Status s) { report_.status[static_cast<std::size_t>(p)] = s; }

    const SendTable& t_;
    const Topology& topo_;
    Messages ms_;
    const Z3Options& opt_;
    VerifyReport& report_;
    z3::context c_;
    Datalog dl_;
    Clock::time_point start_;

    bool hop_ = true, none_ = false, bounded_ = false, replicate_ = false;
    bool comp_ = false;  ///< composites or a combining collective: the rules of composite_rules()
    bool partials_ = false;  ///< the buffer rule of partials: verifier/check/z3_partial.cpp decides it
    bool switches_ = false;  ///< routers with switch functions: verifier/check/z3_switch.cpp decides every router send
    U64 N_ = 0, B_ = 0, sentinel_ = 0;
    // column sorts
    std::optional<z3::sort> IX_, ST_, CH_, ND_, MS_, CODE_, GR_;
    bool rounds_ = false, groups_ = false;  ///< steps of several rounds; link groups (docs/semantics.md)
    // relations
    std::map<std::string, z3::func_decl> rel_;
    z3::func_decl& R(const std::string& n) { return rel_.at(n); }
    std::map<Property, std::string> bad_;  ///< the bad_* relation of each property family
    std::vector<std::string> cert_names_;  ///< certificate check codes (index = code)
    std::vector<Property> cert_users_;     ///< the property family each certificate serves
    std::vector<U64> post_rank_;            ///< ranks of post-arrival departures (per transfer; sentinel if none)
    std::array<std::vector<Violation>, property_count> found_;
};

}  // namespace collsched::z3e
