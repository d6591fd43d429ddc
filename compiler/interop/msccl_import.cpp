#include "compiler/interop/msccl_import.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/interop/async_program.hpp"
#include "compiler/table/builder.hpp"
#include "compiler/interop/expect_file.hpp"
#include "compiler/interop/export_msccl.hpp"
#include "compiler/interop/msccl_program.hpp"
#include "compiler/table/partials.hpp"

namespace collsched {

namespace msccl {
namespace {

/// One transmission as the executor's parser builds it from a thread block's steps
/// (msccl_parser.cc:472-682): a `nop` adds its dependency to the next transmission and is no
/// transmission itself; consecutive `re` steps with the same destination and source buffer and no
/// dependency of their own fuse into one multi-source reduction. `kstep` is the step count the
/// kernel publishes after it (msccl_kernel.cu:221-237, :313-320): the counter advances by the
/// number of dependencies minus one, by the fused reductions minus one, and by one.
struct Trans {
    int tb = 0;
    std::vector<int> members;                ///< the XML steps it runs (ops indices; several for a fused `re`)
    std::vector<std::pair<int, int>> waits;  ///< (depid, deps): its own and those of the nops before it
    bool hasdep = false;
    int kstep = 0;
};

std::vector<std::vector<Trans>> transmissions(const Program& prog, Problems& pr) {
    std::vector<std::vector<Trans>> out(prog.tbs.size());
    for (std::size_t t = 0; t < prog.tbs.size(); ++t) {
        std::vector<std::pair<int, int>> pending;
        bool chain_open = false;  // the last transmission is a reduction others may fuse into
        int fused_total = 0;      // numReductions: set to 0 once per thread block (msccl_parser.cc:464, :633)
        for (int o : prog.tbs[t].ops) {
            const Op& op = prog.ops[o];
            if (op.depid >= 0) pending.emplace_back(op.depid, op.deps);
            if (op.type == OpType::nop) continue;
            std::vector<Trans>& list = out[t];
            bool continuation = false;
            if (op.type == OpType::reduce && chain_open && op.depid < 0) {
                const Op& prev = prog.ops[list.back().members.back()];
                continuation = prev.dstbuf == op.dstbuf && prev.dstoff == op.dstoff && prev.srcbuf == op.srcbuf;
            }
            if (continuation) {
                list.back().members.push_back(o);
                list.back().hasdep = op.hasdep;
            } else {
                if (!pending.empty() && op.depid < 0)
                    pr.refuse(op.line, op.col,
                           fmt::format("{}: a nop before it waits, but the step itself has no depid; the executor refuses this "
                                       "(\"the last reduction must be a part of the first immediate instruction\", "
                                       "msccl_parser.cc:613-619)",
                                       where(prog, op)));
                Trans tr;
                tr.tb = int(t);
                tr.members.push_back(o);
                tr.waits = std::move(pending);
                pending.clear();
                tr.hasdep = op.hasdep;
                list.push_back(std::move(tr));
            }
            if (op.type == OpType::reduce) {
                ++fused_total;
                chain_open = !(op.hasdep || fused_total == 16);  // MSCCL_MAX_REDUCE_FUSION
            } else {
                chain_open = false;
            }
        }
        int step = 0;
        for (Trans& tr : out[t]) {
            if (!tr.waits.empty()) step += int(tr.waits.size()) - 1;
            step += int(tr.members.size()) - 1;
            tr.kstep = step;
            ++step;
        }
    }
    pr.check();
    return out;
}

std::string rank_set(const std::vector<std::uint32_t>& ranks) {
    if (ranks.size() == 1) return std::to_string(ranks[0]);
    const bool distinct = std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end();
    std::string s;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t j = i;
        while (distinct && j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        s += (s.empty() ? "" : ",") + (j > i + 1 ? fmt::format("{}..{}", ranks[i], ranks[j])
                                       : j == i  ? std::to_string(ranks[i])
                                                 : fmt::format("{},{}", ranks[i], ranks[j]));
        i = j + 1;
    }
    return "{" + s + "}";
}

/// The buffers of one call (in place or out of place) as the executor lays them out, and what
/// they hold at the start and must hold at the end. Regions: 0 input, 1 output, 2 scratch; in
/// place the aliased buffer is one region (msccl_lifecycle.cc:315-327): allreduce, reduce,
/// broadcast, alltoall: output = input; allgather: input = output chunks rank*N/P...; reducescatter:
/// output = input chunks rank*N/P....
class BufferLayout {
public:
    BufferLayout(const Program& p, bool inplace) : p_(p), inplace_(inplace && p.coll != Coll::custom) {
        for (int r = 0; r < p.P; ++r) in_max_ = std::max(in_max_, p.input_chunks(r));
    }
    bool inplace() const { return inplace_; }
    async::Slot locate(int rank, char buf, int off) const {
        const auto r = std::uint32_t(rank);
        if (buf == 's') return {r, 2, std::uint32_t(off)};
        if (inplace_) {
            const int k = p_.k();
            switch (p_.coll) {
                case Coll::allgather:
                    if (buf == 'i') return {r, 1, std::uint32_t(rank * k + off)};
                    break;
                case Coll::reducescatter:
                    if (buf == 'o') return {r, 0, std::uint32_t(rank * k + off)};
                    break;
                default:
                    if (buf == 'o') return {r, 0, std::uint32_t(off)};
            }
        }
        return {r, buf == 'i' ? 0u : 1u, std::uint32_t(off)};
    }
    async::Atom atom(int rank, int j) const { return async::Atom(rank * in_max_ + j); }
    int atom_rank(async::Atom a) const { return int(a) / in_max_; }
    int atom_chunk(async::Atom a) const { return int(a) % in_max_; }

