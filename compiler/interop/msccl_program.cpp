#include "compiler/interop/msccl_program.hpp"

#include <algorithm>

#include <charconv>
#include <optional>

#include "compiler/interop/export_msccl.hpp"

namespace collsched::msccl {

namespace {

constexpr int max_chunks = 1 << 20;       ///< nchunksperloop and the buffers, per rank: what collsched checks
constexpr long max_goal_slots = 1L << 24;  ///< output chunks over all ranks
constexpr std::size_t max_attrs = 16;     ///< MAX_ATTR_COUNT (msccl_parser.h:21): later attributes are dropped
constexpr std::size_t max_str = 255;      ///< MAX_STR_LEN (msccl_parser.h:20)

/// The attribute as the executor's reader sees it: among the first 16 of the element.
const std::string* find_attr(const Elem& e, std::string_view k) {
    for (std::size_t i = 0; i < e.attrs.size() && i < max_attrs; ++i)
        if (e.attrs[i].first == k) return &e.attrs[i].second;
    return nullptr;
}

/// A required attribute (the executor's mscclXmlGetAttrStr fails without it).
const std::string* required(const Elem& e, std::string_view k, Problems& pr) {
    if (const std::string* v = find_attr(e, k)) return v;
    bool later = false;
    for (const auto& [key, v] : e.attrs) later = later || key == k;
    pr.add(e, later ? fmt::format("<{}> has attribute {} after its first {}; the executor's reader keeps {} [MAX_ATTR_COUNT] "
                                  "and would not find it",
                                  e.name, k, max_attrs, max_attrs)
                    : fmt::format("<{}> has no attribute {}, which the executor's reader requires", e.name, k));
    return nullptr;
}

std::optional<int> parse_int(const Elem& e, std::string_view k, const std::string& v, Problems& pr) {
    int x = 0;
    const char* b = v.data() + (v.starts_with('+') ? 1 : 0);
    auto [p, ec] = std::from_chars(b, v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size() || b == v.data() + v.size()) {
        pr.add(e, fmt::format("<{}> attribute {}=\"{}\" is not an integer", e.name, k, v));
        return std::nullopt;
    }
    return x;
}

std::optional<int> int_attr(const Elem& e, std::string_view k, Problems& pr) {
    const std::string* v = required(e, k, pr);
    return v ? parse_int(e, k, *v, pr) : std::nullopt;
}

/// An attribute the executor requires but msccl-tools' ir_to_xml never writes: read with the
/// default msccl-tools means; `missing` collects its name for one note.
std::optional<int> tools_attr(const Elem& e, std::string_view k, int fallback, Problems& pr, std::vector<std::string>& missing,
                              const std::string& meaning) {
    if (const std::string* v = find_attr(e, k)) return parse_int(e, k, *v, pr);
    missing.push_back(fmt::format("{} as {}", k, meaning));
    return fallback;
}

std::optional<OpType> step_type(std::string_view ty) {
    if (ty == "s") return OpType::send;
    if (ty == "r") return OpType::recv;
    if (ty == "rcs") return OpType::rcs;
    if (ty == "rrs") return OpType::rrs;
    if (ty == "rrc") return OpType::rrc;
    if (ty == "rrcs") return OpType::rrcs;
    if (ty == "cpy") return OpType::copy;
    if (ty == "re") return OpType::reduce;
    if (ty == "nop") return OpType::nop;
    return std::nullopt;
}

}  // namespace

int Program::input_chunks(int rank) const {
    switch (coll) {
        case Coll::allgather: return N / P;
        case Coll::custom: return gpus[rank].i_chunks;
        default: return N;
    }
}

int Program::output_chunks(int rank) const {
    switch (coll) {
        case Coll::reducescatter: return N / P;
        case Coll::custom: return gpus[rank].o_chunks;
        default: return N;
    }
}

std::string where(const Program& prog, const Op& op) {
    const Tb& tb = prog.tbs[op.tb];
    const char* what = "nop";
    switch (op.type) {
        case OpType::send: what = "send"; break;
        case OpType::recv: what = "receive"; break;
        case OpType::rcs: what = "receive-copy-send"; break;
        case OpType::rrc: what = "receive-reduce-copy"; break;
        case OpType::rrs: what = "receive-reduce-send"; break;
        case OpType::rrcs: what = "receive-reduce-copy-send"; break;
        case OpType::copy: what = "copy"; break;
        case OpType::reduce: what = "reduce"; break;
        case OpType::nop: break;
    }
    std::string peer = op.sends() && op.receives() ? fmt::format(" from {} to {}", tb.recv, tb.send)
                       : op.sends()                ? fmt::format(" to {}", tb.send)
                       : op.receives()             ? fmt::format(" from {}", tb.recv)
                                                   : "";
    return fmt::format("rank {}, thread block {}, step {} ({}{}, channel {})", op.rank, tb.id, op.pos, what, peer, tb.chan);
}

namespace {

/// Reads <algo> as the executor's parser does (msccl_parser.cc:306-689): the algorithm's
/// attributes, then each <gpu>, its <tb>s and their <step>s, every limit of the executor checked.
/// Problems are collected; pr.check() throws them at the end of each stage the next one needs.
class ProgramReader {
public:
    ProgramReader(const Elem& algo, const MscclImportOptions& opt, Problems& pr) : algo_(algo), opt_(opt), pr_(pr) {}

