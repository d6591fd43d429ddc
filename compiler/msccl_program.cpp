#include "compiler/msccl_program.hpp"

#include <charconv>
#include <optional>

#include "compiler/export_msccl.hpp"

namespace collsched::msccl {

namespace {

constexpr int max_chunks = 1 << 20;  ///< per buffer and rank: the reader holds one value per chunk

const std::string* find_attr(const Elem& e, std::string_view k) {
    for (const auto& [key, v] : e.attrs)
        if (key == k) return &v;
    return nullptr;
}

std::optional<int> int_attr(const Elem& e, std::string_view k, Problems& pr, std::optional<int> fallback = std::nullopt) {
    const std::string* v = find_attr(e, k);
    if (!v) {
        if (fallback) return fallback;
        pr.add(e, fmt::format("<{}> has no attribute {}", e.name, k));
        return std::nullopt;
    }
    int x = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec != std::errc() || p != v->data() + v->size()) {
        pr.add(e, fmt::format("<{}> attribute {}=\"{}\" is not an integer", e.name, k, *v));
        return std::nullopt;
    }
    return x;
}

}  // namespace

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

Program build_program(const Elem& algo, const MscclImportOptions& opt, Problems& pr) {
    Program prog;
    if (algo.name != "algo") {
        pr.add(algo, fmt::format("the top element is <{}>, expected <algo>", algo.name));
        pr.check();
    }
    auto ngpus = int_attr(algo, "ngpus", pr);
    const std::string* coll = find_attr(algo, "coll");
    if (!coll) pr.add(algo, "<algo> has no attribute coll");
    pr.check();
    prog.P = *ngpus;
    prog.coll = *coll;
    prog.reduction = prog.coll == "allreduce" || prog.coll == "reduce" || prog.coll == "reducescatter";
    if (!prog.reduction && prog.coll != "alltoall" && prog.coll != "allgather" && prog.coll != "broadcast")
        pr.add(algo, fmt::format("coll=\"{}\": collsched reads alltoall, allgather, broadcast, allreduce, reduce and reducescatter",
                                 prog.coll));
    if (prog.P < 2 || prog.P > MscclLimits::max_gpus)
        pr.add(algo, fmt::format("ngpus=\"{}\" is outside 2..{} [MAX_SUBS]", prog.P, MscclLimits::max_gpus));
    if (const std::string* proto = find_attr(algo, "proto"); proto && *proto != "Simple" && *proto != "LL" && *proto != "LL128")
        pr.add(algo, fmt::format("proto=\"{}\" is not Simple, LL or LL128", *proto));
    prog.inplace = int_attr(algo, "inplace", pr, 0).value_or(0) != 0;
    // msccl-tools writes no outofplace: such a file serves the calls its inplace names
    prog.outofplace = int_attr(algo, "outofplace", pr, prog.inplace ? 0 : 1).value_or(1) != 0;
    if (!prog.inplace && !prog.outofplace) pr.add(algo, "inplace=\"0\" and outofplace=\"0\": the program serves no call");
    auto nchannels = int_attr(algo, "nchannels", pr, 1);
    pr.check();
    prog.gpus.resize(prog.P);
    std::vector<bool> seen(prog.P);
    for (const Elem& g : algo.subs) {
        if (g.name != "gpu") {
            pr.add(g, fmt::format("<{}> inside <algo>, expected <gpu>", g.name));
            continue;
        }
        auto id = int_attr(g, "id", pr), ic = int_attr(g, "i_chunks", pr), oc = int_attr(g, "o_chunks", pr),
             sc = int_attr(g, "s_chunks", pr);
        if (!id || !ic || !oc || !sc) continue;
        if (*id < 0 || *id >= prog.P || seen[*id]) {
            pr.add(g, fmt::format("gpu id {} is outside 0..{} or listed twice", *id, prog.P - 1));
            continue;
        }
        if (*ic < 0 || *oc < 0 || *sc < 0 || *ic > max_chunks || *oc > max_chunks || *sc > max_chunks) {
            pr.add(g, fmt::format("gpu {}: chunk counts must be in 0..{}", *id, max_chunks));
            continue;
        }
        seen[*id] = true;
        Gpu& gpu = prog.gpus[*id];
        gpu.i_chunks = *ic;
        gpu.o_chunks = *oc;
        gpu.s_chunks = *sc;
        std::size_t elements = 1 + algo.subs.size() + g.subs.size();
        for (const Elem& te : g.subs) {
            if (te.name != "tb") {
                pr.add(te, fmt::format("<{}> inside <gpu>, expected <tb>", te.name));
                continue;
            }
            elements += te.subs.size();
            auto tid = int_attr(te, "id", pr), send = int_attr(te, "send", pr), recv = int_attr(te, "recv", pr),
                 chan = int_attr(te, "chan", pr);
            if (!tid || !send || !recv || !chan) continue;
            if (*tid < 0 || *tid >= MscclLimits::max_tbs || gpu.tb_by_id.count(*tid)) {
                pr.add(te, fmt::format("gpu {}: thread block id {} is negative, at least {} [MSCCL_MAX_NUM_THREAD_BLOCKS] or "
                                       "listed twice",
                                       *id, *tid, MscclLimits::max_tbs));
                continue;
            }
            if (*send < -1 || *send >= prog.P || *recv < -1 || *recv >= prog.P || *send == *id || *recv == *id)
                pr.add(te, fmt::format("gpu {}, thread block {}: peers send=\"{}\" recv=\"{}\" must be -1 or another gpu", *id,
                                       *tid, *send, *recv));
            if (*chan < 0 || *chan >= MscclLimits::max_channels || *chan >= *nchannels)
                pr.add(te, fmt::format("gpu {}, thread block {}: channel {} is outside 0..{} (nchannels=\"{}\", MAXCHANNELS {})",
                                       *id, *tid, *chan, std::min(*nchannels, MscclLimits::max_channels) - 1, *nchannels,
                                       MscclLimits::max_channels));
            if (int(te.subs.size()) > opt.max_steps)
                pr.add(te, fmt::format("gpu {}, thread block {} has {} steps; the executor allows at most {} "
                                       "[MSCCL_MAX_NUM_STEPS] (--max-steps N if it is built with another value)",
                                       *id, *tid, te.subs.size(), opt.max_steps));
            const int tbi = int(prog.tbs.size());
            gpu.tb_by_id[*tid] = tbi;
            gpu.tbs.push_back(tbi);
            prog.tbs.push_back(Tb{*id, *tid, *send, *recv, *chan, {}});
            for (const Elem& se : te.subs) {
                if (se.name != "step") {
                    pr.add(se, se.name == "op" ? "<op> is msccl-tools' newer format (old_format=False); collsched reads <step>"
                                               : fmt::format("<{}> inside <tb>, expected <step>", se.name));
                    continue;
                }
                Op op{OpType::nop, *id, tbi, int(prog.tbs[tbi].ops.size())};
                op.line = se.line;
                op.col = se.col;
                auto s = int_attr(se, "s", pr);
                const std::string* type = find_attr(se, "type");
                if (!type) pr.add(se, "<step> has no attribute type");
                if (!s || !type) continue;
                if (*s != op.pos)
                    pr.add(se, fmt::format("gpu {}, thread block {}: step s=\"{}\" is its step number {}; the executor counts "
                                           "steps itself, so s must be 0, 1, 2, ... in order",
                                           *id, *tid, *s, op.pos));
                const std::string& ty = *type;
                if (ty == "s") op.type = OpType::send;
                else if (ty == "r") op.type = OpType::recv;
                else if (ty == "rcs") op.type = OpType::rcs;
                else if (ty == "cpy") op.type = OpType::copy;
                else if (ty == "nop") op.type = OpType::nop;
                else if (ty == "rrc") op.type = OpType::rrc;
                else if (ty == "rrs") op.type = OpType::rrs;
                else if (ty == "rrcs") op.type = OpType::rrcs;
                else if (ty == "re") op.type = OpType::reduce;
                else {
                    pr.add(se, fmt::format("gpu {}, thread block {}, step {}: unknown step type \"{}\"", *id, *tid, op.pos, ty));
                    continue;
                }
                auto buf = [&](const char* k) -> char {
                    const std::string* b = find_attr(se, k);
                    if (!b) return 'i';
                    if (*b != "i" && *b != "o" && *b != "s") pr.add(se, fmt::format("{}=\"{}\" is not i, o or s", k, *b));
                    return b->empty() ? 'i' : (*b)[0];
                };
                op.srcbuf = buf("srcbuf");
                op.dstbuf = buf("dstbuf");
                op.srcoff = int_attr(se, "srcoff", pr, -1).value_or(-1);
                op.dstoff = int_attr(se, "dstoff", pr, -1).value_or(-1);
                op.cnt = int_attr(se, "cnt", pr, 1).value_or(1);
                op.depid = int_attr(se, "depid", pr, -1).value_or(-1);
                op.deps = int_attr(se, "deps", pr, -1).value_or(-1);
                const int hasdep = int_attr(se, "hasdep", pr, 0).value_or(0);
                op.hasdep = hasdep == 1;
                if (hasdep != 0 && hasdep != 1) pr.add(se, fmt::format("hasdep=\"{}\" must be 0 or 1", hasdep));
                if (op.type != OpType::nop && (op.cnt < 1 || op.cnt >= MscclLimits::max_count))
                    pr.add(se, fmt::format("cnt=\"{}\" is outside 1..{} [MSCCL_MAX_COUNT]", op.cnt, MscclLimits::max_count - 1));
                if (op.reduces() && !prog.reduction)
                    pr.add(se, fmt::format("gpu {}, thread block {}, step {}: type=\"{}\" reduces, but coll=\"{}\" has no reduction",
                                           *id, *tid, op.pos, ty, prog.coll));
                if (op.sends() && *send < 0) pr.add(se, fmt::format("gpu {}, thread block {}, step {} sends, but the thread block has no send peer", *id, *tid, op.pos));
                if (op.receives() && *recv < 0) pr.add(se, fmt::format("gpu {}, thread block {}, step {} receives, but the thread block has no receive peer", *id, *tid, op.pos));
                auto bounds = [&](char b, int off, const char* which) {
                    const int n = b == 'i' ? *ic : b == 'o' ? *oc : *sc;
                    if (off < 0 || off + op.cnt > n)
                        pr.add(se, fmt::format("gpu {}, thread block {}, step {}: {} chunks {}..{} of buffer {} are outside its {} "
                                               "chunks",
                                               *id, *tid, op.pos, which, off, off + op.cnt - 1, b, n));
                };
                // every chunk a step reads or writes (the executor leaves rrc's unchecked: it would
                // read or write outside the buffer)
                if (op.reads_src()) bounds(op.srcbuf, op.srcoff, "source");
                if (op.writes_dst()) bounds(op.dstbuf, op.dstoff, "destination");
                prog.tbs[tbi].ops.push_back(int(prog.ops.size()));
                prog.ops.push_back(op);
            }
        }
        if (elements >= std::size_t(MscclLimits::max_nodes))
            pr.add(g, fmt::format("gpu {} loads {} XML elements; the executor's reader holds at most {} [MAX_NODES = {}]", *id,
                                  elements, MscclLimits::max_nodes - 1, MscclLimits::max_nodes));
        // thread block ids contiguous from 0 (msccl_parser.cc: "thread block %d is missing")
        int expect = 0;
        for (const auto& [tid, tbi] : gpu.tb_by_id) {
            (void)tbi;
            if (tid != expect) {
                pr.add(g, fmt::format("gpu {}: thread block {} is missing (ids must be 0, 1, 2, ...)", *id, expect));
                break;
            }
            ++expect;
        }
        // at most 32 sending and 32 receiving thread blocks per channel
        std::map<int, int> sending, receiving;
        for (int tbi : gpu.tbs) {
            const Tb& tb = prog.tbs[tbi];
            if (tb.send >= 0 && ++sending[tb.chan] == MscclLimits::max_tbs_per_channel + 1)
                pr.add(g, fmt::format("gpu {}: more than {} thread blocks send on channel {} "
                                      "[MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL]",
                                      *id, MscclLimits::max_tbs_per_channel, tb.chan));
            if (tb.recv >= 0 && ++receiving[tb.chan] == MscclLimits::max_tbs_per_channel + 1)
                pr.add(g, fmt::format("gpu {}: more than {} thread blocks receive on channel {} "
                                      "[MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL]",
                                      *id, MscclLimits::max_tbs_per_channel, tb.chan));
        }
    }
    for (int r = 0; r < prog.P; ++r)
        if (!seen[r]) pr.add(algo, fmt::format("no <gpu id=\"{}\">", r));
    pr.check();
    // chunks per message, from the buffers
    const int P = prog.P;
    auto same = [&](auto f, const char* what, int want) {
        for (int r = 0; r < P; ++r)
            if (f(prog.gpus[r]) != want) {
                pr.add(algo, fmt::format("coll=\"{}\" on {} ranks: gpu {} has {}=\"{}\", expected {}", prog.coll, P, r, what,
                                         f(prog.gpus[r]), want));
                return;
            }
    };
    if (prog.coll == "alltoall") {
        const int i0 = prog.gpus[0].i_chunks;
        if (i0 < P || i0 % P) pr.add(algo, fmt::format("alltoall: i_chunks=\"{}\" of gpu 0 is not a multiple of ngpus={}", i0, P));
        prog.k = std::max(1, i0 / P);
        same([](const Gpu& g) { return g.i_chunks; }, "i_chunks", P * prog.k);
        same([](const Gpu& g) { return g.o_chunks; }, "o_chunks", P * prog.k);
    } else if (prog.coll == "allgather") {
        prog.k = std::max(1, prog.gpus[0].i_chunks);
        same([](const Gpu& g) { return g.i_chunks; }, "i_chunks", prog.k);
        same([](const Gpu& g) { return g.o_chunks; }, "o_chunks", P * prog.k);
    } else if (prog.reduction) {
        // every rank contributes its whole input: C = i_chunks chunks, each reduced on its own
        prog.k = std::max(1, prog.gpus[0].i_chunks);
        same([](const Gpu& g) { return g.i_chunks; }, "i_chunks", prog.k);
        if (prog.coll == "allreduce") same([](const Gpu& g) { return g.o_chunks; }, "o_chunks", prog.k);
        else if (prog.coll == "reduce" && prog.gpus[0].o_chunks != prog.k)
            pr.add(algo, fmt::format("reduce: the root, gpu 0, has o_chunks=\"{}\", expected i_chunks={}", prog.gpus[0].o_chunks,
                                     prog.k));
        else if (prog.coll == "reducescatter") {
            if (prog.k % P)
                pr.add(algo, fmt::format("reducescatter: i_chunks=\"{}\" of gpu 0 is not a multiple of ngpus={}", prog.k, P));
            else same([](const Gpu& g) { return g.o_chunks; }, "o_chunks", prog.k / P);
        }
    } else {
        prog.k = std::max(1, prog.gpus[0].o_chunks);
        same([](const Gpu& g) { return g.o_chunks; }, "o_chunks", prog.k);
        if (prog.gpus[0].i_chunks != prog.k)
            pr.add(algo, fmt::format("broadcast: the root, gpu 0, has i_chunks=\"{}\", expected o_chunks={}",
                                     prog.gpus[0].i_chunks, prog.k));
    }
    pr.check();
    return prog;
}

}  // namespace collsched::msccl