    void fill(async::Program& ap) const {
        auto& vals = ap.values();
        const int P = p_.P, k = p_.k();
        for (int r = 0; r < P; ++r) {
            if (p_.coll == Coll::broadcast && r != 0) continue;  // rank 0 is the root: the executor has none
            for (int j = 0; j < p_.input_chunks(r); ++j) ap.initial(locate(r, 'i', j), vals.atom(atom(r, j)));
        }
        auto all = [&](int chunk) {
            std::vector<async::Atom> a;
            for (int s = 0; s < P; ++s) a.push_back(atom(s, chunk));
            return vals.make(std::move(a));
        };
        for (int r = 0; r < P; ++r)
            for (int c = 0; c < p_.output_chunks(r); ++c) {
                async::Value want = async::no_data;
                switch (p_.coll) {
                    case Coll::allgather: want = vals.atom(atom(c / k, c % k)); break;
                    case Coll::alltoall: want = vals.atom(atom(c / k, r * k + c % k)); break;
                    case Coll::broadcast: want = vals.atom(atom(0, c)); break;
                    case Coll::allreduce: want = all(c); break;
                    case Coll::reduce:
                        if (r != 0) continue;
                        want = all(c);
                        break;
                    case Coll::reducescatter: want = all(r * k + c); break;
                    case Coll::custom: continue;
                }
                ap.goal(locate(r, 'o', c), want);
            }
    }

    std::string slot_name(async::Slot s) const {
        const char* region = s.region == 0 ? "input" : s.region == 1 ? "output" : "scratch";
        std::string alias;
        if (inplace_ && s.region != 2) {
            const int k = p_.k(), r = int(s.rank), i = int(s.index);
            if (p_.coll == Coll::allgather && i / k == r) alias = fmt::format(" (= input chunk {}, in place)", i % k);
            else if (p_.coll == Coll::reducescatter && i / k == r) alias = fmt::format(" (= output chunk {}, in place)", i % k);
            else if (p_.coll != Coll::allgather && p_.coll != Coll::reducescatter) alias = " (= output, in place)";
        }
        return fmt::format("rank {}, {} chunk {}{}", s.rank, region, s.index, alias);
    }