    Program read() {
        if (algo_.name != "algo") {
            pr_.add(algo_, fmt::format("the top element is <{}>, expected <algo>", algo_.name));
            pr_.check();
        }
        algo_attrs();
        collective();
        limits();
        tools_attrs();
        pr_.check();
        chunk_counts();
        pr_.check();
        // <gpu>, <tb>, <step>: msccl_parser.cc:391-682
        prog_.gpus.resize(prog_.P);
        seen_.assign(prog_.P, false);
        for (const Elem& g : algo_.subs) gpu(g);
        for (int r = 0; r < prog_.P; ++r)
            if (!seen_[r]) pr_.refuse(algo_, fmt::format("no <gpu id=\"{}\">", r));
        pr_.check();
        return std::move(prog_);
    }

private:
    /// A <gpu>'s id and declared buffer sizes.
    struct GpuAttrs {
        const Elem& e;
        int id, ic, oc, sc;
    };
    /// A <tb>'s id, peers and index in prog_.tbs.
    struct TbAttrs {
        int tid, send, recv, tbi;
    };

    /// <algo>: msccl_parser.cc:306-389 (and mscclGetAlgoMetaFromXmlFile, :700-790)
    void algo_attrs() {
        auto nchunks = int_attr(algo_, "nchunksperloop", pr_);
        auto nchannels = int_attr(algo_, "nchannels", pr_);
        auto ngpus = int_attr(algo_, "ngpus", pr_);
        const std::string* proto = required(algo_, "proto", pr_);
        const std::string* coll = required(algo_, "coll", pr_);
        auto inplace = int_attr(algo_, "inplace", pr_);
        pr_.check();
        prog_.P = *ngpus;
        prog_.N = *nchunks;
        prog_.nchannels = *nchannels;
        prog_.proto = *proto;
        prog_.coll_name = *coll;
        prog_.inplace = *inplace != 0;
        if (prog_.proto != "Simple" && prog_.proto != "LL" && prog_.proto != "LL128")
            pr_.add(algo_, fmt::format("proto=\"{}\" is not Simple, LL or LL128 (msccl_parser.cc:290-301, :327-328)", prog_.proto));
    }

    void collective() {
        const std::string& c = prog_.coll_name;
        const auto known = std::find(std::begin(coll_names), std::end(coll_names) - 1, c);  // custom: below, with its note
        if (known != std::end(coll_names) - 1) prog_.coll = static_cast<Coll>(known - std::begin(coll_names));
        else if (c == "reduce_scatter") {
            prog_.coll = Coll::reducescatter;
            prog_.notes.push_back("coll=\"reduce_scatter\" is msccl-tools' name; the executor at c6f6b36 knows only \"reducescatter\" "
                                  "(msccl_parser.cc:347) and would not load the file: checked as a reducescatter");
        } else if (c == "custom") {
            prog_.coll = Coll::custom;
            prog_.notes.push_back("coll=\"custom\" (a collective of msccl-tools' program): the executor at c6f6b36 does not load it "
                                  "(msccl_parser.cc:369-371, \"unsupported collective\"); checked for deadlock, races and unmatched "
                                  "transfers, with the buffers as declared and no aliasing; --expect FILE names the outputs");
        } else {
            pr_.add(algo_, fmt::format("coll=\"{}\": collsched checks allreduce, allgather, alltoall, reduce, reducescatter, broadcast "
                                       "and custom (the executor also loads send, recv, gather, scatter and alltoallv, whose buffers "
                                       "collsched does not model)",
                                       c));
        }
    }

