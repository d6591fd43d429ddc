#include "compiler/msccl_import.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <tuple>
#include <variant>

#include <fmt/format.h>

#include "compiler/builder.hpp"
#include "compiler/export_msccl.hpp"
#include "compiler/msccl_program.hpp"
#include "compiler/partials.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched {

namespace {

using namespace msccl;

/// A value in a chunk: without reductions (origin rank, its input chunk); in a reduction the
/// index of a partial in Layout's registry; or none.
constexpr std::uint64_t no_data = ~std::uint64_t{0};
std::uint64_t value(int rank, int chunk) { return (std::uint64_t(rank) << 32) | std::uint32_t(chunk); }
int value_rank(std::uint64_t v) { return int(v >> 32); }
int value_chunk(std::uint64_t v) { return int(v & 0xffffffffu); }

/// Where a buffer chunk lives: in place, the input and the output share chunks.
struct Location {
    char buf;
    int off;
};

/// The buffers of a collective as the executor lays them out (docs/exports.md, "Reading
/// MSCCL-IR"), what they hold at the start and must hold at the end, and in a reduction the
/// partials (chunk, set of contributing ranks) the program makes.
class Layout {
public:
    Layout(const Program& p, bool inplace) : p_(p), inplace_(inplace) {}
    /// In place, allgather: input chunk j is output chunk rank*k + j; reducescatter: output chunk
    /// j is input chunk rank*(C/P) + j; reduce: the same buffer at a rank with a whole output
    /// (the root); the others the same buffer.
    Location locate(int rank, char buf, int off) const {
        if (!inplace_) return {buf, off};
        if (p_.coll == "reducescatter") return buf == 'o' ? Location{'i', rank * (p_.k / p_.P) + off} : Location{buf, off};
        if (buf != 'i') return {buf, off};
        if (p_.coll == "allgather") return {'o', rank * p_.k + off};
        if (p_.coll == "reduce" && p_.gpus[rank].o_chunks != p_.k) return {buf, off};
        return {'o', off};
    }
    /// What a chunk holds at the start.
    std::uint64_t initial(int rank, char buf, int off) {
        if (buf == 's') return no_data;
        if (p_.reduction) {
            if (buf == 'i' || (inplace_ && p_.coll != "reducescatter")) return partial(off, SourceSet(std::uint32_t(rank)));
            return no_data;
        }
        if (p_.coll == "alltoall") {
            if (buf == 'i' || inplace_) return value(rank, off);
        } else if (p_.coll == "allgather") {
            if (buf == 'i') return value(rank, off);
            if (inplace_ && off / p_.k == rank) return value(rank, off % p_.k);
        } else if (rank == 0 && (buf == 'i' || inplace_)) {
            return value(0, off);
        }
        return no_data;
    }
    /// What an output chunk must hold at the end (nullopt: nothing, the outputs of a reduce
    /// outside the root).
    std::optional<std::uint64_t> wanted(int rank, int off) {
        if (p_.reduction) {
            if (p_.coll == "reduce" && rank != 0) return std::nullopt;
            const int chunk = p_.coll == "reducescatter" ? rank * (p_.k / p_.P) + off : off;
            return partial(chunk, SourceSet::range(0, std::uint32_t(p_.P - 1)));
        }
        if (p_.coll == "alltoall") return value(off / p_.k, rank * p_.k + off % p_.k);
        if (p_.coll == "allgather") return value(off / p_.k, off % p_.k);
        return value(0, off);
    }
    std::string describe(std::uint64_t v) const {
        if (v == no_data) return "no data";
        if (p_.reduction) return partial_name(Messages(p_.P, nullptr, p_.k), partials_[v].second, partials_[v].first);
        const int r = value_rank(v), c = value_chunk(v);
        std::string piece = p_.k > 1 ? fmt::format("piece {} of ", c % p_.k) : "";
        if (p_.coll == "alltoall") {
            if (c / p_.k == r) return fmt::format("{}rank {}'s own chunk {}", piece, r, c);
            return fmt::format("{}m({},{})", piece, r, c / p_.k);
        }
        return fmt::format("{}b({})", p_.k > 1 ? fmt::format("piece {} of ", c) : "", r);
    }
    /// What an output chunk lacks or has too much, after describe (reductions: "; it misses a(3)").
    std::string gap(std::uint64_t have, std::uint64_t want) const {
        if (!p_.reduction || have == no_data || partials_[have].first != partials_[want].first) return "";
        return "; " + goal_gap(partials_[have].second, partials_[want].second);
    }
    /// Whether a value stays on its rank: an alltoall rank's own chunk, no message of the collective.
    bool own_chunk(std::uint64_t v) const {
        return !p_.reduction && p_.coll == "alltoall" && value_chunk(v) / p_.k == value_rank(v);
    }
    /// The message a value belongs to, chunk by chunk (docs/exports.md: piece j of a datum is its
    /// chunk j); `reg` is the table's registry of partials (reductions only).
    MessageId message(Composites* reg, const Messages& ms, std::uint64_t v) const {
        if (p_.reduction) return partial_message(*reg, ms, partials_[v].second, partials_[v].first);
        const int r = value_rank(v), c = value_chunk(v);
        if (p_.coll == "alltoall") return ms.personal(r, c / p_.k, c % p_.k);
        return ms.broadcast(r, c);
    }
    /// The reduction of two partials, or the reason it is wrong (different chunks, a
    /// contribution counted twice, no data).
    std::variant<std::uint64_t, std::string> combine(std::uint64_t received, std::uint64_t local) {
        if (received == no_data || local == no_data) return std::string("holds no data");
        const auto& [ca, a] = partials_[received];
        const auto& [cb, b] = partials_[local];
        if (ca != cb)
            return fmt::format("combines {} with {}, partials of different chunks [chunks mixed]", describe(received), describe(local));
        std::vector<std::uint32_t> common, both;
        std::set_intersection(a.items().begin(), a.items().end(), b.items().begin(), b.items().end(), std::back_inserter(common));
        if (!common.empty()) {
            std::string twice;
            for (std::size_t i = 0; i < common.size() && i < 2; ++i)
                twice += fmt::format("{}a({})", i == 0 ? "" : common.size() == 2 ? " and " : ", ", common[i]);
            if (common.size() > 2) twice += fmt::format(" and {} more", common.size() - 2);
            return fmt::format("combines {} with {}, which counts {} twice [counted twice]", describe(received), describe(local), twice);
        }
        std::set_union(a.items().begin(), a.items().end(), b.items().begin(), b.items().end(), std::back_inserter(both));
        return partial(int(ca), SourceSet(std::move(both)));
    }

private:
    std::uint64_t partial(int chunk, SourceSet s) {
        auto [it, fresh] = index_.try_emplace(std::pair(std::uint32_t(chunk), s.items()), partials_.size());
        if (fresh) partials_.emplace_back(std::uint32_t(chunk), std::move(s));
        return it->second;
    }