    /// b(r), m(s,d), a({0..7},c), in(r,j), with the chunk when there are several per datum.
    std::string value_name(const std::vector<async::Atom>& atoms) const {
        auto single = [&](async::Atom a) {
            const int r = atom_rank(a), j = atom_chunk(a), k = p_.k();
            switch (p_.coll) {
                case Coll::allgather: return k == 1 ? fmt::format("b({})", r) : fmt::format("b({},{})", r, j);
                case Coll::broadcast: return p_.N == 1 ? fmt::format("b({})", r) : fmt::format("b({},{})", r, j);
                case Coll::alltoall: return k == 1 ? fmt::format("m({},{})", r, j) : fmt::format("m({},{},{})", r, j / k, j % k);
                case Coll::custom: return fmt::format("in({},{})", r, j);
                default: return p_.N == 1 ? fmt::format("a({})", r) : fmt::format("a({},{})", r, j);
            }
        };
        if (!p_.reduction()) {
            std::string s;
            for (async::Atom a : atoms) s += (s.empty() ? "" : " + ") + single(a);
            return s;
        }
        std::map<int, std::vector<std::uint32_t>> by_chunk;
        for (async::Atom a : atoms) by_chunk[atom_chunk(a)].push_back(std::uint32_t(atom_rank(a)));
        std::string s;
        for (auto& [c, ranks] : by_chunk) {
            std::sort(ranks.begin(), ranks.end());
            s += (s.empty() ? "" : " + ") +
                 (p_.N == 1 ? fmt::format("a({})", rank_set(ranks)) : fmt::format("a({},{})", rank_set(ranks), c));
        }
        return s;
    }

private:
    const Program& p_;
    bool inplace_;
    int in_max_ = 1;
};

std::uint64_t connection(int from, int to, int chan) {
    return (std::uint64_t(from) << 32) | (std::uint64_t(to) << 8) | std::uint64_t(chan);
}

/// An `--expect` file (compiler/interop/expect_file.hpp), its ranks and chunks checked against the
/// program's buffers.
std::vector<Expectation> read_expect(const MscclImportOptions& opt, const Program& prog) {
    std::vector<Expectation> list = read_expectations(opt.expect, opt.expect_name);
    check_expectations(list, opt.expect_name, prog.P, [&](int r, char buf) -> long long {
        return buf == 'i' ? prog.input_chunks(r) : buf == 'o' ? prog.output_chunks(r) : prog.gpus[r].s_chunks;
    });
    return list;
}

/// One call mode checked: the engine's program and report, and the transmission behind each op.
struct Run {
    bool inplace = false;
    async::Program ap;
    async::Report report;
    std::vector<std::pair<int, int>> op_trans;  ///< engine op -> (tb index, transmission index)
};

class IrChecker {
public:
    IrChecker(std::string_view text, std::string_view name, const MscclImportOptions& opt) : name_(name), opt_(opt), pr_(name) {
        Elem algo = parse_xml(text, name);
        prog_ = build_program(algo, opt, pr_);
        trans_ = transmissions(prog_, pr_);
        static_rules();
        if (!opt.expect.empty()) expect_ = read_expect(opt, prog_);
        if (!opt.topology.empty()) {
            topo_ = Topology::parse(opt.topology);
            if (topo_->processors() != std::uint32_t(prog_.P))
                throw InputError(fmt::format("{}: the program has {} ranks but {} has {} processors", name, prog_.P, topo_->spec(),
                                             topo_->processors()));
        }
    }

    const Program& program() const { return prog_; }