    void limits() {
        if (prog_.P < 2 || prog_.P > MscclLimits::max_gpus)
            pr_.add(algo_, fmt::format("ngpus=\"{}\" is outside 2..{} [MAX_SUBS]", prog_.P, MscclLimits::max_gpus));
        if (prog_.N < 1 || prog_.N > max_chunks)
            pr_.add(algo_, fmt::format("nchunksperloop=\"{}\" is outside 1..{} (the executor divides each buffer into this many "
                                       "chunks; 0 or less serves no call)",
                                       prog_.N, max_chunks));
        if (prog_.nchannels < 1 || prog_.nchannels > MscclLimits::max_channels)
            pr_.add(algo_, fmt::format("nchannels=\"{}\" is outside 1..{} [MAXCHANNELS]", prog_.nchannels, MscclLimits::max_channels));
    }

    /// minBytes, maxBytes and outofplace: the executor requires them, msccl-tools never writes them.
    void tools_attrs() {
        std::vector<std::string> missing;
        tools_attr(algo_, "minBytes", 0, pr_, missing, "0");
        tools_attr(algo_, "maxBytes", 0, pr_, missing, "0 (no limit)");
        auto outofplace = tools_attr(algo_, "outofplace", prog_.inplace ? 0 : 1, pr_, missing, prog_.inplace ? "0" : "1");
        if (!missing.empty()) {
            std::string list;
            for (std::size_t i = 0; i < missing.size(); ++i)
                list += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
            prog_.notes.push_back(fmt::format("<algo> lacks attributes msccl-tools' ir_to_xml never writes; read {} (the executor at "
                                              "c6f6b36 requires them, msccl_parser.cc:375-389, and would not load this file as it is)",
                                              list));
        }
        prog_.outofplace = outofplace.value_or(1) != 0;
        if (!prog_.inplace && !prog_.outofplace) pr_.refuse(algo_, "inplace=\"0\" and outofplace=\"0\": the executor selects it for no call");
    }

    void chunk_counts() {
        const bool per_rank = prog_.coll == Coll::allgather || prog_.coll == Coll::alltoall || prog_.coll == Coll::reducescatter;
        if (per_rank && prog_.N % prog_.P)
            pr_.refuse(algo_, fmt::format("nchunksperloop=\"{}\" is not a multiple of ngpus=\"{}\": the {} buffers of one rank are N/P "
                                       "chunks",
                                       prog_.N, prog_.P, prog_.coll_name));
        if (long(prog_.N) * prog_.P > max_goal_slots)
            pr_.add(algo_, fmt::format("nchunksperloop=\"{}\" on {} ranks: more than {} chunks to check", prog_.N, prog_.P, max_goal_slots));
    }

    void gpu(const Elem& g) {
        if (g.name != "gpu") {
            pr_.add(g, fmt::format("<{}> inside <algo>, expected <gpu> (the executor ignores it; a misspelling?)", g.name));
            return;
        }
        auto id = int_attr(g, "id", pr_), ic = int_attr(g, "i_chunks", pr_), oc = int_attr(g, "o_chunks", pr_),
             sc = int_attr(g, "s_chunks", pr_);
        if (!id || !ic || !oc || !sc) return;
        if (*id < 0) {
            pr_.add(g, fmt::format("gpu id {} is negative", *id));
            return;
        }
        if (*id >= prog_.P || seen_[*id]) {
            pr_.refuse(g, fmt::format("gpu id {} is outside 0..{} (ngpus=\"{}\") or listed twice", *id, prog_.P - 1, prog_.P));
            return;
        }
        seen_[*id] = true;
        Gpu& gpu = prog_.gpus[*id];
        gpu.line = g.line;
        gpu.col = g.col;
        gpu.i_chunks = *ic;
        gpu.o_chunks = *oc;
        gpu.s_chunks = *sc;
        if (*ic < 0 || *oc < 0 || *sc < 0 || *ic > max_chunks || *oc > max_chunks || *sc > max_chunks) {
            pr_.add(g, fmt::format("gpu {}: chunk counts must be in 0..{}", *id, max_chunks));
            return;
        }
        const GpuAttrs ga{g, *id, *ic, *oc, *sc};
        if (prog_.coll != Coll::custom) declared_buffers(ga);
        std::size_t elements = 1 + algo_.subs.size() + g.subs.size();
        for (const Elem& te : g.subs) elements += tb(ga, te);
        if (elements >= std::size_t(MscclLimits::max_nodes))
            pr_.refuse(g, fmt::format("gpu {} loads {} XML elements; the executor's reader holds at most {} [MAX_NODES = {}]", *id,
                                   elements, MscclLimits::max_nodes - 1, MscclLimits::max_nodes));
        tb_ids(ga);
        tbs_per_channel(ga);
    }

