/** \file
 * Cardinality constraints in CNF, for the SAT path of the synthesizer. A constraint
 * "at most k of these literals are true" (and at least, exactly) is turned into clauses over
 * fresh auxiliary variables by one of two classical encodings:
 *  - the sequential counter (Sinz 2005): n*k auxiliary variables, about 2nk clauses; a register
 *    per prefix that counts, in unary, how many inputs of the prefix are true (up to k);
 *  - the totalizer (Bailleux & Boufkhad 2003): a balanced tree of unary adders whose outputs are
 *    cut at k+1, O(n log n) variables and O(nk) clauses.
 * Both are arc-consistent under unit propagation: as soon as k inputs are true, the others are
 * propagated false. `at_least` is `at_most` on the negated inputs. Literals are DIMACS integers
 * (variable v > 0, its negation -v), written to a ClauseSink, so the same code feeds an
 * in-memory CNF (tests) and the CaDiCaL backend.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace collsched::sat {

/// Where clauses go: a solver, or an in-memory CNF.
class ClauseSink {
public:
    virtual ~ClauseSink() = default;
    /// A fresh variable (> 0).
    virtual int new_var() = 0;
    virtual void add_clause(std::span<const int> lits) = 0;
    void add_clause(std::initializer_list<int> lits) { add_clause(std::span<const int>(lits.begin(), lits.size())); }
};

/// A CNF held in memory: variables 1..vars(), clauses stored flat, each ended by 0.
class Cnf final : public ClauseSink {
public:
    explicit Cnf(int vars = 0) : vars_(vars) {}
    int new_var() override { return ++vars_; }
    void add_clause(std::span<const int> lits) override;
    using ClauseSink::add_clause;

    int vars() const { return vars_; }
    std::size_t clauses() const { return clauses_; }
    /// All clauses, each followed by a 0.
    std::span<const int> flat() const { return lits_; }

private:
    int vars_;
    std::size_t clauses_ = 0;
    std::vector<int> lits_;
};

enum class CardEncoding : std::uint8_t { sequential, totalizer };

/// At most k of `xs` are true. k >= xs.size() adds nothing; k == 0 adds one unit clause per input;
/// k == 1 with at most 4 inputs uses the pairwise encoding (no auxiliary variables).
void at_most(ClauseSink&, std::span<const int> xs, std::size_t k, CardEncoding = CardEncoding::totalizer);
/// At least k of `xs` are true (at most size-k of the negations). k > size adds the empty clause.
void at_least(ClauseSink&, std::span<const int> xs, std::size_t k, CardEncoding = CardEncoding::totalizer);
/// Exactly k of `xs` are true.
void exactly(ClauseSink&, std::span<const int> xs, std::size_t k, CardEncoding = CardEncoding::totalizer);

/// Decides a CNF under assumptions with CaDiCaL (the tests' oracle for the encodings).
bool satisfiable(const Cnf&, std::span<const int> assumptions = {});

}  // namespace collsched::sat