    MscclReport check() {
        MscclReport rep;
        rep.notes = prog_.notes;
        rep.proto = prog_.proto;
        std::size_t steps = 0;
        for (const Tb& tb : prog_.tbs) steps += tb.ops.size();
        rep.summary = fmt::format("{}: {} on {} ranks, nchunksperloop {}, proto {}, {} channel{}; {}; {} thread blocks, {} steps",
                                  name_, prog_.coll_name, prog_.P, prog_.N, prog_.proto, prog_.nchannels,
                                  prog_.nchannels == 1 ? "" : "s",
                                  prog_.coll == Coll::custom ? "buffers as declared"
                                  : prog_.inplace && prog_.outofplace ? "in place and out of place"
                                  : prog_.inplace                     ? "in place"
                                                                      : "out of place",
                                  prog_.tbs.size(), steps);
        if (pr_.refusal_count()) {
            // a well-formed file the executor's reader refuses: its refusals are the findings, and the
            // program is not run (docs/errors.md, "Executor formats: one rule")
            rep.findings = pr_.refusals();
            rep.violations = pr_.refusal_count();
            if (rep.violations > rep.findings.size())
                rep.findings.push_back(fmt::format("{}: ({} more refusals)", name_, rep.violations - rep.findings.size()));
            rep.notes.push_back("the program is not checked: the executor's reader refuses it (the [refused] lines)");
            rep.checked_goals = false;
            return rep;
        }
        for (const auto& f : static_findings_) add(rep, f);
        link_check(rep);
        const bool both = prog_.coll != Coll::custom && prog_.inplace && prog_.outofplace;
        for (bool inplace : {false, true}) {
            if (prog_.coll == Coll::custom ? inplace : inplace ? !prog_.inplace : !prog_.outofplace) continue;
            runs_.push_back(std::make_unique<Run>());
            Run& run = *runs_.back();
            run.inplace = inplace;
            BufferLayout layout(prog_, inplace);
            build(run, layout);
            async::Naming naming = names(run, layout);
            run.report = async::check(run.ap, naming);
            const std::string mode = both ? (inplace ? " (in place)" : " (out of place)") : "";
            std::size_t undecided = 0;  // the engine's "not checked" lines, which its counts include
            for (const async::Finding& f : run.report.findings) {
                if (f.kind == async::FindingKind::reader && f.op == async::no_op && f.text.starts_with("data races not checked")) {
                    // the engine's limit, no property of the program: the verdict is unknown (exit 3)
                    rep.unknown = true;
                    rep.notes.push_back(f.text + mode);
                    ++undecided;
                    continue;
                }
                std::string where = name_ + ": ";
                if (f.op != async::no_op) {
                    const auto at = run.ap.op(f.op).at;
                    if (at.line > 0) where = fmt::format("{}:{}:{}: ", name_, at.line, at.col);
                } else if (f.slot && f.slot->rank < prog_.gpus.size() && prog_.gpus[f.slot->rank].line > 0) {
                    // an output no step writes: at its rank's <gpu>
                    const Gpu& g = prog_.gpus[f.slot->rank];
                    where = fmt::format("{}:{}:{}: ", name_, g.line, g.col);
                }
                rep.findings.push_back(where + f.text + mode);
            }
            for (std::size_t k = 0; k < 5; ++k) {
                rep.violations += run.report.counts[k] - (k == std::size_t(async::FindingKind::reader) ? undecided : 0);
                if (run.report.counts[k] > 20)
                    rep.findings.push_back(fmt::format("{}: ({} more {}{})", name_, run.report.counts[k] - 20, kind_name(k), mode));
            }
            if (!run.report.finishes)
                rep.notes.push_back(fmt::format("the outputs{} are not checked: the program does not finish", mode));
            else if (!run.report.race_checked)
                rep.notes.push_back(fmt::format("the outputs{} are not checked: the data races were not decided", mode));
            else if (!run.report.race_free)
                rep.notes.push_back(fmt::format("the outputs{} are not checked: with a data race the result is not unique", mode));
            if (prog_.coll == Coll::custom && run.report.replayed) rep.chunk_map = chunk_map(run, layout);
        }
        if (!runs_.empty() && runs_[0]->report.finishes) rep.timing = timing(*runs_[0]);
        if (!runs_.empty() && runs_[0]->report.replayed) {
            const Run& run = *runs_[0];
            BufferLayout layout(prog_, run.inplace);
            for (const Sent& x : schedule(run))
                rep.moves.push_back({x.from, x.to, x.value == async::no_data ? "no data" : layout.value_name(run.report.values.atoms(x.value))});
        }
        rep.holds = rep.violations == 0 && !rep.unknown;
        rep.checked_goals = prog_.coll != Coll::custom || expect_.has_value();
        return rep;
    }