    /// The executor checks offsets against the declared counts (msccl_parser.cc:270-288), but the
    /// buffers it has are the call's: count * sizeMultiplier / nchunksperloop elements per chunk.
    void declared_buffers(const GpuAttrs& ga) {
        const int in = prog_.input_chunks(ga.id), out = prog_.output_chunks(ga.id);
        if (ga.ic > in)
            pr_.refuse(ga.e, fmt::format("gpu {}: i_chunks=\"{}\", but coll=\"{}\" with nchunksperloop=\"{}\" on {} ranks has an input "
                                      "buffer of {} chunks",
                                      ga.id, ga.ic, prog_.coll_name, prog_.N, prog_.P, in));
        if (ga.oc > out)
            pr_.refuse(ga.e, fmt::format("gpu {}: o_chunks=\"{}\", but coll=\"{}\" with nchunksperloop=\"{}\" on {} ranks has an output "
                                      "buffer of {} chunks",
                                      ga.id, ga.oc, prog_.coll_name, prog_.N, prog_.P, out));
    }

    /// One <tb> and its steps; returns the XML elements it adds to the gpu's count.
    std::size_t tb(const GpuAttrs& ga, const Elem& te) {
        if (te.name != "tb") {
            pr_.add(te, fmt::format("<{}> inside <gpu>, expected <tb>", te.name));
            return 0;
        }
        const int id = ga.id;
        Gpu& gpu = prog_.gpus[id];
        auto tid = int_attr(te, "id", pr_), recv = int_attr(te, "recv", pr_), send = int_attr(te, "send", pr_),
             chan = int_attr(te, "chan", pr_);
        if (!tid || !send || !recv || !chan) return te.subs.size();
        if (*tid < 0 || *tid >= MscclLimits::max_tbs) {
            pr_.add(te, fmt::format("gpu {}: thread block id {} is negative or at least {} [MSCCL_MAX_NUM_THREAD_BLOCKS]", id, *tid,
                                    MscclLimits::max_tbs));
            return te.subs.size();
        }
        if (gpu.tb_by_id.count(*tid)) {
            pr_.refuse(te, fmt::format("gpu {}: thread block id {} listed twice", id, *tid));
            return te.subs.size();
        }
        if (*send < -1 || *recv < -1)
            pr_.add(te, fmt::format("gpu {}, thread block {}: peers send=\"{}\" recv=\"{}\" must be -1 or a gpu", id, *tid, *send,
                                    *recv));
        else if (*send >= prog_.P || *recv >= prog_.P || *send == id || *recv == id)
            pr_.refuse(te, fmt::format("gpu {}, thread block {}: peers send=\"{}\" recv=\"{}\" must be -1 or another gpu", id,
                                       *tid, *send, *recv));
        if (*chan < 0 || *chan >= MscclLimits::max_channels)
            pr_.add(te, fmt::format("gpu {}, thread block {}: channel {} is outside 0..{} [MAXCHANNELS]", id, *tid, *chan,
                                    MscclLimits::max_channels - 1));
        else if (*chan >= prog_.nchannels)
            pr_.refuse(te, fmt::format("gpu {}, thread block {}: channel {} is not below nchannels=\"{}\" (the executor sets up "
                                    "that many channels)",
                                    id, *tid, *chan, prog_.nchannels));
        const int tbi = int(prog_.tbs.size());
        gpu.tb_by_id[*tid] = tbi;
        gpu.tbs.push_back(tbi);
        prog_.tbs.push_back(Tb{id, *tid, *send, *recv, *chan, te.line, te.col, {}});
        const TbAttrs ta{*tid, *send, *recv, tbi};
        int transmissions = 0;
        for (const Elem& se : te.subs) transmissions += step(ga, ta, se);
        if (transmissions > opt_.max_steps)
            pr_.refuse(te, fmt::format("gpu {}, thread block {} has {} steps; the executor holds at most {} "
                                    "[MSCCL_MAX_NUM_STEPS] (--max-steps N if it is built with another value)",
                                    id, *tid, transmissions, opt_.max_steps));
        return te.subs.size();
    }

