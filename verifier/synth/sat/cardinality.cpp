// Cardinality constraints (CaDiCaL path):
//
// `verifier/synth/sat/cardinality.hpp`: `at_most`, `at_least`, `exactly`. **Totalizer** (default):
// unary adders cut at k+1, O(n log n) variables, O(nk) clauses. **Sequential counter**
// (`--cardinality sequential`): Sinz, n*k variables. `test_synth.cpp` checks both exhaustively for n <=
// 7 and every k. Z3 gets native `atmost`/`atleast` (`QF_FD`) on the same `synth::Formula`, so both
// backends decide the same problem; the tests compare them horizon by horizon.
#include "verifier/synth/sat/cardinality.hpp"

#include <algorithm>

#include <cadical.hpp>

namespace collsched::sat {

void Cnf::add_clause(std::span<const int> lits) {
    lits_.insert(lits_.end(), lits.begin(), lits.end());
    lits_.push_back(0);
    ++clauses_;
}

namespace {

/// Sinz's sequential counter for sum(xs) <= k, 1 <= k < n. s[i][j] means "at least j+1 of
/// x_0..x_i are true"; only the upward implications are needed for an upper bound.
void sequential_at_most(ClauseSink& out, std::span<const int> xs, std::size_t k) {
    const std::size_t n = xs.size();
    std::vector<int> prev(k), cur(k);
    for (std::size_t j = 0; j < k; ++j) prev[j] = out.new_var();
    out.add_clause({-xs[0], prev[0]});
    for (std::size_t j = 1; j < k; ++j) out.add_clause({-prev[j]});
    for (std::size_t i = 1; i + 1 < n; ++i) {
        for (std::size_t j = 0; j < k; ++j) cur[j] = out.new_var();
        out.add_clause({-xs[i], cur[0]});
        out.add_clause({-prev[0], cur[0]});
        for (std::size_t j = 1; j < k; ++j) {
            out.add_clause({-xs[i], -prev[j - 1], cur[j]});
            out.add_clause({-prev[j], cur[j]});
        }
        out.add_clause({-xs[i], -prev[k - 1]});
        std::swap(prev, cur);
    }
    out.add_clause({-xs[n - 1], -prev[k - 1]});
}

/// The totalizer: returns unary outputs o[0..m-1] of the inputs, o[i] implied by "at least i+1
/// inputs are true", with m = min(size, cut). Counts beyond `cut` all imply o[cut-1].
std::vector<int> totalize(ClauseSink& out, std::span<const int> xs, std::size_t cut) {
    if (xs.size() == 1) return {xs[0]};
    std::size_t half = xs.size() / 2;
    std::vector<int> a = totalize(out, xs.first(half), cut);
    std::vector<int> b = totalize(out, xs.subspan(half), cut);
    std::size_t m = std::min(xs.size(), cut);
    std::vector<int> r(m);
    for (int& v : r) v = out.new_var();
    // a_i and b_j (i, j counted from 1; 0 means "no input needed") imply r_{min(i+j, m)}.
    for (std::size_t i = 0; i <= a.size(); ++i)
        for (std::size_t j = 0; j <= b.size(); ++j) {
            if (i + j == 0) continue;
            std::size_t s = std::min(i + j, m);
            int cl[3];
            std::size_t len = 0;
            if (i > 0) cl[len++] = -a[i - 1];
            if (j > 0) cl[len++] = -b[j - 1];
            cl[len++] = r[s - 1];
            out.add_clause(std::span<const int>(cl, len));
            if (i + j >= m) break;  // larger j only repeat the same output with more premises
        }
    return r;
}

}  // namespace

void at_most(ClauseSink& out, std::span<const int> xs, std::size_t k, CardEncoding enc) {
    const std::size_t n = xs.size();
    if (k >= n) return;
    if (k == 0) {
        for (int x : xs) out.add_clause({-x});
        return;
    }
    if (k == 1 && n <= 4) {
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = i + 1; j < n; ++j) out.add_clause({-xs[i], -xs[j]});
        return;
    }
    if (enc == CardEncoding::sequential) {
        sequential_at_most(out, xs, k);
        return;
    }
    std::vector<int> r = totalize(out, xs, k + 1);
    out.add_clause({-r[k]});
}

void at_least(ClauseSink& out, std::span<const int> xs, std::size_t k, CardEncoding enc) {
    if (k == 0) return;
    if (k > xs.size()) {
        out.add_clause(std::span<const int>{});
        return;
    }
    if (k == 1) {
        out.add_clause(xs);
        return;
    }
    std::vector<int> neg(xs.begin(), xs.end());
    for (int& x : neg) x = -x;
    at_most(out, neg, xs.size() - k, enc);
}

void exactly(ClauseSink& out, std::span<const int> xs, std::size_t k, CardEncoding enc) {
    at_most(out, xs, k, enc);
    at_least(out, xs, k, enc);
}

bool satisfiable(const Cnf& cnf, std::span<const int> assumptions) {
    CaDiCaL::Solver s;
    s.set("quiet", 1);
    for (int l : cnf.flat()) s.add(l);
    // Variables that occur in no clause are still valid assumptions.
    for (int a : assumptions) s.assume(a);
    return s.solve() == 10;
}

}  // namespace collsched::sat