    /// The levelled table of the first mode (the program must hold).
    SendTable table(const MscclReport& rep) {
        if (prog_.coll == Coll::custom)
            throw InputError(fmt::format("{}: a custom collective has no table form (collsched's tables name a collective); "
                                         "`collsched verify` checks it",
                                         name_));
        if (!rep.holds) throw ProgramViolation(rep.text());
        std::shared_ptr<const Topology> topo = topo_ ? topo_ : Topology::parse(fmt::format("complete:{}", prog_.P));
        Model model = topo->default_model();
        if (model.timing != Timing::hop)
            throw InputError(fmt::format("{}: MSCCL-IR is read under hop timing; {} defaults to wormhole timing", name_, topo->spec()));
        const int C = prog_.coll == Coll::allgather || prog_.coll == Coll::alltoall ? prog_.k() : prog_.N;
        Collective coll{find_collective_msccl(coll_msccl_name(prog_.coll))->kind, Node{0}, {}};
        try {
            coll.set_chunks(std::uint64_t(C), *topo);
        } catch (const InputError& e) {
            throw InputError(fmt::format("{}: {} chunks per datum: {}", name_, C, e.what()));
        }
        TableBuilder builder(topo, model, coll);
        const Run& run = *runs_[0];
        BufferLayout layout(prog_, run.inplace);
        const Messages ms = builder.messages();
        Composites* reg = prog_.reduction() ? &builder.composites() : nullptr;
        auto message = [&](async::Value v, const Op& at) -> std::optional<MessageId> {
            const auto& atoms = run.report.values.atoms(v);
            if (atoms.empty()) return std::nullopt;
            const int chunk = layout.atom_chunk(atoms[0]);
            if (prog_.reduction()) {
                std::vector<std::uint32_t> ranks;
                for (async::Atom a : atoms) {
                    if (layout.atom_chunk(a) != chunk)
                        throw InputError(fmt::format("{}:{}:{}: {} sends {}, a reduction of different chunks, which a table cannot "
                                                     "name",
                                                     name_, at.line, at.col, where(prog_, at), layout.value_name(atoms)));
                    ranks.push_back(std::uint32_t(layout.atom_rank(a)));
                }
                return partial_message(*reg, ms, SourceSet(std::move(ranks)), std::uint32_t(chunk));
            }
            if (atoms.size() != 1)
                throw InputError(fmt::format("{}:{}:{}: {} sends {}, which a table cannot name", name_, at.line, at.col,
                                             where(prog_, at), layout.value_name(atoms)));
            const int r = layout.atom_rank(atoms[0]);
            if (prog_.coll == Coll::alltoall) {
                const int k = prog_.k();
                if (chunk / k == r) return std::nullopt;  // a rank's own chunk: no message of the collective
                return ms.personal(std::uint32_t(r), std::uint32_t(chunk / k), std::uint32_t(chunk % k));
            }
            return ms.broadcast(std::uint32_t(r), std::uint32_t(chunk));
        };
        for (const Sent& s : schedule(run))
            if (auto m = message(s.value, prog_.ops[s.step]))
                builder.send_cut_through(s.sent, Node{std::uint32_t(s.from)}, Node{std::uint32_t(s.to)}, *m);
        return std::move(builder).finish();
    }

private:
    static const char* kind_name(std::size_t k) {
        static const char* names[] = {"deadlocks", "unmatched transfers", "data races", "wrong outputs", "problems"};
        return names[k];
    }
    void add(MscclReport& rep, std::string line) {
        ++rep.violations;
        rep.findings.push_back(std::move(line));
    }

    /// Rules the executor loads but that make the program wrong whatever the order: a wait on a
    /// thread block id the executor cannot hold, two thread blocks on one connection end.
    void static_rules() {
        for (const Op& op : prog_.ops) {
            if (op.depid > MscclLimits::max_dependency_tb)
                pr_.add(op.line, op.col,
                        fmt::format("{}: depid=\"{}\" is above {} (the executor stores it in an int8_t) [dependentBid]",
                                    where(prog_, op), op.depid, MscclLimits::max_dependency_tb));
            if (op.deps > MscclLimits::max_dependency_step)
                pr_.add(op.line, op.col,
                        fmt::format("{}: deps=\"{}\" is above {} (the executor stores it in an int16_t) [dependentStep]",
                                    where(prog_, op), op.deps, MscclLimits::max_dependency_step));
        }
        pr_.check();
        std::map<std::uint64_t, int> ends;  // (connection, direction) -> tb
        for (std::size_t t = 0; t < prog_.tbs.size(); ++t) {
            const Tb& tb = prog_.tbs[t];
            auto claim = [&](std::uint64_t key, bool sending) {
                auto [it, fresh] = ends.try_emplace(key * 2 + sending, int(t));
                if (fresh) return;
                const Tb& other = prog_.tbs[it->second];
                static_findings_.push_back(fmt::format(
                    "{}:{}:{}: rank {}: thread blocks {} and {} both {} {} on channel {}; the executor gives both the same "
                    "connection and their steps would overwrite each other's [shared connection]",
                    name_, tb.line, tb.col, tb.rank, other.id, tb.id, sending ? "send to" : "receive from",
                    sending ? tb.send : tb.recv, tb.chan));
            };
            if (tb.send >= 0) claim(connection(tb.rank, tb.send, tb.chan), true);
            if (tb.recv >= 0) claim(connection(tb.recv, tb.rank, tb.chan), false);
        }
    }