    /// One <step>; returns 1 when it is a transmission (not a nop) the executor counts.
    int step(const GpuAttrs& ga, const TbAttrs& ta, const Elem& se) {
        const int id = ga.id, tid = ta.tid;
        if (se.name != "step") {
            pr_.add(se, se.name == "op" ? "<op> is msccl-tools' newer format (old_format=False); the executor reads <step>"
                                        : fmt::format("<{}> inside <tb>, expected <step>", se.name));
            return 0;
        }
        Op op{OpType::nop, id, ta.tbi, int(prog_.tbs[ta.tbi].ops.size())};
        op.line = se.line;
        op.col = se.col;
        for (const auto& [k, v] : se.attrs)
            if (k.size() >= max_str || v.size() >= max_str)
                pr_.add(se, fmt::format("an attribute of <step> is {} characters or longer [MAX_STR_LEN]", max_str));
        auto s = int_attr(se, "s", pr_);
        auto srcoff = int_attr(se, "srcoff", pr_);
        const std::string* srcbuf = required(se, "srcbuf", pr_);
        auto dstoff = int_attr(se, "dstoff", pr_);
        const std::string* dstbuf = required(se, "dstbuf", pr_);
        auto cnt = int_attr(se, "cnt", pr_);
        const std::string* type = required(se, "type", pr_);
        auto depid = int_attr(se, "depid", pr_), deps = int_attr(se, "deps", pr_), hasdep = int_attr(se, "hasdep", pr_);
        if (!s || !srcoff || !srcbuf || !dstoff || !dstbuf || !cnt || !type || !depid || !deps || !hasdep) return 0;
        const auto ty = step_type(*type);
        if (!ty) {
            pr_.add(se, fmt::format("gpu {}, thread block {}, step {}: unknown step type \"{}\" (msccl_parser.cc:540-542)", id, tid,
                                    op.pos, *type));
            return 0;
        }
        op.type = *ty;
        if (*s < 0 || *s >= opt_.max_steps)
            pr_.add(se, fmt::format("gpu {}, thread block {}: s=\"{}\" is outside 0..{} [MSCCL_MAX_NUM_STEPS] (--max-steps N "
                                    "if the executor is built with another value)",
                                    id, tid, *s, opt_.max_steps - 1));
        else if (*s != op.pos && prog_.notes.size() < 40)
            prog_.notes.push_back(fmt::format("{}:{}:{}: gpu {}, thread block {}: s=\"{}\" on step {} of the thread block; the "
                                              "executor ignores s and counts steps itself (msccl_kernel.cu:221), and so "
                                              "does this check",
                                              pr_.name(), se.line, se.col, id, tid, *s, op.pos));
        for (const std::string* b : {srcbuf, dstbuf})
            if (*b != "i" && *b != "o" && *b != "s")
                pr_.add(se, fmt::format("buffer \"{}\" is not i, o or s (msccl_parser.cc:256-268, :553-554)", *b));
        op.srcbuf = srcbuf->empty() ? 'i' : (*srcbuf)[0];
        op.dstbuf = dstbuf->empty() ? 'o' : (*dstbuf)[0];
        op.srcoff = *srcoff;
        op.dstoff = *dstoff;
        op.cnt = *cnt;
        op.depid = *depid;
        op.deps = *deps;
        op.hasdep = *hasdep == 1;
        const bool transmission = op.type != OpType::nop;
        if (transmission) {
            if (op.cnt < 0 || op.cnt >= MscclLimits::max_count)
                pr_.add(se, fmt::format("cnt=\"{}\" is outside 0..{} [MSCCL_MAX_COUNT]", op.cnt, MscclLimits::max_count - 1));
            if (*hasdep != 0 && *hasdep != 1) pr_.add(se, fmt::format("hasdep=\"{}\" must be 0 or 1", *hasdep));
            if (op.sends() && ta.send < 0)
                pr_.refuse(se, fmt::format("gpu {}, thread block {}, step {} sends, but the thread block has no send peer", id, tid,
                                        op.pos));
            if (op.receives() && ta.recv < 0)
                pr_.refuse(se, fmt::format("gpu {}, thread block {}, step {} receives, but the thread block has no receive "
                                        "peer",
                                        id, tid, op.pos));
            offsets(ga, ta, se, op);
        }
        prog_.tbs[ta.tbi].ops.push_back(int(prog_.ops.size()));
        prog_.ops.push_back(op);
        return transmission ? 1 : 0;
    }

