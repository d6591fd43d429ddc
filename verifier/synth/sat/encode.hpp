/** \file
 * Internal to the synthesizer: the solver-independent formula (Boolean variables, clauses,
 * cardinality constraints) that the encodings produce and both backends consume, and the
 * decoding data that turns a model back into transfers. Variable 1 is the constant true
 * (`Formula::top`), so encodings can write constants without special cases; `clause` and the
 * cardinality helpers simplify them away.
 */
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "verifier/synth/problem/instance.hpp"
#include "verifier/synth/problem/network.hpp"

namespace collsched::synth {

struct Card {
    std::vector<int> lits;
    std::uint32_t bound = 0;
    bool at_least = false;  ///< sum >= bound; otherwise sum <= bound
};

class Formula {
public:
    static constexpr int top = 1;

    int new_var() { return ++vars_; }
    int vars() const { return vars_; }

    /// Adds a clause; drops false constants, skips the clause when it holds by a true constant.
    void clause(std::span<const int> lits);
    void clause(std::initializer_list<int> lits) { clause(std::span<const int>(lits.begin(), lits.size())); }
    /// sum(lits) <= k, with constants folded in. Trivial constraints are dropped.
    void at_most(std::vector<int> lits, std::int64_t k);
    /// sum(lits) >= k, with constants folded in.
    void at_least(std::vector<int> lits, std::int64_t k);
    /// A fresh variable equivalent to the conjunction (a and b).
    int and_of(int a, int b);
    /// A fresh variable implied by... and implying the disjunction of `lits` (v <-> OR lits).
    int or_of(std::span<const int> lits);

    std::span<const int> flat_clauses() const { return clauses_; }
    std::size_t clause_count() const { return clause_count_; }
    const std::vector<Card>& cards() const { return cards_; }
    bool trivially_unsat() const { return unsat_; }

private:
    int vars_ = 1;  // variable 1 is `top`; clause_count_ counts its unit clause
    std::vector<int> clauses_{top, 0};
    std::size_t clause_count_ = 1;
    std::vector<Card> cards_;
    bool unsat_ = false;
    std::vector<int> scratch_;
};

/// A literal that, when true in a model, puts transfers pool[first, first+count) in the table.
struct Candidate {
    int lit;
    std::uint32_t first;
    std::uint32_t count;
    Step last_step;  ///< the latest step among its transfers
};

struct Encoding {
    EncodingKind kind = EncodingKind::personal;
    Formula f;
    std::vector<Candidate> candidates;
    std::vector<Transfer> pool;
    Step max_horizon = 0;
    Step min_horizon = 0;                   ///< below this the instance is infeasible by the windows
    std::vector<int> deadline;              ///< deadline[T]: the literal forcing completion by T (0: none needed)
    bool fixed_routes = false;              ///< verify with fixed routes (personal)
    std::vector<std::string> notes;         ///< what was added (symmetry, implied), for --verbose output
    /// With SynthInstance::rounds: per step t, the literals "step t has more than i+1 rounds".
    std::vector<std::vector<int>> round_lits;
    /// The combining encoding, per pool transfer: the processor whose buffer its partial is and the
    /// step that partial left it (a partial forwarded by a router left its origin earlier). Empty:
    /// the channel's sender, in the transfer's step.
    std::vector<std::pair<Node, Step>> senders;
};

/// Rounds (SCCL's, issue 15): with a total of R rounds over H steps, step t lasts
/// r_t = 1 + (number of true extra[t][i]), i < E = R - H, with extra[t][i+1] -> extra[t][i]
/// (order encoding) and at most E extra rounds in all. A load of k per round in step t becomes
/// "sum(load) + k * #(not extra[t][i]) <= k * (1 + E)": with r_t - 1 of the E literals true
/// that is sum(load) <= k * r_t. The k copies of each literal are fresh variables equal to it,
/// so no cardinality constraint sees a literal twice.
class Rounds {
public:
    Rounds(Formula& f, Step H, std::optional<Step> total) : f_(f), extra_(H + 1) {
        if (!total) return;
        if (*total < H) {
            f.clause({});
            return;
        }
        E_ = *total - H;
        std::vector<int> all;
        for (Step t = 1; t <= H; ++t)
            for (Step i = 0; i < E_; ++i) {
                extra_[t].push_back(f.new_var());
                all.push_back(extra_[t].back());
                if (i > 0) f.clause({-extra_[t][i], extra_[t][i - 1]});
            }
        f.at_most(std::move(all), E_);
        copies_.resize(all_size());
    }
    Step extra_per_step() const { return E_; }
    const std::vector<int>& extra(Step t) const { return extra_[t]; }
    /// sum(load) <= k * (rounds of the steps in [t0, t1]).
    void at_most(std::vector<int> load, std::int64_t k, Step t0, Step t1) {
        for (Step t = t0; t <= t1; ++t)
            for (Step i = 0; i < E_; ++i)
                for (std::int64_t j = 0; j < k; ++j) load.push_back(-copy(t, i, static_cast<std::size_t>(j)));
        f_.at_most(std::move(load), k * static_cast<std::int64_t>(t1 - t0 + 1) * (1 + E_));
    }