    /// With --topology: every send goes over a link between the two ranks (through routers only).
    void link_check(MscclReport& rep) {
        if (!topo_) return;
        std::map<std::pair<int, int>, bool> known;
        for (const Tb& tb : prog_.tbs) {
            if (tb.send < 0) continue;
            const Op* first = nullptr;
            for (int o : tb.ops)
                if (prog_.ops[o].sends()) {
                    first = &prog_.ops[o];
                    break;
                }
            if (!first) continue;
            auto [it, fresh] = known.try_emplace({tb.rank, tb.send}, true);
            if (!fresh) continue;
            std::vector<ChannelId> route = topo_->route(Node{std::uint32_t(tb.rank)}, Node{std::uint32_t(tb.send)});
            std::optional<std::uint32_t> via;
            for (std::size_t i = 0; i + 1 < route.size() && !via; ++i) {
                const Node n = topo_->channel(route[i]).to;
                if (topo_->is_processor(n)) via = std::uint32_t(n);
            }
            if (!via) continue;
            add(rep, fmt::format("{}:{}:{}: {}: {} has no link from {} to {} (its route passes processor {}) [link]", name_,
                                 first->line, first->col, where(prog_, *first), topo_->spec(), tb.rank, tb.send, *via));
        }
    }

    async::Naming names(const Run& run, const BufferLayout& layout) const {
        async::Naming n;
        n.op = [this, &run](async::OpId o) {
            const auto [t, i] = run.op_trans[o];
            const Trans& tr = trans_[t][i];
            std::string s = where(prog_, prog_.ops[tr.members[0]]);
            if (tr.members.size() == 2) s += fmt::format(" fused by the executor with step {}", prog_.ops[tr.members[1]].pos);
            if (tr.members.size() > 2)
                s += fmt::format(" fused by the executor with steps {}..{}", prog_.ops[tr.members[1]].pos,
                                 prog_.ops[tr.members.back()].pos);
            return s;
        };
        n.slot = [&layout](async::Slot s) { return layout.slot_name(s); };
        n.value = [&layout](const std::vector<async::Atom>& a) { return layout.value_name(a); };
        n.key = [](std::uint64_t k) {
            return fmt::format("the connection {} -> {} on channel {}", k >> 32, (k >> 8) & 0xffffff, k & 0xff);
        };
        return n;
    }

    /// The engine's program for one call mode.
    void build(Run& run, const BufferLayout& layout) {
        async::Program& ap = run.ap;
        std::vector<async::AgentId> agent(prog_.tbs.size());
        std::vector<std::vector<async::OpId>> ids(prog_.tbs.size());
        for (std::size_t t = 0; t < prog_.tbs.size(); ++t) {
            agent[t] = ap.add_agent(std::uint32_t(prog_.tbs[t].rank));
            for (std::size_t i = 0; i < trans_[t].size(); ++i) {
                const Op& first = prog_.ops[trans_[t][i].members[0]];
                ids[t].push_back(ap.add_op(agent[t], {first.line, first.col}));
                run.op_trans.emplace_back(int(t), int(i));
            }
        }
        for (std::size_t t = 0; t < prog_.tbs.size(); ++t) {
            const Tb& tb = prog_.tbs[t];
            const Gpu& gpu = prog_.gpus[tb.rank];
            for (std::size_t i = 0; i < trans_[t].size(); ++i) {
                const Trans& tr = trans_[t][i];
                const async::OpId id = ids[t][i];
                const Op& op = prog_.ops[tr.members[0]];
                const Op& last = prog_.ops[tr.members.back()];
                auto src = [&](const Op& o, int x) { return layout.locate(o.rank, o.srcbuf, o.srcoff + x); };
                auto dst = [&](const Op& o, int x) { return layout.locate(o.rank, o.dstbuf, o.dstoff + x); };
                for (int x = 0; x < last.cnt; ++x) {
                    async::Lane lane;
                    switch (op.type) {
                        case OpType::send: lane = {{async::Operand::read(src(op, x))}, {}, true}; break;
                        case OpType::recv: lane = {{async::Operand::incoming()}, {dst(op, x)}, false}; break;
                        case OpType::rcs: lane = {{async::Operand::incoming()}, {dst(op, x)}, true}; break;
                        case OpType::rrs: lane = {{async::Operand::incoming(), async::Operand::read(src(op, x))}, {}, true}; break;
                        case OpType::rrc:
                            lane = {{async::Operand::incoming(), async::Operand::read(src(op, x))}, {dst(op, x)}, false};
                            break;
                        case OpType::rrcs:
                            lane = {{async::Operand::incoming(), async::Operand::read(src(op, x))}, {dst(op, x)}, true};
                            break;
                        case OpType::copy: lane = {{async::Operand::read(src(op, x))}, {dst(op, x)}, false}; break;
                        case OpType::reduce:
                            lane.in.push_back(async::Operand::read(dst(op, x)));
                            for (int m : tr.members) lane.in.push_back(async::Operand::read(src(prog_.ops[m], x)));
                            lane.out.push_back(dst(op, x));
                            break;
                        case OpType::nop: break;
                    }
                    ap.add_lane(id, std::move(lane));
                }
                // a step of cnt="0" is loaded (0..71, msccl_parser.cc:577-580) and runs no primitive: the
                // kernel's loop over its chunks runs no time (msccl_kernel.cu:241), so it neither sends
                // nor receives; it still waits for its dependencies and publishes its step
                if (op.sends() && op.cnt > 0) ap.send(id, connection(tb.rank, tb.send, tb.chan));
                if (op.receives() && op.cnt > 0) ap.receive(id, connection(tb.recv, tb.rank, tb.chan));
                // waits: released by the first transmission of thread block depid that publishes a step
                // at or after deps (msccl_kernel.cu:224-236: flag >= goal; :313-318: only hasdep publishes)
                for (const auto& [depid, deps] : tr.waits) {
                    auto it = gpu.tb_by_id.find(depid);
                    if (it == gpu.tb_by_id.end()) {
                        ap.never_released(id, fmt::format("waits for thread block {} (depid), which rank {} does not have", depid,
                                                          tb.rank));
                        continue;
                    }
                    const std::vector<Trans>& other = trans_[it->second];
                    std::optional<std::size_t> release;
                    for (std::size_t j = 0; j < other.size() && !release; ++j)
                        if (other[j].hasdep && other[j].kstep >= deps) release = j;
                    if (!release) {
                        ap.never_released(id, fmt::format("waits for thread block {} to publish step {}, but no step of it at or "
                                                          "after {} has hasdep=\"1\", so the executor never signals it",
                                                          depid, deps, deps));
                        continue;
                    }
                    ap.order(ids[it->second][*release], id);
                }
            }
        }
        layout.fill(ap);
        if (expect_) {
            for (const Expectation& it : *expect_) {
                std::vector<async::Atom> atoms;
                for (const auto& [r, c] : it.holds) atoms.push_back(layout.atom(r, c));
                ap.goal(layout.locate(it.rank, it.buffer, it.chunk), ap.values().make(std::move(atoms)));
            }
        }
    }