    /// The executor's bounds check (msccl_parser.cc:270-288, :610-611): the first offset of the
    /// fields it checks, -1 allowed; every chunk a step touches must also be inside the buffer the
    /// executor really has (checked here for all of them).
    void offsets(const GpuAttrs& ga, const TbAttrs& ta, const Elem& se, const Op& op) {
        const bool check_src = op.type == OpType::send || op.type == OpType::rrs || op.type == OpType::rrcs ||
                               op.type == OpType::copy || op.type == OpType::reduce;
        const bool check_dst = op.type == OpType::recv || op.type == OpType::rcs || op.type == OpType::rrcs ||
                               op.type == OpType::copy || op.type == OpType::reduce;
        auto declared = [&](char b) { return b == 'i' ? ga.ic : b == 'o' ? ga.oc : ga.sc; };
        auto real = [&](char b) { return b == 's' ? ga.sc : b == 'i' ? prog_.input_chunks(ga.id) : prog_.output_chunks(ga.id); };
        auto bounds = [&](bool parser, char b, int off, const char* which) {
            if (parser && (off < -1 || off >= declared(b)))
                pr_.refuse(se, fmt::format("gpu {}, thread block {}, step {}: {} offset {} of buffer {} is outside "
                                        "-1..{} ({}_chunks=\"{}\"; msccl_parser.cc:270-288)",
                                        ga.id, ta.tid, op.pos, which, off, b, declared(b) - 1, b, declared(b)));
            else if (op.cnt > 0 && (off < 0 || long(off) + op.cnt > real(b)))
                pr_.refuse(se, fmt::format("gpu {}, thread block {}, step {}: {} chunks {}..{} of buffer {} are outside "
                                        "the {} chunks the executor has there{}",
                                        ga.id, ta.tid, op.pos, which, off, long(off) + op.cnt - 1, b, real(b),
                                        prog_.coll == Coll::custom || b == 's'
                                            ? ""
                                            : fmt::format(" (nchunksperloop=\"{}\", coll=\"{}\")", prog_.N, prog_.coll_name)));
        };
        if (op.reads_src()) bounds(check_src, op.srcbuf, op.srcoff, "source");
        if (op.writes_dst()) bounds(check_dst, op.dstbuf, op.dstoff, "destination");
    }

    /// Thread block ids contiguous from 0 (msccl_parser.cc:688-691: "thread block %d is missing").
    void tb_ids(const GpuAttrs& ga) {
        int expect = 0;
        for (const auto& [tid, tbi] : prog_.gpus[ga.id].tb_by_id) {
            (void)tbi;
            if (tid != expect) {
                pr_.refuse(ga.e, fmt::format("gpu {}: thread block {} is missing (ids must be 0, 1, 2, ...)", ga.id, expect));
                break;
            }
            ++expect;
        }
    }

    /// At most 32 sending and 32 receiving thread blocks per channel (msccl_parser.cc:589-605).
    void tbs_per_channel(const GpuAttrs& ga) {
        std::map<int, int> sending, receiving;
        for (int tbi : prog_.gpus[ga.id].tbs) {
            const Tb& tb = prog_.tbs[tbi];
            if (tb.chan < 0 || tb.chan >= MscclLimits::max_channels) continue;
            if (tb.send >= 0 && ++sending[tb.chan] == MscclLimits::max_tbs_per_channel + 1)
                pr_.refuse(ga.e, fmt::format("gpu {}: more than {} thread blocks send on channel {} "
                                          "[MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL]",
                                          ga.id, MscclLimits::max_tbs_per_channel, tb.chan));
            if (tb.recv >= 0 && ++receiving[tb.chan] == MscclLimits::max_tbs_per_channel + 1)
                pr_.refuse(ga.e, fmt::format("gpu {}: more than {} thread blocks receive on channel {} "
                                          "[MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL]",
                                          ga.id, MscclLimits::max_tbs_per_channel, tb.chan));
        }
    }

    const Elem& algo_;
    const MscclImportOptions& opt_;
    Problems& pr_;
    Program prog_;
    std::vector<bool> seen_;  ///< per rank: its <gpu> was read
};

}  // namespace

Program build_program(const Elem& algo, const MscclImportOptions& opt, Problems& pr) { return ProgramReader(algo, opt, pr).read(); }

}  // namespace collsched::msccl
