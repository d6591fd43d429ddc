#include "compiler/interop/mscclpp_check.hpp"
#include "compiler/interop/mscclpp_lowering.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "compiler/interop/async_program.hpp"
#include "compiler/interop/expect_file.hpp"
#include "compiler/core/json_tree.hpp"
#include "dsl/excerpt.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/teardown.hpp"

namespace collsched::mscclpp {

bool Lowering::build() {
    P_ = int(plan_.gpus.size());
    atoms_per_chunk();
    pair_channels();
    if (failed_) return false;
    initial_values();
    for (int g = 0; g < P_; ++g) {
        if (deadline.passed()) throw LimitReached(fmt::format("time limit (modelling the plan, at GPU {} of {})", g, P_));
        // the block whose id is t, for every t at once (the last of a repeated id, as the parser
        // overwrites it): one pass, where a search per block was quadratic in the blocks
        const auto& tbs = plan_.gpus[std::size_t(g)].tbs;
        std::vector<const Tb*> by_id(tbs.size(), nullptr);
        for (const Tb& x : tbs)
            if (x.id >= 0 && std::size_t(x.id) < tbs.size()) by_id[std::size_t(x.id)] = &x;
        for (std::size_t t = 0; t < tbs.size(); ++t) lower_tb(g, int(t), by_id[t]);
    }
    finish_barriers();
    finish_packets();
    finish_semaphores();
    return !failed_;
}

std::string Lowering::slot_name(Slot s) const {
    const bool packet = s.region >= 3;
    const Buf b = Buf(s.region % 3);
    std::string part = L_ > 1 ? fmt::format(" (part {} of {})", s.index % std::uint32_t(L_) + 1, L_) : "";
    return fmt::format("GPU {}'s {} chunk {}{}{}", s.rank, buffer_name(b), s.index / std::uint32_t(L_),
                       packet ? " (LL packets)" : "", part);
}

std::tuple<int, int, int> Lowering::atom_parts(async::Atom a) const {
    const int part = int(a % std::uint32_t(L_));
    const std::uint32_t rc = a / std::uint32_t(L_);
    return {int(rc / std::uint32_t(Ci_)), int(rc % std::uint32_t(Ci_)), part};
}

async::Atom Lowering::atom(int rank, std::int64_t chunk, int part) const {
    return async::Atom((std::uint32_t(rank) * std::uint32_t(Ci_) + std::uint32_t(chunk)) * std::uint32_t(L_) + std::uint32_t(part));
}

Slot Lowering::slot(int rank, Buf b, bool packet, std::int64_t chunk, std::int64_t part) const {
    if (nccl_inplace_ && !packet && b == Buf::output) {
        const std::int64_t c = rank * plan_.gpus[std::size_t(rank)].output_chunks + chunk;
        return Slot{std::uint32_t(rank), region(Buf::input, false), std::uint32_t(c * L_ + part)};
    }
    if (!nccl_inplace_ && !packet && plan_.inplace && b == Buf::input) {
        const std::int64_t c = plan_.collective == "allgather" ? rank * plan_.gpus[std::size_t(rank)].input_chunks + chunk : chunk;
        return Slot{std::uint32_t(rank), region(Buf::output, false), std::uint32_t(c * L_ + part)};
    }
    return Slot{std::uint32_t(rank), region(b, packet), std::uint32_t(chunk * L_ + part)};
}

std::int64_t Lowering::capacity(int rank, Buf b, bool packet) const {
    const Gpu& g = plan_.gpus[std::size_t(rank)];
    const std::int64_t plain = b == Buf::input ? g.input_chunks : b == Buf::output ? g.output_chunks : g.scratch_chunks;
    if (b == Buf::scratch) return plan_.packets() ? (packet ? plain : 2 * plain) : (packet ? plain / 2 : plain);
    return packet ? plain / 2 : plain;
}

void Lowering::fail(const Op& op, std::string what) {
    failed_ = true;
    finding("structure", op, std::move(what));
}

void Lowering::atoms_per_chunk() {
    // L stays at most 64 before each step and a size is below 2^32, so every least common multiple
    // computed is exact in 64 bits; the first op that takes it past 64 is named
    std::int64_t L = 1;
    std::function<void(const Op&)> visit = [&](const Op& op) {
        if (op.tbg_size > 1) {
            const std::int64_t next = std::lcm(L, op.tbg_size);
            if (next > max_parts)
                throw InputError(fmt::format("{}:{}:{}: {}.tbg_info: tbg_size {} with thread-block groups of {} elsewhere: the "
                                             "least common multiple of the group sizes is {}, and collsched splits a chunk into "
                                             "at most {} parts (beyond its limit: the plan is not checked)",
                                             file_, op.pos.line, op.pos.col, op.path, op.tbg_size,
                                             L == 1 ? std::string("size 1") : fmt::format("sizes dividing {}", L), next, max_parts));
            L = next;
        }
        for (const Op& in : op.inner) visit(in);
    };
    for (const Gpu& g : plan_.gpus)
        for (const Tb& tb : g.tbs)
            for (const Op& op : tb.ops) visit(op);
    L_ = int(L);
    // every input and output chunk part is a value the replay tracks: as MSCCL-IR's reader, at most 2^24
    std::int64_t parts = 0;
    for (const Gpu& g : plan_.gpus) parts += (g.input_chunks + g.output_chunks) * L;
    if (parts > max_chunk_parts)
        throw InputError(fmt::format("{}: {} input and output chunk parts over {} GPUs ({} per chunk); collsched checks at most {} "
                                     "(beyond its limit: the plan is not checked)",
                                     file_, parts, plan_.gpus.size(), L, max_chunk_parts));
    Ci_ = 1;
    for (const Gpu& g : plan_.gpus) Ci_ = std::max(Ci_, g.input_chunks);
    for (const Gpu& g : plan_.gpus)
        if (g.input_chunks != plan_.gpus[0].input_chunks || g.output_chunks != plan_.gpus[0].output_chunks)
            out_.push_back({"blind spot", fmt::format("gpus[{}]", g.id), g.pos,
                            fmt::format("GPU {} has {}/{} input/output chunks and GPU 0 {}/{}: every rank sizes its chunks by its "
                                        "own counts (execution_plan.cc:601-619), so a chunk index means different bytes on the two",
                                        g.id, g.input_chunks, g.output_chunks, plan_.gpus[0].input_chunks, plan_.gpus[0].output_chunks)});
}

void Lowering::pair_channels() {
    for (Chan type : {Chan::memory, Chan::port}) {
        auto& pairs = type == Chan::memory ? mem_pair_ : port_pair_;
        auto peers_of = [&](int r) -> const std::vector<int>& {
            return type == Chan::memory ? plan_.gpus[std::size_t(r)].memory_peers : plan_.gpus[std::size_t(r)].port_peers;
        };
        // per rank: peer -> the positions of its channels to that peer, in order (one pass over the
        // channels; a scan of the peer's list per channel was quadratic in the channels)
        std::vector<std::map<int, std::vector<int>>> at(static_cast<std::size_t>(P_));
        pairs.resize(std::size_t(P_));
        for (int r = 0; r < P_; ++r) {
            const auto& peers = peers_of(r);
            pairs[std::size_t(r)].assign(peers.size(), -1);
            for (std::size_t k = 0; k < peers.size(); ++k) at[std::size_t(r)][peers[k]].push_back(int(k));
        }
        for (int r = 0; r < P_; ++r) {
            const Gpu& gr = plan_.gpus[std::size_t(r)];
            for (const auto& [p, mine] : at[std::size_t(r)]) {
                if (p < 0 || p >= P_ || p == r) continue;
                auto it = at[std::size_t(p)].find(r);
                static const std::vector<int> none;
                const std::vector<int>& back = it == at[std::size_t(p)].end() ? none : it->second;
                for (std::size_t o = 0; o < mine.size() && o < back.size(); ++o) pairs[std::size_t(r)][std::size_t(mine[o])] = back[o];
                const int n = int(mine.size()), m = int(back.size());
                if (m != n && r < p)
                    out_.push_back({"blind spot", fmt::format("gpus[{}].channels", r), gr.pos,
                                    fmt::format("GPU {} has {} {} channel{} to GPU {}, GPU {} has {} back: the executor pairs "
                                                "them in order and connects the {} surplus to a channel no thread block "
                                                "uses (executor.cc:304-311), whose signals nobody waits for and whose waits "
                                                "nobody releases",
                                                r, n, chan_name(type), n == 1 ? "" : "s", p, p, m, std::abs(n - m))});
                if (m == 0 && r > p)
                    out_.push_back({"blind spot", fmt::format("gpus[{}].channels", r), gr.pos,
                                    fmt::format("GPU {} has {} channels to GPU {}, which has none back", r, chan_name(type), p)});
            }
        }
    }
}

void Lowering::initial_values() {
    for (int r = 0; r < P_; ++r) {
        const Gpu& g = plan_.gpus[std::size_t(r)];
        for (std::int64_t c = 0; c < g.input_chunks; ++c)
            for (int a = 0; a < L_; ++a) prog_.initial(slot(r, Buf::input, false, c, a), prog_.values().atom(atom(r, c, a)));
    }
}

void Lowering::finish_barriers() {
    for (auto& [id, rounds] : barriers_) {
        const auto [g, b] = id;
        for (std::size_t r = 0; r < rounds.joins.size(); ++r) {
            const auto& calls = rounds.calls[r];
            const int want = calls.front().second->num_threadblocks;
            for (const auto& c : calls)
                if (c.second->num_threadblocks != want)
                    finding("deadlock", *c.second,
                            fmt::format("calls barrier {} (round {}) with num_threadblocks {}, another thread block with {}: "
                                        "the device syncer waits for the count its caller gives",
                                        b, r + 1, c.second->num_threadblocks, want));
            if (int(calls.size()) != want)
                prog_.never_released(rounds.joins[r],
                                     // the finding starts with the join's label, "barrier B of GPU G, round R"
                                     fmt::format("waits for {} thread blocks, but {} arrive{}", want, calls.size(),
                                                 int(calls.size()) > want ? " (the count passes its target and never equals it again)"
                                                                          : ""));
        }
    }
}

void Lowering::finish_packets() {
    std::set<std::pair<OpId, OpId>> edges;
    std::set<OpId> stuck;
    for (const auto& [o, x] : packet_reads_) {
        auto it = packet_writers_.find(x);
        if (it == packet_writers_.end()) {
            if (stuck.insert(o).second)
                prog_.never_released(o, fmt::format("reads LL packets of {}, which nothing writes in this launch: it spins on their "
                                                    "flag forever",
                                                    slot_name(x)));
            continue;
        }
        std::vector<OpId> w = it->second;
        std::sort(w.begin(), w.end());
        w.erase(std::unique(w.begin(), w.end()), w.end());
        // two writes in one launch: the reader sees either; harmless only when both write the same
        // packets (a multicast that includes its sender), which the replay decides
        if (w.size() > 1 && races_.insert({x.rank, x.region, x.index}).second) multi_writers_.push_back({o, x, w});
        for (OpId a : w)
            if (a != o && edges.insert({a, o}).second) prog_.order(a, o);
    }
}

void Lowering::finish_semaphores() {
    for (int g = 0; g < P_; ++g) {
        const Gpu& gpu = plan_.gpus[std::size_t(g)];
        for (std::size_t id = 0; id < gpu.semaphores.size(); ++id) {
            const int rel = releases_[{g, int(id)}], acq = acquires_[{g, int(id)}];
            if (rel != acq && (rel > 0 || acq > 0))
                out_.push_back({"blind spot", fmt::format("gpus[{}].semaphores[{}]", g, id), gpu.pos,
                                fmt::format("GPU {} releases device semaphore {} {} time{} and acquires it {}: its value persists, "
                                            "so every launch starts it {} by {}",
                                            g, id, rel, rel == 1 ? "" : "s", acq, rel > acq ? "higher" : "lower", std::abs(rel - acq))});
        }
    }
    for (const auto& [k, n] : signals_) {
        const auto [c, g, ch] = k;
        const int w = waits_count(c, g, ch);
        if (n > w) {
            const auto& peers = c == Chan::memory ? plan_.gpus[std::size_t(g)].memory_peers : plan_.gpus[std::size_t(g)].port_peers;
            out_.push_back({"blind spot", fmt::format("gpus[{}].channels", g), plan_.gpus[std::size_t(g)].pos,
                            fmt::format("GPU {} signals {} channel {} (to GPU {}) {} time{}, and the peer waits {} time{}: the "
                                        "semaphore's count persists across launches, so every later launch finds {} signal{} it "
                                        "did not send",
                                        g, chan_name(c), ch, peers[std::size_t(ch)], n, n == 1 ? "" : "s", w, w == 1 ? "" : "s",
                                        n - w, n - w == 1 ? "" : "s")});
        }
    }
}

int Lowering::waits_count(Chan c, int g, int ch) const {
    const auto& pairs = c == Chan::memory ? mem_pair_ : port_pair_;
    const int back = pairs[std::size_t(g)][std::size_t(ch)];
    if (back < 0) return 0;
    const auto& peers = c == Chan::memory ? plan_.gpus[std::size_t(g)].memory_peers : plan_.gpus[std::size_t(g)].port_peers;
    auto it = waits_.find({c, peers[std::size_t(ch)], back});
    return it == waits_.end() ? 0 : it->second;
}

void Lowering::semaphore_initial_values() {
    for (int g = 0; g < int(plan_.gpus.size()); ++g) {
        const Gpu& gpu = plan_.gpus[std::size_t(g)];
        if (gpu.semaphores.empty()) continue;
        async::AgentId a = prog_.add_agent(std::uint32_t(g));
        for (std::size_t id = 0; id < gpu.semaphores.size(); ++id)
            for (std::int64_t v = 0; v < gpu.semaphores[id] && v < 1024; ++v) {
                OpId o = prog_.add_op(a, {gpu.pos.line, gpu.pos.col});
                op_of_.push_back(nullptr);
                what_.push_back(fmt::format("GPU {}'s semaphore {} (initial value {})", g, id, gpu.semaphores[id]));
                moves_.push_back(false);
                prog_.send(o, key(device_sem, g, std::uint32_t(id)), async::KeyKind::semaphore);
            }
    }
}

namespace {

/// "in(3,5)", "in({0..7},5)" (a sum over ranks), with parts when chunks are split.
std::string value_name(const Lowering& lw, const std::vector<async::Atom>& atoms) {
    std::map<std::pair<int, int>, std::vector<int>> by;  // (chunk, part) -> ranks
    for (async::Atom a : atoms) {
        auto [r, c, part] = lw.atom_parts(a);
        by[{c, part}].push_back(r);
    }
    std::string out;
    for (const auto& [cp, ranks] : by) {
        std::string rs;
        if (ranks.size() == 1) {
            rs = std::to_string(ranks[0]);
        } else {
            bool run = true;
            for (std::size_t i = 1; i < ranks.size(); ++i) run = run && ranks[i] == ranks[i - 1] + 1;
            if (run) {
                rs = fmt::format("{{{}..{}}}", ranks.front(), ranks.back());
            } else {
                for (std::size_t i = 0; i < ranks.size(); ++i) rs += fmt::format("{}{}", i ? "," : "{", ranks[i]);
                rs += "}";
            }
        }
        std::string part = lw.L() > 1 ? fmt::format(" part {}", cp.second + 1) : "";
        out += fmt::format("{}in({},{}){}", out.empty() ? "" : " + ", rs, cp.first, part);
    }
    return out;
}

/// The collective's postcondition as goals; a note when there is none.
std::string set_goals(const Plan& plan, Lowering& lw, const std::vector<Expectation>& expect, std::vector<Finding>& findings) {
    async::Program& p = lw.program();
    const int P = int(plan.gpus.size()), L = lw.L();
    // the output as the call's buffers alias it (in place under NCCL's reducescatter convention,
    // output chunk j is input chunk r * output_chunks + j)
    auto out_slot = [&](int r, std::int64_t c, int a) { return lw.slot(r, Buf::output, false, c, a); };
    if (!expect.empty()) {
        for (const Expectation& e : expect) {
            // the ranks and chunks were checked against the plan (check_expectations, exit 2)
            const Buf buf = e.buffer == 'i' ? Buf::input : e.buffer == 's' ? Buf::scratch : Buf::output;
            for (int a = 0; a < L; ++a) {
                std::vector<async::Atom> atoms;
                for (auto [r, c] : e.holds) atoms.push_back(lw.atom(r, c, a));
                p.goal(lw.slot(e.rank, buf, false, e.chunk, a), p.values().make(atoms));
            }
        }
        return "";
    }
    const std::string& coll = plan.collective;
    auto sizes = [&](auto ok, std::string_view want) -> bool {
        for (const Gpu& g : plan.gpus)
            if (!ok(g.input_chunks, g.output_chunks)) {
                findings.push_back({"result", fmt::format("gpus[{}]", g.id), g.pos,
                                    fmt::format("{} input and {} output chunks, but a {} on {} GPUs has {} (the executor throws \"Size per "
                                                "chunks inconsistent\" or the buffers do not hold the collective)",
                                                g.input_chunks, g.output_chunks, coll, P, want)});
                return false;
            }
        return true;
    };
    if (coll == "allgather") {
        if (!sizes([&](auto i, auto o) { return o == i * P; }, "P times as many output chunks as input chunks")) return "";
        for (int r = 0; r < P; ++r) {
            const std::int64_t Ci = plan.gpus[0].input_chunks;
            for (std::int64_t c = 0; c < plan.gpus[std::size_t(r)].output_chunks; ++c)
                for (int a = 0; a < L; ++a) p.goal(out_slot(r, c, a), p.values().atom(lw.atom(int(c / Ci), c % Ci, a)));
        }
        return "";
    }
    if (coll == "allreduce" || coll == "reducescatter") {
        const bool rs = coll == "reducescatter";
        if (!sizes([&](auto i, auto o) { return rs ? i == o * P : i == o; }, rs ? "P times as many input chunks as output chunks" : "as many output chunks as input chunks"))
            return "";
        for (int r = 0; r < P; ++r) {
            const std::int64_t Co = plan.gpus[std::size_t(r)].output_chunks;
            for (std::int64_t c = 0; c < Co; ++c)
                for (int a = 0; a < L; ++a) {
                    std::vector<async::Atom> atoms;
                    for (int s = 0; s < P; ++s) atoms.push_back(lw.atom(s, rs ? r * Co + c : c, a));
                    p.goal(out_slot(r, c, a), p.values().make(atoms));
                }
        }
        return "";
    }
    if (coll == "alltoall") {
        if (!sizes([&](auto i, auto o) { return i == o && i % P == 0; }, "as many output as input chunks, a multiple of P")) return "";
        for (int d = 0; d < P; ++d) {
            const std::int64_t K = plan.gpus[std::size_t(d)].output_chunks / P;
            for (int s = 0; s < P; ++s)
                for (std::int64_t j = 0; j < K; ++j)
                    for (int a = 0; a < L; ++a) p.goal(out_slot(d, s * K + j, a), p.values().atom(lw.atom(s, d * K + j, a)));
        }
        return "";
    }
    return fmt::format("the result is not checked: collective \"{}\" has no postcondition collsched knows (allgather, allreduce, "
                       "reducescatter, alltoall); --expect FILE gives one",
                       excerpt(coll));
}

}  // namespace

namespace {

PlanReport check_in(const ReadResult& read, const std::vector<Expectation>& expect, bool nccl_inplace, Deadline deadline);

}  // namespace

PlanReport check_plan(const ReadResult& read, const std::vector<Expectation>& expect, Deadline deadline) {
    PlanReport rep = check_in(read, expect, false, deadline);
    // an in-place reducescatter has two conventions (docs/exports.md, "In place"): the verdict is
    // mscclpp's, and NCCL's is checked beside it
    if (read.plan.inplace && read.plan.collective == "reducescatter" && expect.empty() && rep.modelled) {
        PlanReport nccl = check_in(read, expect, true, deadline);
        rep.nccl_verdict = std::string(nccl.verdict());
        for (const Finding& f : nccl.findings)
            if (f.rule == "result" || f.rule == "deadlock" || f.rule == "data race") {
                rep.nccl_first = f;
                break;
            }
    }
    return rep;
}

namespace {

/// How the engine names the lowered plan's ops, chunks, values and semaphores in its findings.
async::Naming naming(const Lowering& lw, const Plan& plan) {
    async::Naming names;
    names.op = [&lw](OpId o) { return lw.what()[o]; };
    names.slot = [&lw](Slot s) { return lw.slot_name(s); };
    names.value = [&lw](const std::vector<async::Atom>& a) { return value_name(lw, a); };
    names.key = [&plan](std::uint64_t k) {
        const auto space = k >> 56;
        const int g = int((k >> 32) & 0xffffff);
        const std::uint32_t idx = std::uint32_t(k);
        if (space == device_sem) return fmt::format("GPU {}'s device semaphore {}", g, idx);
        const Gpu& gpu = plan.gpus[std::size_t(g)];
        const auto& peers = space == memory_sem ? gpu.memory_peers : gpu.port_peers;
        const std::uint32_t ch = idx & ~phantom;
        const std::string peer = ch < peers.size() ? fmt::format(" (to GPU {})", peers[ch]) : "";
        if (idx & phantom)
            return fmt::format("the unpaired peer end of GPU {}'s {} channel {}{}", g, space == memory_sem ? "memory" : "port", ch, peer);
        return fmt::format("GPU {}'s {} channel {}{}", g, space == memory_sem ? "memory" : "port", ch, peer);
    };
    return names;
}

/// The lanes of a data op: per lane the GPU it reads from (the op's own, or the peer a get reads),
/// the peers it writes, and the input pieces it carries (whole chunks: the part-0 atoms).
struct LaneMove {
    int from = 0;
    std::vector<int> tos;
    std::vector<std::pair<int, int>> value;
};
LaneMove lane_move(Lowering& lw, const async::Report& r, OpId o, std::size_t x) {
    const auto& od = lw.program().op(o);
    const async::Lane& lane = od.lanes[x];
    LaneMove m;
    m.from = int(od.rank);
    for (const async::Operand& in : lane.in)
        if (!in.received && int(in.slot.rank) != m.from) m.from = int(in.slot.rank);
    // every peer the lane writes to (put, ppkt and respkt to several peers), else the GPU itself
    for (const Slot& s : lane.out)
        if (int(s.rank) != int(od.rank) && std::find(m.tos.begin(), m.tos.end(), int(s.rank)) == m.tos.end()) m.tos.push_back(int(s.rank));
    if (m.tos.empty()) m.tos.push_back(int(od.rank));
    for (async::Atom a : r.values.atoms(r.sent[o][x])) {
        auto [rk, c, part] = lw.atom_parts(a);
        if (part == 0) m.value.emplace_back(rk, c);
    }
    return m;
}

/// The as-soon-as-possible run of the plan's copies between GPUs (docs/time.md, "Protocols"): an op
/// starts when the ops the plan orders it after have finished (its agent's previous op, its
/// explicit predecessors, the signal its wait matched); a data op puts its k-th entry (its lanes from one
/// sender to the same peers: a src_buff/dst_buff range of `size` chunks) on the wire in step start + k, the
/// entry's chunks in that step as one op (rep.schedule_ops), and finishes with its last; the others take no step.
void schedule_moves(Lowering& lw, const async::Report& r, PlanReport& rep) {
    std::vector<std::pair<std::uint32_t, Movement>>& out = rep.schedule;
    std::uint32_t entries = 0;
    const async::Program& p = lw.program();
    std::vector<std::uint32_t> finish(p.ops(), 0);
    for (OpId o : r.order) {
        const auto& od = p.op(o);
        std::uint32_t ready = 0;
        if (od.pos > 0) ready = finish[p.agent_ops(od.agent)[od.pos - 1]];
        for (OpId b : od.after) ready = std::max(ready, finish[b]);
        if (r.source[o] != async::no_op) ready = std::max(ready, finish[r.source[o]]);
        std::uint32_t k = 0;
        const Op* plan_op = lw.op_of()[o];
        if (plan_op && (plan_op->code == Code::glres || plan_op->code == Code::gstore)) {
            // a switch op: per whole chunk, up to the switch in one step and down in the next
            for (std::size_t x = 0; x < od.lanes.size() && x < r.sent[o].size(); ++x) {
                LaneMove m = lane_move(lw, r, o, x);
                if (m.value.empty()) continue;
                SwitchMove sm{int(od.rank), plan_op->code == Code::glres, {}, std::move(m.value)};
                for (const Slot& s : od.lanes[x].out) sm.group.push_back(int(s.rank));
                rep.switch_schedule.push_back({ready + k + 1, std::move(sm)});
                k += 2;
            }
        } else if (lw.moves()[o]) {
            // an op of one entry (a port op: each thread's entry is an op of its own agent) puts its range as one; the
            // entries of an op of several (a memory put to several peers, or twice to one) each a step, as before
            const bool one_entry = plan_op && (plan_op->channel_type == Chan::port || plan_op->dst.size() <= 1);
            std::optional<std::pair<int, std::vector<int>>> entry;  // the sender and peers of the entry so far
            // the slots the lane before read and wrote first: an entry reads one range and writes one, so a lane that
            // reads and writes on from where the one before did continues its entry
            std::optional<std::pair<Slot, Slot>> last;
            auto next_to = [](const Slot& a, const Slot& b) { return a.rank == b.rank && a.region == b.region && b.index == a.index + 1; };
            for (std::size_t x = 0; x < od.lanes.size() && x < r.sent[o].size(); ++x) {
                const async::Lane& lane = od.lanes[x];
                std::optional<std::pair<Slot, Slot>> at;
                if (!lane.in.empty() && !lane.in.front().received && !lane.out.empty()) at.emplace(lane.in.front().slot, lane.out.front());
                const bool on = one_entry && last && at && next_to(last->first, at->first) && next_to(last->second, at->second);
                last = at;
                LaneMove m = lane_move(lw, r, o, x);
                if (m.value.empty()) continue;  // a part past a chunk's first: its chunk is counted once
                if (!entry || !on || entry->first != m.from || entry->second != m.tos) {
                    entry.emplace(m.from, m.tos);
                    ++k, ++entries;
                }
                for (int to : m.tos)
                    if (to != m.from) {
                        out.push_back({ready + k, Movement{m.from, to, m.value}});
                        rep.schedule_ops.push_back(entries - 1);
                    }
            }
        }
        finish[o] = ready + k;
    }
}

void count_findings(PlanReport& rep) {
    for (const Finding& f : rep.findings) {
        if (f.rule == "deadlock") ++rep.counts_deadlock;
        else if (f.rule == "data race") ++rep.counts_race;
        else if (f.rule == "result") ++rep.counts_result;
        else ++rep.counts_other;
    }
}

void check_modelled(const ReadResult& read, const std::vector<Expectation>& expect, Deadline deadline, PlanReport& rep, Lowering& lw,
                    async::Report& r);

PlanReport check_in(const ReadResult& read, const std::vector<Expectation>& expect, bool nccl_inplace, Deadline deadline) {
    PlanReport rep;
    rep.findings = read.findings;
    const Plan& plan = read.plan;
    for (const Gpu& g : plan.gpus) {
        rep.thread_blocks += g.tbs.size();
        for (const Tb& tb : g.tbs)
            for (const Op& op : tb.ops) rep.ops += 1 + op.inner.size();
    }
    if (!read.checkable) {
        count_findings(rep);
        return rep;
    }
    // past the deadline the command ends: the model and the engine's report are left to the operating system, not
    // freed while the limit has passed (support/teardown.hpp)
    auto held = std::make_shared<std::pair<std::optional<Lowering>, async::Report>>();
    try {
        check_modelled(read, expect, deadline, rep, held->first.emplace(plan, rep.findings, read.file, nccl_inplace), held->second);
    } catch (const LimitReached&) {
        bury(std::move(held));
        throw;
    }
    return rep;
}

/// check_in's model `lw` of the plan, checked by the engine (its report into `r`), into `rep`.
void check_modelled(const ReadResult& read, const std::vector<Expectation>& expect, Deadline deadline, PlanReport& rep, Lowering& lw,
                    async::Report& r) {
    const Plan& plan = read.plan;
    lw.deadline = deadline;
    lw.semaphore_initial_values();
    if (!lw.build()) {
        count_findings(rep);
        return;
    }
    // callers that read the file check it against the plan first, with its name (cmd_verify)
    check_expectations(expect, "--expect", int(plan.gpus.size()), [&](int rank, char buf) -> long long {
        const Gpu& g = plan.gpus[std::size_t(rank)];
        return buf == 'i' ? g.input_chunks : buf == 'o' ? g.output_chunks : g.scratch_chunks;
    });
    rep.result_note = set_goals(plan, lw, expect, rep.findings);
    rep.modelled = true;
    if (deadline.passed()) throw LimitReached("time limit (the plan is modelled, its check not started)");
    async::CheckOptions options;
    options.deadline = deadline;
    r = async::check(lw.program(), naming(lw, plan), options);
    rep.finishes = r.finishes;
    rep.race_checked = r.race_checked;
    rep.race_free = r.race_free;
    rep.result_checked = r.replayed && rep.result_note.empty();
    if (deadline.passed()) throw LimitReached("time limit (the plan is checked, its report not made)");
    for (const async::Finding& f : r.findings) {
        const Op* op = f.op == async::no_op ? nullptr : lw.op_of()[f.op];
        std::string rule = f.kind == async::FindingKind::race           ? "data race"
                           : f.kind == async::FindingKind::wrong_output ? "result"
                           : f.kind == async::FindingKind::reader && f.text.find("[data race]") != std::string::npos ? "data race"
                                                                                                                     : f.kind == async::FindingKind::reader ? "structure"
                                                                                                                                                            : "deadlock";
        std::string text = f.text;
        if (f.kind == async::FindingKind::reader && !op && text.starts_with("data races not checked")) {
            rep.race_note = text.substr(std::string_view("data races not checked: ").size());
            continue;  // no property of the plan: the engine's limit (the verdict is unknown)
        }
        for (std::string_view tag : {" [deadlock]", " [data race]", " [wrong output]", " [unmatched send]"})
            if (auto at = text.rfind(tag); at != std::string::npos && at + tag.size() == text.size()) text.erase(at);
        // the op's own path leads the engine's text; the finding names it already
        if (op && text.starts_with(lw.what()[f.op] + ": ")) text.erase(0, lw.what()[f.op].size() + 2);
        if (!op && f.slot && f.slot->rank < plan.gpus.size()) {
            // an output no op writes: at its GPU (it had neither path nor line:col)
            const Gpu& g = plan.gpus[f.slot->rank];
            rep.findings.push_back({rule, fmt::format("gpus[{}]", f.slot->rank), g.pos, std::move(text)});
            continue;
        }
        rep.findings.push_back({rule, op ? lw.what()[f.op] : "", op ? op->pos : Pos{}, std::move(text)});
    }
    if (r.replayed) {
        for (const auto& mw : lw.multi_writers()) {
            std::vector<std::pair<OpId, async::Value>> vals;
            for (OpId w : mw.writers) {
                const auto& lanes = lw.program().op(w).lanes;
                for (std::size_t x = 0; x < lanes.size(); ++x)
                    if (std::find(lanes[x].out.begin(), lanes[x].out.end(), mw.slot) != lanes[x].out.end() && x < r.sent[w].size())
                        vals.push_back({w, r.sent[w][x]});
            }
            for (std::size_t k = 1; k < vals.size(); ++k)
                if (vals[k].second != vals[0].second) {
                    const Op* op = lw.op_of()[mw.reader];
                    rep.findings.push_back({"data race", lw.what()[mw.reader], op ? op->pos : Pos{},
                                            fmt::format("reads LL packets of {}, which {} writes with {} and {} with {} in one launch: "
                                                        "the flag cannot tell them apart",
                                                        lw.slot_name(mw.slot), lw.what()[vals[0].first],
                                                        value_name(lw, r.values.atoms(vals[0].second)), lw.what()[vals[k].first],
                                                        value_name(lw, r.values.atoms(vals[k].second)))});
                    break;
                }
        }
        schedule_moves(lw, r, rep);
        for (OpId o = 0; o < lw.program().ops(); ++o) {
            if (!lw.moves()[o]) continue;
            for (std::size_t x = 0; x < lw.program().op(o).lanes.size() && x < r.sent[o].size(); ++x) {
                LaneMove m = lane_move(lw, r, o, x);
                for (int to : m.tos)
                    if (m.from != to) rep.movement.push_back(Movement{m.from, to, m.value});
            }
        }
        std::sort(rep.movement.begin(), rep.movement.end());
    }
    count_findings(rep);
}

}  // namespace

std::string format_plan_report(const PlanReport& r, const Plan& plan, std::string_view file) {
    std::string out;
    out += fmt::format("verdict: {} (MSCCL++ plan \"{}\": {} on {} GPUs, {}, {}; {} thread blocks, {} ops)\n", r.verdict(),
                       excerpt(plan.name), excerpt(plan.collective), plan.gpus.size(), plan.inplace ? "in place" : "out of place",
                       plan.packets() ? "LL" : "Simple", r.thread_blocks, r.ops);
    auto status = [&](bool checked, bool ok, std::size_t n) {
        return !checked ? std::string("not checked") : ok ? std::string("holds") : fmt::format("violated ({} finding{})", n, n == 1 ? "" : "s");
    };
    out += fmt::format("  executor rules  {}\n", r.counts_other == 0 ? "hold" : fmt::format("violated ({} finding{})", r.counts_other, r.counts_other == 1 ? "" : "s"));
    out += fmt::format("  deadlock        {}\n", status(r.modelled, r.finishes && r.counts_deadlock == 0, r.counts_deadlock));
    out += fmt::format("  data races      {}\n", !r.race_note.empty() ? "not checked (" + r.race_note + ")"
                                                : status(r.modelled && r.race_checked, r.counts_race == 0, r.counts_race));
    out += fmt::format("  result          {}\n",
                       r.result_checked ? status(true, r.counts_result == 0, r.counts_result)
                       : r.counts_result ? status(true, false, r.counts_result)
                       : !r.result_note.empty() ? "not checked (" + r.result_note + ")"
                       : !r.race_note.empty()   ? std::string("not checked (the races were not decided)")
                                                : std::string("not checked (a deadlock or race comes first)"));
    if (!r.modelled) out += "  (the plan's structure is broken: deadlock, races and the result are not checked)\n";
    if (!r.nccl_verdict.empty()) {
        out += "  in place        as mscclpp's selector defines it (recvbuff == sendbuff: output chunk j is input chunk j, "
               "src/core/algorithm.cc:13-24); the verdict above is by this convention\n";
        out += fmt::format("  NCCL's in-place convention (recvbuff = sendbuff + rank * recvcount: output chunk j is input chunk "
                           "rank * output_chunks + j): {}{}\n",
                           r.nccl_verdict, r.nccl_first ? " (" + format_finding(file, *r.nccl_first) + ")" : "");
    }
    if (!r.findings.empty()) {
        out += "counterexamples:\n";
        for (const Finding& f : r.findings) out += "  " + format_finding(file, f) + "\n";
    }
    return out;
}

}  // namespace collsched::mscclpp