    /// Where every input chunk ends up (custom collectives): the output chunks holding exactly it,
    /// and those holding a reduction it is part of.
    std::string chunk_map(const Run& run, const BufferLayout& layout) const {
        std::map<async::Atom, std::vector<std::string>> exact, part;
        for (const auto& [slot, v] : run.report.final) {
            if (slot.region != 1 || v == async::no_data) continue;
            const auto& atoms = run.report.values.atoms(v);
            for (async::Atom a : atoms)
                (atoms.size() == 1 ? exact : part)[a].push_back(fmt::format("{}:{}", slot.rank, slot.index));
        }
        std::string out = "where each input chunk ends up (rank:output chunk):\n";
        for (int r = 0; r < prog_.P; ++r)
            for (int j = 0; j < prog_.input_chunks(r); ++j) {
                const async::Atom a = layout.atom(r, j);
                std::string line = fmt::format("  {}: ", layout.value_name({a}));
                auto list = [](const std::vector<std::string>& v) {
                    std::string s;
                    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
                    return s;
                };
                if (exact.count(a)) line += list(exact[a]);
                if (part.count(a)) line += (exact.count(a) ? "; " : "") + std::string("in reductions at ") + list(part[a]);
                if (!exact.count(a) && !part.count(a)) line += "nowhere in an output";
                out += line + "\n";
            }
        return out;
    }

    struct Sent {
        Step sent;
        int from, to, step;  ///< step: the XML op
        async::Value value;
    };