    const Program& p_;
    bool inplace_;
    std::vector<std::pair<std::uint32_t, SourceSet>> partials_;
    std::map<std::pair<std::uint32_t, std::vector<std::uint32_t>>, std::uint64_t> index_;
};

struct Graph {
    std::vector<std::vector<int>> succ;
    std::vector<int> indeg;
    std::vector<int> matched;    ///< for a sending op: the receiving op (or -1)
    std::vector<int> source;     ///< for a receiving op: the sending op (or -1)
    std::vector<int> publisher;  ///< for an op with a dependency: the step that releases it
    std::vector<int> order;      ///< a topological order of the ops that can run
};

/// Matches sends and receives per connection, resolves dependencies, and orders the ops;
/// reports unmatched transfers and waits that never end.
Graph build_graph(const Program& prog, Problems& pr) {
    const std::size_t n = prog.ops.size();
    Graph g;
    g.succ.resize(n);
    g.indeg.assign(n, 0);
    g.matched.assign(n, -1);
    g.source.assign(n, -1);
    g.publisher.assign(n, -1);
    auto edge = [&](int a, int b) {
        g.succ[a].push_back(b);
        ++g.indeg[b];
    };
    // connections: (from, to, chan) -> the sending and the receiving thread block
    std::map<std::tuple<int, int, int>, std::pair<int, int>> conn;
    for (std::size_t t = 0; t < prog.tbs.size(); ++t) {
        const Tb& tb = prog.tbs[t];
        auto claim = [&](std::tuple<int, int, int> key, bool sending) {
            auto& slot = conn.try_emplace(key, -1, -1).first->second;
            int& mine = sending ? slot.first : slot.second;
            if (mine >= 0) {
                const Tb& other = prog.tbs[mine];
                const Op* at = tb.ops.empty() ? nullptr : &prog.ops[tb.ops[0]];
                pr.add(at ? at->line : 0, at ? at->col : 0,
                       fmt::format("rank {}: thread blocks {} and {} both {} {} on channel {}; a connection has one thread block "
                                   "at each end",
                                   tb.rank, other.id, tb.id, sending ? "send to" : "receive from",
                                   sending ? tb.send : tb.recv, tb.chan));
            }
            mine = int(t);
        };
        if (tb.send >= 0) claim({tb.rank, tb.send, tb.chan}, true);
        if (tb.recv >= 0) claim({tb.recv, tb.rank, tb.chan}, false);
    }
    pr.check();
    for (const auto& [key, ends] : conn) {
        auto [from, to, chan] = key;
        std::vector<int> sends, recvs;
        if (ends.first >= 0)
            for (int o : prog.tbs[ends.first].ops)
                if (prog.ops[o].sends()) sends.push_back(o);
        if (ends.second >= 0)
            for (int o : prog.tbs[ends.second].ops)
                if (prog.ops[o].receives()) recvs.push_back(o);
        const std::size_t m = std::min(sends.size(), recvs.size());
        for (std::size_t i = 0; i < m; ++i) {
            const Op &s = prog.ops[sends[i]], &r = prog.ops[recvs[i]];
            if (s.cnt != r.cnt)
                pr.add(r.line, r.col,
                       fmt::format("{}: receives {} chunks, but the matching send ({}) sends {}", where(prog, r), r.cnt,
                                   where(prog, s), s.cnt));
            g.matched[sends[i]] = recvs[i];
            g.source[recvs[i]] = sends[i];
            edge(sends[i], recvs[i]);
        }
        for (std::size_t i = m; i < recvs.size(); ++i) {
            const Op& r = prog.ops[recvs[i]];
            pr.add(r.line, r.col,
                   fmt::format("{}: can never be satisfied: rank {} sends {} time{} to rank {} on channel {} and this is receive "
                               "{} [deadlock]",
                               where(prog, r), from, sends.size(), sends.size() == 1 ? "" : "s", to, chan, i + 1));
        }
        for (std::size_t i = m; i < sends.size(); ++i) {
            const Op& s = prog.ops[sends[i]];
            pr.add(s.line, s.col,
                   fmt::format("{}: is never received: rank {} receives {} time{} from rank {} on channel {} and this is send {}",
                               where(prog, s), to, recvs.size(), recvs.size() == 1 ? "" : "s", from, chan, i + 1));
        }
    }
    // dependencies: the executor publishes a thread block's progress only at steps with
    // hasdep="1", so a wait for step d of thread block b ends at the first such step >= d
    for (std::size_t o = 0; o < n; ++o) {
        const Op& op = prog.ops[o];
        if (op.depid < 0) continue;
        const Gpu& gpu = prog.gpus[op.rank];
        auto it = gpu.tb_by_id.find(op.depid);
        if (op.depid > MscclLimits::max_dependency_tb)
            pr.add(op.line, op.col, fmt::format("{}: depid=\"{}\" is above {} (the executor stores it in an int8_t) [dependentBid]",
                                                where(prog, op), op.depid, MscclLimits::max_dependency_tb));
        if (it == gpu.tb_by_id.end() || op.deps < 0 || op.deps >= int(prog.tbs[it->second].ops.size())) {
            pr.add(op.line, op.col,
                   fmt::format("{}: waits for thread block {}, step {}, which does not exist", where(prog, op), op.depid, op.deps));
            continue;
        }
        const Tb& dep = prog.tbs[it->second];
        int pub = -1;
        for (std::size_t i = op.deps; i < dep.ops.size() && pub < 0; ++i)
            if (prog.ops[dep.ops[i]].hasdep && prog.ops[dep.ops[i]].type != OpType::nop) pub = dep.ops[i];
        if (pub < 0) {
            pr.add(op.line, op.col,
                   fmt::format("{}: waits for thread block {}, step {}, but neither that step nor a later one of its thread block "
                               "has hasdep=\"1\", so the executor never signals it [deadlock]",
                               where(prog, op), op.depid, op.deps));
            continue;
        }
        if (pub == int(o)) {
            pr.add(op.line, op.col, fmt::format("{}: waits for itself [deadlock]", where(prog, op)));
            continue;
        }
        g.publisher[o] = pub;
        edge(pub, int(o));
    }
    for (const Tb& tb : prog.tbs)
        for (std::size_t i = 1; i < tb.ops.size(); ++i) edge(tb.ops[i - 1], tb.ops[i]);
    pr.check();
    // Kahn's algorithm, smallest op first
    std::vector<int> indeg = g.indeg, ready;
    for (std::size_t o = 0; o < n; ++o)
        if (!indeg[o]) ready.push_back(int(o));
    for (std::size_t h = 0; h < ready.size(); ++h)
        for (int b : g.succ[ready[h]])
            if (!--indeg[b]) ready.push_back(b);
    g.order = std::move(ready);
    if (g.order.size() == n) return g;
    // a cycle: walk back from a stuck op through stuck predecessors until one repeats
    std::vector<std::vector<int>> pred(n);
    for (std::size_t a = 0; a < n; ++a)
        for (int b : g.succ[a]) pred[b].push_back(int(a));
    int at = -1;
    for (std::size_t o = 0; o < n && at < 0; ++o)
        if (indeg[o]) at = int(o);
    std::vector<int> seen_at(n, -1), path;
    while (seen_at[at] < 0) {
        seen_at[at] = int(path.size());
        path.push_back(at);
        for (int p : pred[at])
            if (indeg[p]) {
                at = p;
                break;
            }
    }
    std::vector<int> cycle(path.begin() + seen_at[at], path.end());
    std::string text = where(prog, prog.ops[cycle[0]]);
    for (std::size_t i = 1; i < cycle.size() && i < 8; ++i) text += " waits for " + where(prog, prog.ops[cycle[i]]);
    if (cycle.size() > 8) text += fmt::format(" ... ({} steps)", cycle.size());
    text += " waits for the first again";
    const Op& first = prog.ops[cycle[0]];
    pr.add(first.line, first.col, fmt::format("{} [deadlock]", text));
    pr.check();
    return g;
}

/// Happens-before by vector clocks over thread blocks: clock[o][t] = how many steps of thread
/// block t are ordered before or at o (program order, dependencies, send before its receive).
class Clocks {
public:
    Clocks(const Program& prog, const Graph& g) : T_(prog.tbs.size()), c_(prog.ops.size() * T_, 0) {
        for (int o : g.order) {
            std::uint16_t* mine = &c_[std::size_t(o) * T_];
            const Op& op = prog.ops[o];
            auto join = [&](int p) {
                const std::uint16_t* theirs = &c_[std::size_t(p) * T_];
                for (std::size_t t = 0; t < T_; ++t) mine[t] = std::max(mine[t], theirs[t]);
            };
            const Tb& tb = prog.tbs[op.tb];
            if (op.pos > 0) join(tb.ops[op.pos - 1]);
            if (g.publisher[o] >= 0) join(g.publisher[o]);
            if (g.source[o] >= 0) join(g.source[o]);
            mine[op.tb] = std::uint16_t(op.pos + 1);
        }
    }
    bool before(const Program& prog, int a, int b) const {
        return c_[std::size_t(b) * T_ + prog.ops[a].tb] >= prog.ops[a].pos + 1;
    }

private:
    std::size_t T_;
    std::vector<std::uint16_t> c_;
};

/// Runs the program in one mode (in place or not): checks for data races, simulates the
/// values (reductions: the partials, refusing a reduction that mixes chunks or counts a
/// contribution twice), checks the outputs; with `builder`, adds the levelled transfers to it.
void run(const Program& prog, const Graph& g, const Clocks& clocks, bool inplace, Problems& pr, TableBuilder* builder) {
    Layout layout(prog, inplace);
    const std::string mode = prog.inplace && prog.outofplace ? (inplace ? " (in place)" : " (out of place)") : "";
    // accesses per location, in the topological order
    struct Access {
        int op;
        bool write;
    };
    std::map<std::tuple<int, char, int>, std::vector<Access>> accesses;
    // a copy onto the same chunk (the local copy of an in-place allgather or broadcast) is no access
    auto self_copy = [&](const Op& op, int x) {
        if (op.type != OpType::copy) return false;
        Location a = layout.locate(op.rank, op.srcbuf, op.srcoff + x), b = layout.locate(op.rank, op.dstbuf, op.dstoff + x);
        return a.buf == b.buf && a.off == b.off;
    };
    for (int o : g.order) {
        const Op& op = prog.ops[o];
        for (int x = 0; x < op.cnt; ++x) {
            if (self_copy(op, x)) continue;
            if (op.reads_src()) {
                Location l = layout.locate(op.rank, op.srcbuf, op.srcoff + x);
                accesses[{op.rank, l.buf, l.off}].push_back({o, false});
            }
            if (op.writes_dst()) {
                Location l = layout.locate(op.rank, op.dstbuf, op.dstoff + x);
                accesses[{op.rank, l.buf, l.off}].push_back({o, true});
            }
        }
    }
    for (const auto& [loc, list] : accesses) {
        auto [rank, buf, off] = loc;
        int last_write = -1;
        std::vector<int> reads;
        for (const Access& a : list) {
            auto race = [&, buf = buf, off = off](int other) {  // clang 14 cannot capture bindings by reference
                const Op &x = prog.ops[other], &y = prog.ops[a.op];
                pr.add(y.line, y.col,
                       fmt::format("{}{}: {} chunk {}[{}] and {} {} it with nothing ordering the two (a missing dependency) "
                                   "[data race]",
                                   where(prog, y), mode, a.write ? "writes" : "reads", buf, off, where(prog, x),
                                   x.writes_dst() ? "writes" : "reads"));
            };
            if (a.write) {
                if (last_write >= 0 && last_write != a.op && !clocks.before(prog, last_write, a.op)) race(last_write);
                for (int r : reads)
                    if (r != a.op && !clocks.before(prog, r, a.op)) race(r);
                last_write = a.op;
                reads.clear();
            } else {
                if (last_write >= 0 && last_write != a.op && !clocks.before(prog, last_write, a.op)) race(last_write);
                reads.push_back(a.op);
            }
        }
    }
    if (!pr.empty()) return;
    // values and levels; every chunk with the step that wrote it last
    struct Cell {
        std::uint64_t value = no_data;
        int writer = -1;
    };
    std::vector<std::vector<Cell>> out(prog.P), scr(prog.P), in(prog.P);
    for (int r = 0; r < prog.P; ++r) {
        const Gpu& gpu = prog.gpus[r];
        in[r].resize(gpu.i_chunks);
        out[r].resize(gpu.o_chunks);
        scr[r].resize(gpu.s_chunks);
        for (int c = 0; c < gpu.i_chunks; ++c) in[r][c].value = layout.initial(r, 'i', c);
        for (int c = 0; c < gpu.o_chunks; ++c) out[r][c].value = layout.initial(r, 'o', c);
    }
    auto cell = [&](int rank, char buf, int off) -> Cell& {
        Location l = layout.locate(rank, buf, off);
        return l.buf == 'i' ? in[rank][l.off] : l.buf == 'o' ? out[rank][l.off] : scr[rank][l.off];
    };
    const std::size_t n = prog.ops.size();
    std::vector<Step> finish(n, 0), arrival(n, 0);
    std::vector<std::vector<std::uint64_t>> carried(n);  // per receiving op: the chunks on the wire
    Composites* reg = builder && prog.reduction ? &builder->composites() : nullptr;
    const Messages ms = builder ? builder->messages() : Messages(prog.P, nullptr, prog.k);
    for (int o : g.order) {
        const Op& op = prog.ops[o];
        const Tb& tb = prog.tbs[op.tb];
        Step ready = op.pos > 0 ? finish[tb.ops[op.pos - 1]] : 0;
        if (g.publisher[o] >= 0) ready = std::max(ready, finish[g.publisher[o]]);
        // the chunks the step makes: received, read, or the reduction of the two (re: of the
        // destination and the source)
        std::vector<std::uint64_t> vals(op.cnt, no_data);
        if (op.receives()) {
            vals = std::move(carried[o]);
            ready = std::max(ready, arrival[o]);
        }
        for (int x = 0; x < op.cnt && op.type != OpType::nop; ++x) {
            if (self_copy(op, x)) continue;
            if (!op.reads_src()) continue;
            const std::uint64_t local = cell(op.rank, op.srcbuf, op.srcoff + x).value;
            if (!op.reduces()) {
                vals[x] = local;
                continue;
            }
            const std::uint64_t other = op.type == OpType::reduce ? cell(op.rank, op.dstbuf, op.dstoff + x).value : vals[x];
            auto sum = layout.combine(other, local);
            if (const std::string* why = std::get_if<std::string>(&sum)) {
                if (other == no_data && op.receives()) continue;  // reported where the missing data was sent
                const bool src_empty = local == no_data;
                pr.add(op.line, op.col,
                       *why == "holds no data"
                           ? fmt::format("{}{}: reduces with chunk {}[{}], which holds no data at that point", where(prog, op), mode,
                                         src_empty ? op.srcbuf : op.dstbuf, (src_empty ? op.srcoff : op.dstoff) + x)
                           : fmt::format("{}{}: {}", where(prog, op), mode, *why));
                vals[x] = no_data;
                continue;
            }
            vals[x] = std::get<std::uint64_t>(sum);
        }
        if (op.writes_dst())
            for (int x = 0; x < op.cnt; ++x) {
                if (self_copy(op, x)) continue;
                cell(op.rank, op.dstbuf, op.dstoff + x) = Cell{vals[x], o};
            }
        finish[o] = ready;
        if (!op.sends()) continue;
        // on the wire: chunk x in step ready + 1 + x, along the route to the peer
        const int to = tb.send, recv = g.matched[o];
        Step last = 0;
        for (int x = 0; x < op.cnt; ++x) {
            const std::uint64_t v = vals[x];
            if (v == no_data) {
                if (op.receives()) continue;  // reported where the missing data was sent, or at the reduction
                pr.add(op.line, op.col,
                       fmt::format("{}{}: sends chunk {}[{}], which holds no data at that point", where(prog, op), mode, op.srcbuf,
                                   op.srcoff + x));
                continue;
            }
            if (layout.own_chunk(v)) {
                pr.add(op.line, op.col,
                       fmt::format("{}{}: sends {}, which the alltoall keeps on its own rank (no message of the collective)",
                                   where(prog, op), mode, layout.describe(v)));
                continue;
            }
            const Step sent = ready + 1 + Step(x);
            last = builder ? builder->send_cut_through(sent, Node{std::uint32_t(op.rank)}, Node{std::uint32_t(to)},
                                                       layout.message(reg, ms, v))
                           : sent;
        }
        finish[o] = ready + Step(op.cnt);
        if (recv >= 0) {
            carried[recv] = vals;
            arrival[recv] = std::max(last, finish[o]);
        }
    }
    if (!pr.empty()) return;
    for (int r = 0; r < prog.P; ++r)
        for (int c = 0; c < prog.gpus[r].o_chunks; ++c) {
            const std::optional<std::uint64_t> want = layout.wanted(r, c);
            const Cell& have = cell(r, 'o', c);
            if (!want || have.value == *want) continue;
            const int w = have.writer;
            std::string by = w < 0                  ? ", never written"
                             : g.source[w] >= 0 ? fmt::format(", written by {}, which {} sent", where(prog, prog.ops[w]),
                                                              where(prog, prog.ops[g.source[w]]))
                                                : fmt::format(", written by {}", where(prog, prog.ops[w]));
            const Op* at = w >= 0 ? &prog.ops[w] : nullptr;
            pr.add(at ? at->line : 0, at ? at->col : 0,
                   fmt::format("rank {}{}: output chunk {} holds {}{}, but the {} needs {} there{} [completeness]", r, mode, c,
                               layout.describe(have.value), by, prog.coll, layout.describe(*want), layout.gap(have.value, *want)));
        }
}

}  // namespace