    /// sum(load) >= need - k * (rounds of the steps in [t0, t1]).
    void at_least_minus(std::vector<int> load, std::int64_t need, std::int64_t k, Step t0, Step t1) {
        for (Step t = t0; t <= t1; ++t)
            for (Step i = 0; i < E_; ++i)
                for (std::int64_t j = 0; j < k; ++j) load.push_back(copy(t, i, static_cast<std::size_t>(j)));
        f_.at_least(std::move(load), need - k * static_cast<std::int64_t>(t1 - t0 + 1));
    }

private:
    std::size_t all_size() const { return extra_.size() * static_cast<std::size_t>(E_); }
    int copy(Step t, Step i, std::size_t j) {
        if (j == 0) return extra_[t][i];
        auto& cs = copies_[t * static_cast<std::size_t>(E_) + i];
        while (cs.size() < j) {
            int v = f_.new_var();
            f_.clause({-v, extra_[t][i]});
            f_.clause({v, -extra_[t][i]});
            cs.push_back(v);
        }
        return cs[j - 1];
    }
    Formula& f_;
    std::vector<std::vector<int>> extra_;
    Step E_ = 0;
    std::vector<std::vector<int>> copies_;
};

/// Ports per processor and step (docs/semantics.md): under single ports at most one send and one
/// receive, under half ports one of either. `cross(i, channel, t)` is the literal "item i crosses
/// the channel in step t" for items 0..items-1 (or the literals whose sum is how often it does); `tick(p)` runs before each processor's clauses of a step
/// (where the caller polls its limits).
template <class Cross, class Tick>
void port_limits(Rounds& rounds, const Topology& topo, Ports ports, Step H, std::size_t items, Cross&& cross, Tick&& tick) {
    if (ports == Ports::multi) return;
    for (std::uint32_t p = 0; p < topo.processors(); ++p)
        for (Step t = 1; t <= H; ++t) {
            tick(p);
            std::vector<int> out, inn;
            auto add = [&](std::vector<int>& to, std::size_t i, ChannelId c) {
                if constexpr (std::is_same_v<decltype(cross(i, c, t)), int>) to.push_back(cross(i, c, t));
                else for (int l : cross(i, c, t)) to.push_back(l);
            };
            for (std::size_t i = 0; i < items; ++i) {
                for (ChannelId c : topo.out_channels(Node{p})) add(out, i, c);
                for (ChannelId c : topo.in_channels(Node{p})) add(inn, i, c);
            }
            if (ports == Ports::half) {
                out.insert(out.end(), inn.begin(), inn.end());
                rounds.at_most(std::move(out), 1, t, t);
            } else {
                rounds.at_most(std::move(out), 1, t, t);
                rounds.at_most(std::move(inn), 1, t, t);
            }
        }
}

/// Thrown by encode when SynthOptions::deadline passes or the size estimate exceeds
/// SynthOptions::max_variables; the Synthesizer turns it into Answer::unknown with `reason`.
struct EncodeStopped {
    std::string reason;
};

/// Encodes "a schedule completes by step T" for every T <= max_horizon at once: completion by T
/// is the assumption `deadline[T]`.
Encoding encode(const SynthInstance&, Step max_horizon, const SynthOptions&);

/// Throws EncodeStopped when the options' deadline has passed or the resident memory has reached
/// `memory_stop` of the options' memory limit (checked between large loops).
void check_deadline(const SynthOptions&);
/// `v` becomes `n` copies of `value`, written a million at a time with check_deadline between:
/// the first touch of a large table's pages is slow enough to pass a deadline (the 32 million
/// crossings of hub_and_spoke(64) alltoall, 128 MB: 1.3 s on the 2-core development machine).
void assign_polled(std::vector<int>& v, std::size_t n, int value, const SynthOptions&);
/// The share of SynthOptions::memory at which encoding, loading and solving stop: the rest is
/// the slack for what is allocated between two polls.
inline constexpr double memory_stop = 0.9;
/// "memory limit (during encoding): 3.1 GB resident, limit 3.4 GB"
std::string memory_reason(const SynthOptions&, std::string_view during);

/// Its variables for horizon H (before cardinality auxiliaries).
std::uint64_t combining_variables(const SynthInstance&, Step H);
/// What every encoder class reads and fills: the instance, the largest horizon H, the options
/// and the encoding under construction. The encoders derive from it and add one method per
/// constraint family.
class EncoderBase {
protected:
    EncoderBase(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e)
        : in_(in), topo_(*in.topology), model_(in.model), H_(H), opt_(opt), e_(e), f_(e.f) {}

    const SynthInstance& in_;
    const Topology& topo_;
    const Model& model_;
    const Step H_;
    const SynthOptions& opt_;
    Encoding& e_;
    Formula& f_;
};

/// The direct encoding of combining (docs/synthesis.md, "The direct encoding of combining").
void encode_combining(const SynthInstance&, Step H, const SynthOptions&, Encoding&);
/// The personalized encoding over fixed routes (verifier/synth/sat/personal.cpp).
void encode_personal(const SynthInstance&, Step H, const SynthOptions&, Encoding&);
/// Dissemination and free_route over holdings and crossings (verifier/synth/sat/dissemination.cpp).
void encode_dissemination(const SynthInstance&, Step H, const SynthOptions&, Encoding&);
/// Fixed routes with one start per message and goal (verifier/synth/sat/dissemination.cpp).
void encode_end_to_end(const SynthInstance&, Step H, const SynthOptions&, Encoding&);

/// The number of Boolean variables the encoding of `kind` for horizon H is estimated to need
/// before cardinality auxiliaries (an upper estimate from the message and node counts).
std::uint64_t estimate_variables(const SynthInstance&, EncodingKind, Step H);

}  // namespace collsched::synth