    /// The as-soon-as-possible run: a transmission starts when its thread block's previous one and
    /// the ones it waits for have finished (a receive also when its data has arrived); a send of
    /// cnt chunks puts chunk x on the wire in step L+1+x and finishes at L+cnt; copies take none.
    std::vector<Sent> schedule(const Run& run) const {
        const async::Report& r = run.report;
        std::vector<Step> finish(run.ap.ops(), 0), arrival(run.ap.ops(), 0);
        std::vector<Sent> out;
        for (async::OpId o : r.order) {
            const auto& od = run.ap.op(o);
            Step ready = 0;
            if (od.pos > 0) ready = finish[run.ap.agent_ops(od.agent)[od.pos - 1]];
            for (async::OpId b : od.after) ready = std::max(ready, finish[b]);
            if (r.source[o] != async::no_op) ready = std::max(ready, arrival[o]);
            finish[o] = ready;
            const auto [t, i] = run.op_trans[o];
            const Op& op = prog_.ops[trans_[t][i].members[0]];
            if (!op.sends()) continue;
            const Tb& tb = prog_.tbs[t];
            const std::vector<async::Value> none;
            const std::vector<async::Value>& vals = o < r.sent.size() ? r.sent[o] : none;
            for (std::size_t x = 0; x < od.lanes.size(); ++x)
                out.push_back({ready + 1 + Step(x), tb.rank, tb.send, trans_[t][i].members[0],
                               x < vals.size() ? vals[x] : async::no_data});
            finish[o] = ready + Step(od.lanes.size());
            if (r.dest[o] != async::no_op) arrival[r.dest[o]] = std::max(arrival[r.dest[o]], finish[o]);
        }
        return out;
    }

    std::string timing(const Run& run) const {
        std::vector<Sent> s = schedule(run);
        Step steps = 0;
        std::map<std::pair<int, int>, std::map<Step, int>> per_link;
        for (const Sent& x : s) {
            steps = std::max(steps, x.sent);
            ++per_link[{x.from, x.to}][x.sent];
        }
        std::pair<int, int> busiest{-1, -1};
        std::size_t most = 0;
        int most_in_step = 0;
        for (const auto& [link, by_step] : per_link) {
            std::size_t total = 0;
            for (const auto& [st, c] : by_step) {
                total += std::size_t(c);
                most_in_step = std::max(most_in_step, c);
            }
            if (total > most) most = total, busiest = link;
        }
        if (s.empty()) return "as soon as possible: no chunk crosses a link\n";
        return fmt::format("as soon as possible (information, not a verdict: MSCCL-IR has no global clock): {} steps of one chunk "
                           "per connection, {} chunk transfers over {} connections; busiest {} -> {} with {} chunks; at most {} "
                           "chunk{} on one pair of ranks in one step\n",
                           steps, s.size(), per_link.size(), busiest.first, busiest.second, most, most_in_step,
                           most_in_step == 1 ? "" : "s");
    }

    std::string name_;
    MscclImportOptions opt_;
    Problems pr_;
    Program prog_;
    std::vector<std::vector<Trans>> trans_;
    std::vector<std::string> static_findings_;
    std::optional<std::vector<Expectation>> expect_;
    std::shared_ptr<const Topology> topo_;
    std::vector<std::unique_ptr<Run>> runs_;
};

}  // namespace
}  // namespace msccl

std::string MscclReport::text() const {
    std::string out = summary + "\n";
    for (const std::string& n : notes) out += "note: " + n + "\n";
    if (unknown && violations == 0) {
        out += "unknown: no deadlock and every transfer matched, but the data races were not decided (the note above), so "
               "neither is the result\n";
    } else if (holds) {
        out += checked_goals ? "holds: no deadlock, every transfer matched, no data race, and every output chunk holds what it "
                               "must, in every execution the executor permits\n"
                             : "holds: no deadlock, every transfer matched and no data race, in every execution the executor "
                               "permits (no postcondition: give one with --expect FILE)\n";
    } else {
        out += fmt::format("violated: {} problem{}\n", violations, violations == 1 ? "" : "s");
        for (const std::string& f : findings) out += f + "\n";
    }
    out += chunk_map;
    out += timing;
    return out;
}

bool looks_like_xml(std::string_view text) {
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        return c == '<';
    }
    return false;
}

MscclReport check_msccl_ir(std::string_view text, std::string_view name, const MscclImportOptions& opt) {
    msccl::IrChecker c(text, name, opt);
    return c.check();
}

MscclReport check_msccl_ir(std::string_view text, std::string_view name, const MscclImportOptions& opt, MscclTable& table) {
    msccl::IrChecker c(text, name, opt);
    MscclReport rep = c.check();
    if (!rep.holds) {
        table.why = "the program does not hold";
        return rep;
    }
    try {
        table.table = c.table(rep);
    } catch (const InputError& e) {
        table.why = e.what();
    }
    return rep;
}

SendTable parse_msccl_ir(std::string_view text, std::string_view name, const MscclImportOptions& opt) {
    msccl::IrChecker c(text, name, opt);
    MscclReport rep = c.check();
    return c.table(rep);
}

}  // namespace collsched