bool looks_like_xml(std::string_view text) {
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        return c == '<';
    }
    return false;
}

SendTable parse_msccl_ir(std::string_view text, std::string_view name, const MscclImportOptions& opt) {
    Elem algo = parse_xml(text, name);
    Problems pr(name);
    Program prog = build_program(algo, opt, pr);
    std::shared_ptr<const Topology> topo =
        Topology::parse(opt.topology.empty() ? fmt::format("complete:{}", prog.P) : opt.topology);
    if (topo->processors() != std::uint32_t(prog.P))
        throw InputError(fmt::format("{}: the program has {} ranks but {} has {} processors", name, prog.P, topo->spec(),
                                     topo->processors()));
    Model model = topo->default_model();
    if (model.timing != Timing::hop)
        throw InputError(fmt::format("{}: MSCCL-IR is read under hop timing; {} defaults to wormhole timing", name, topo->spec()));
    Graph g = build_graph(prog, pr);
    const std::size_t entries = prog.ops.size() * prog.tbs.size();
    if (entries > (std::size_t{1} << 27))
        throw InputError(fmt::format("{}: {} steps in {} thread blocks: checking data races would take more than 256 MB of "
                                     "clocks; not checked",
                                     name, prog.ops.size(), prog.tbs.size()));
    for (const Tb& tb : prog.tbs)
        if (tb.ops.size() > 65535) throw InputError(fmt::format("{}: a thread block with more than 65535 steps", name));
    Clocks clocks(prog, g);
    Collective coll{prog.coll == "alltoall"        ? CollectiveKind::alltoall
                    : prog.coll == "allgather"     ? CollectiveKind::allgather
                    : prog.coll == "allreduce"     ? CollectiveKind::allreduce
                    : prog.coll == "reduce"        ? CollectiveKind::reduce
                    : prog.coll == "reducescatter" ? CollectiveKind::reduce_scatter
                                                   : CollectiveKind::broadcast,
                    Node{0},
                    {}};
    // k chunks per datum are the table's chunks (C): piece j of a datum is its chunk j
    try {
        coll.set_chunks(std::uint64_t(prog.k), *topo);
    } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {} chunks per datum: {}", name, prog.k, e.what()));
    }
    TableBuilder builder(topo, model, coll);
    bool first = true;
    for (bool inplace : {false, true}) {
        if (inplace ? !prog.inplace : !prog.outofplace) continue;
        run(prog, g, clocks, inplace, pr, first ? &builder : nullptr);
        first = false;
    }
    pr.check();
    return std::move(builder).finish();
}

}  // namespace collsched
