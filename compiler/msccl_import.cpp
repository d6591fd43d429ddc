#include "compiler/msccl_import.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "compiler/builder.hpp"
#include "compiler/export_msccl.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched {

namespace {

// ---------------------------------------------------------------------------------------------
// XML: elements and attributes only, as ElementTree and collsched write them. Whitespace
// (including tabs) between elements, an `<?xml ...?>` declaration and comments are skipped;
// attribute values take "..." or '...' and the five predefined entities and &#N;.

struct Elem {
    std::string name;
    std::vector<std::pair<std::string, std::string>> attrs;
    std::vector<Elem> subs;
    int line = 0, col = 0;
};

class Lexer {
public:
    Lexer(std::string_view text, std::string_view name) : s_(text), name_(name) {}

    Elem parse() {
        skip_misc();
        Elem root = element();
        skip_misc();
        if (i_ != s_.size()) fail("content after the closing </" + root.name + ">");
        return root;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        int line = 1, col = 1;
        for (std::size_t k = 0; k < i_ && k < s_.size(); ++k) {
            if (s_[k] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw InputError(fmt::format("{}:{}:{}: malformed MSCCL-IR XML: {}", name_, line, col, what));
    }
    bool at(std::string_view p) const { return s_.substr(i_, p.size()) == p; }
    static bool space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
    void skip_space() {
        while (i_ < s_.size() && space(s_[i_])) ++i_;
    }
    void skip_misc() {
        for (;;) {
            skip_space();
            if (at("<?")) {
                auto e = s_.find("?>", i_);
                if (e == std::string_view::npos) fail("unterminated <?");
                i_ = e + 2;
            } else if (at("<!--")) {
                auto e = s_.find("-->", i_);
                if (e == std::string_view::npos) fail("unterminated comment");
                i_ = e + 3;
            } else {
                return;
            }
        }
    }
    std::string name() {
        std::size_t b = i_;
        while (i_ < s_.size() && !space(s_[i_]) && s_[i_] != '>' && s_[i_] != '/' && s_[i_] != '=') ++i_;
        if (b == i_) fail("expected a name");
        return std::string(s_.substr(b, i_ - b));
    }
    std::string value() {
        if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("expected a quoted attribute value");
        char q = s_[i_++];
        std::string v;
        while (i_ < s_.size() && s_[i_] != q) {
            if (s_[i_] == '<') fail("'<' in an attribute value");
            if (s_[i_] != '&') {
                v += s_[i_++];
                continue;
            }
            auto e = s_.find(';', i_);
            if (e == std::string_view::npos || e - i_ > 10) fail("bad entity");
            std::string_view ent = s_.substr(i_ + 1, e - i_ - 1);
            if (ent == "quot") v += '"';
            else if (ent == "amp") v += '&';
            else if (ent == "lt") v += '<';
            else if (ent == "gt") v += '>';
            else if (ent == "apos") v += '\'';
            else if (ent.starts_with("#") && ent.size() > 1) {
                unsigned code = 0;
                bool hex = ent[1] == 'x';
                auto [p, ec] = std::from_chars(ent.data() + (hex ? 2 : 1), ent.data() + ent.size(), code, hex ? 16 : 10);
                if (ec != std::errc() || p != ent.data() + ent.size() || code > 127) fail("unsupported character reference");
                v += char(code);
            } else {
                fail(fmt::format("unknown entity &{};", ent));
            }
            i_ = e + 1;
        }
        if (i_ >= s_.size()) fail("unterminated attribute value");
        ++i_;
        return v;
    }
    void locate(Elem& e) const {
        for (std::size_t k = line_from_; k < i_; ++k) {
            if (s_[k] == '\n') {
                ++line_;
                col_ = 1;
            } else {
                ++col_;
            }
        }
        line_from_ = i_;
        e.line = line_;
        e.col = col_;
    }
    Elem element() {
        if (!at("<")) fail(i_ < s_.size() ? "expected '<'" : "unexpected end of file");
        Elem e;
        locate(e);
        ++i_;
        e.name = name();
        for (;;) {
            skip_space();
            if (at("/>")) {
                i_ += 2;
                return e;
            }
            if (at(">")) {
                ++i_;
                break;
            }
            if (at("<") || i_ >= s_.size()) fail(fmt::format("<{}> is not closed with '>'", e.name));
            std::string k = name();
            skip_space();
            if (!at("=")) fail(fmt::format("attribute '{}' of <{}> without a value", k, e.name));
            ++i_;
            skip_space();
            e.attrs.emplace_back(std::move(k), value());
        }
        for (;;) {
            skip_misc();
            if (at("</")) {
                i_ += 2;
                std::string n = name();
                skip_space();
                if (n != e.name) fail(fmt::format("</{}> closes <{}>", n, e.name));
                if (!at(">")) fail("expected '>'");
                ++i_;
                return e;
            }
            if (i_ >= s_.size()) fail(fmt::format("unterminated <{}>", e.name));
            if (!at("<")) fail(fmt::format("text inside <{}>", e.name));
            e.subs.push_back(element());
        }
    }

    std::string_view s_, name_;
    std::size_t i_ = 0;
    mutable std::size_t line_from_ = 0;
    mutable int line_ = 1, col_ = 1;
};

// ---------------------------------------------------------------------------------------------
// The program.

enum class OpType { send, recv, rcs, copy, nop };

struct Op {
    OpType type;
    int rank, tb, pos;  ///< tb: index into Program::tbs
    char srcbuf = 'i', dstbuf = 'o';
    int srcoff = -1, dstoff = -1, cnt = 1;
    int depid = -1, deps = -1;
    bool hasdep = false;
    int line = 0, col = 0;
    bool sends() const { return type == OpType::send || type == OpType::rcs; }
    bool receives() const { return type == OpType::recv || type == OpType::rcs; }
};

struct Tb {
    int rank, id, send, recv, chan;
    std::vector<int> ops;  ///< indices into Program::ops, in step order
};

struct Gpu {
    int i_chunks = 0, o_chunks = 0, s_chunks = 0;
    std::vector<int> tbs;  ///< indices into Program::tbs
    std::map<int, int> tb_by_id;
};

struct Program {
    int P = 0, k = 1;  ///< ranks; chunks per message
    std::string coll;
    bool inplace = false, outofplace = true;
    std::vector<Gpu> gpus;
    std::vector<Tb> tbs;
    std::vector<Op> ops;
};

constexpr std::size_t max_reported = 20;
constexpr int max_chunks = 1 << 20;  ///< per buffer and rank: the reader holds one value per chunk

/// Collects problems, each with the step's location; throws them all at the end of a phase.
class Problems {
public:
    explicit Problems(std::string_view name) : name_(name) {}
    void add(int line, int col, std::string what) {
        ++count_;
        if (lines_.size() >= max_reported) return;
        lines_.push_back(line > 0 ? fmt::format("{}:{}:{}: {}", name_, line, col, what) : fmt::format("{}: {}", name_, what));
    }
    void add(const Elem& e, std::string what) { add(e.line, e.col, std::move(what)); }
    void check() const {
        if (!count_) return;
        std::string text;
        for (const std::string& l : lines_) text += (text.empty() ? "" : "\n") + l;
        if (count_ > lines_.size()) text += fmt::format("\n({} more problems)", count_ - lines_.size());
        throw InputError(text);
    }
    bool empty() const { return count_ == 0; }

private:
    std::string name_;
    std::vector<std::string> lines_;
    std::size_t count_ = 0;
};

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

std::string where(const Program& prog, const Op& op) {
    const Tb& tb = prog.tbs[op.tb];
    const char* what = op.type == OpType::send ? "send" : op.type == OpType::recv ? "receive" : op.type == OpType::rcs ? "receive-copy-send" : op.type == OpType::copy ? "copy" : "nop";
    std::string peer = op.type == OpType::send ? fmt::format(" to {}", tb.send)
                       : op.type == OpType::recv ? fmt::format(" from {}", tb.recv)
                       : op.type == OpType::rcs ? fmt::format(" from {} to {}", tb.recv, tb.send)
                                                : "";
    return fmt::format("rank {}, thread block {}, step {} ({}{}, channel {})", op.rank, tb.id, op.pos, what, peer, tb.chan);
}

/// Reads the elements into a Program; every structural rule of the executor's reader is
/// checked here (msccl_parser.cc), with the exporter's limits.
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
    if (prog.coll == "allreduce" || prog.coll == "reduce" || prog.coll == "reducescatter")
        pr.add(algo, fmt::format("coll=\"{}\" is a reduction; collsched reads only the collectives without reductions "
                                 "(alltoall, allgather, broadcast) until it models reductions",
                                 prog.coll));
    else if (prog.coll != "alltoall" && prog.coll != "allgather" && prog.coll != "broadcast")
        pr.add(algo, fmt::format("coll=\"{}\": collsched reads alltoall, allgather and broadcast", prog.coll));
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
                else if (ty == "rrc" || ty == "rrs" || ty == "rrcs" || ty == "re") {
                    pr.add(se, fmt::format("gpu {}, thread block {}, step {}: type=\"{}\" is a reduction; collsched reads no "
                                           "reductions until it models them",
                                           *id, *tid, op.pos, ty));
                    continue;
                } else {
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
                if (op.sends() && *send < 0) pr.add(se, fmt::format("gpu {}, thread block {}, step {} sends, but the thread block has no send peer", *id, *tid, op.pos));
                if (op.receives() && *recv < 0) pr.add(se, fmt::format("gpu {}, thread block {}, step {} receives, but the thread block has no receive peer", *id, *tid, op.pos));
                auto bounds = [&](char b, int off, const char* which) {
                    const int n = b == 'i' ? *ic : b == 'o' ? *oc : *sc;
                    if (off < 0 || off + op.cnt > n)
                        pr.add(se, fmt::format("gpu {}, thread block {}, step {}: {} chunks {}..{} of buffer {} are outside its {} "
                                               "chunks",
                                               *id, *tid, op.pos, which, off, off + op.cnt - 1, b, n));
                };
                if (op.type == OpType::send || op.type == OpType::copy) bounds(op.srcbuf, op.srcoff, "source");
                if (op.receives() || op.type == OpType::copy) bounds(op.dstbuf, op.dstoff, "destination");
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

/// A value in a chunk: (origin rank, its input chunk), or none.
constexpr std::uint64_t no_data = ~std::uint64_t{0};
std::uint64_t value(int rank, int chunk) { return (std::uint64_t(rank) << 32) | std::uint32_t(chunk); }
int value_rank(std::uint64_t v) { return int(v >> 32); }
int value_chunk(std::uint64_t v) { return int(v & 0xffffffffu); }

/// Where a buffer chunk lives: in place, the input is part of the output.
struct Location {
    char buf;
    int off;
};

class Layout {
public:
    Layout(const Program& p, bool inplace) : p_(p), inplace_(inplace) {}
    Location locate(int rank, char buf, int off) const {
        if (!inplace_ || buf != 'i') return {buf, off};
        if (p_.coll == "allgather") return {'o', rank * p_.k + off};
        return {'o', off};  // alltoall, broadcast: the same buffer
    }
    /// What a chunk holds at the start.
    std::uint64_t initial(int rank, char buf, int off) const {
        if (buf == 's') return no_data;
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
    /// What an output chunk must hold at the end.
    std::uint64_t wanted(int rank, int off) const {
        if (p_.coll == "alltoall") return value(off / p_.k, rank * p_.k + off % p_.k);
        if (p_.coll == "allgather") return value(off / p_.k, off % p_.k);
        return value(0, off);
    }
    std::string describe(std::uint64_t v) const {
        if (v == no_data) return "no data";
        const int r = value_rank(v), c = value_chunk(v);
        std::string piece = p_.k > 1 ? fmt::format("piece {} of ", c % p_.k) : "";
        if (p_.coll == "alltoall") {
            if (c / p_.k == r) return fmt::format("{}rank {}'s own chunk {}", piece, r, c);
            return fmt::format("{}m({},{})", piece, r, c / p_.k);
        }
        return fmt::format("{}b({})", p_.k > 1 ? fmt::format("piece {} of ", c) : "", r);
    }
    /// The message a value belongs to, or nullopt (an alltoall rank's own chunk).
    std::optional<MessageId> message(const Messages& ms, std::uint64_t v) const {
        const int r = value_rank(v), c = value_chunk(v);
        if (p_.coll == "alltoall") {
            if (c / p_.k == r) return std::nullopt;
            return ms.personal(r, c / p_.k);
        }
        return ms.broadcast(r);
    }

private:
    const Program& p_;
    bool inplace_;
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
/// values, checks the outputs; with `builder`, adds the levelled transfers to it.
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
            if (op.type == OpType::send || op.type == OpType::copy) {
                Location l = layout.locate(op.rank, op.srcbuf, op.srcoff + x);
                accesses[{op.rank, l.buf, l.off}].push_back({o, false});
            }
            if (op.receives() || op.type == OpType::copy) {
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
            auto race = [&](int other) {
                const Op &x = prog.ops[other], &y = prog.ops[a.op];
                pr.add(y.line, y.col,
                       fmt::format("{}{}: {} chunk {}[{}] and {} {} it with nothing ordering the two (a missing dependency) "
                                   "[data race]",
                                   where(prog, y), mode, a.write ? "writes" : "reads", buf, off, where(prog, x),
                                   x.receives() || x.type == OpType::copy ? "writes" : "reads"));
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
    // values and levels
    std::vector<std::vector<std::uint64_t>> out(prog.P), scr(prog.P), in(prog.P);
    std::vector<std::vector<int>> writer_o(prog.P);
    for (int r = 0; r < prog.P; ++r) {
        const Gpu& gpu = prog.gpus[r];
        in[r].resize(gpu.i_chunks);
        out[r].resize(gpu.o_chunks);
        scr[r].resize(gpu.s_chunks);
        writer_o[r].assign(gpu.o_chunks, -1);
        for (int c = 0; c < gpu.i_chunks; ++c) in[r][c] = layout.initial(r, 'i', c);
        for (int c = 0; c < gpu.o_chunks; ++c) out[r][c] = layout.initial(r, 'o', c);
        for (int c = 0; c < gpu.s_chunks; ++c) scr[r][c] = no_data;
    }
    auto cell = [&](int rank, char buf, int off) -> std::uint64_t& {
        Location l = layout.locate(rank, buf, off);
        return l.buf == 'i' ? in[rank][l.off] : l.buf == 'o' ? out[rank][l.off] : scr[rank][l.off];
    };
    auto note_write = [&](int rank, char buf, int off, int o) {
        Location l = layout.locate(rank, buf, off);
        if (l.buf == 'o') writer_o[rank][l.off] = o;
    };
    const std::size_t n = prog.ops.size();
    std::vector<Step> finish(n, 0), arrival(n, 0);
    std::vector<std::vector<std::uint64_t>> carried(n);  // per receiving op: the chunks on the wire
    const Messages ms = builder ? builder->messages() : Messages(prog.P);
    for (int o : g.order) {
        const Op& op = prog.ops[o];
        const Tb& tb = prog.tbs[op.tb];
        Step ready = op.pos > 0 ? finish[tb.ops[op.pos - 1]] : 0;
        if (g.publisher[o] >= 0) ready = std::max(ready, finish[g.publisher[o]]);
        std::vector<std::uint64_t> vals;
        if (op.receives()) {
            vals = std::move(carried[o]);
            ready = std::max(ready, arrival[o]);
            for (int x = 0; x < op.cnt; ++x) {
                cell(op.rank, op.dstbuf, op.dstoff + x) = vals[x];
                note_write(op.rank, op.dstbuf, op.dstoff + x, o);
            }
        } else if (op.type == OpType::send || op.type == OpType::copy) {
            for (int x = 0; x < op.cnt; ++x) vals.push_back(cell(op.rank, op.srcbuf, op.srcoff + x));
        }
        if (op.type == OpType::copy)
            for (int x = 0; x < op.cnt; ++x) {
                if (self_copy(op, x)) continue;
                cell(op.rank, op.dstbuf, op.dstoff + x) = vals[x];
                note_write(op.rank, op.dstbuf, op.dstoff + x, o);
            }
        finish[o] = ready;
        if (!op.sends()) continue;
        // on the wire: chunk x in step ready + 1 + x, along the route to the peer
        const int to = tb.send, recv = g.matched[o];
        Step last = 0;
        for (int x = 0; x < op.cnt; ++x) {
            const std::uint64_t v = vals[x];
            if (v == no_data) {
                if (op.type == OpType::rcs) continue;  // reported where the missing data was sent
                pr.add(op.line, op.col,
                       fmt::format("{}{}: sends chunk {}[{}], which holds no data at that point", where(prog, op), mode,
                                   op.type == OpType::rcs ? op.dstbuf : op.srcbuf,
                                   (op.type == OpType::rcs ? op.dstoff : op.srcoff) + x));
                continue;
            }
            auto m = layout.message(ms, v);
            if (!m) {
                pr.add(op.line, op.col,
                       fmt::format("{}{}: sends {}, which the alltoall keeps on its own rank (no message of the collective)",
                                   where(prog, op), mode, layout.describe(v)));
                continue;
            }
            const Step sent = ready + 1 + Step(x);
            last = builder ? builder->send_cut_through(sent, Node{std::uint32_t(op.rank)}, Node{std::uint32_t(to)}, *m) : sent;
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
            const std::uint64_t want = layout.wanted(r, c);
            if (out[r][c] == want) continue;
            const int w = writer_o[r][c];
            std::string by = w < 0                  ? ", never written"
                             : g.source[w] >= 0 ? fmt::format(", written by {}, which {} sent", where(prog, prog.ops[w]),
                                                              where(prog, prog.ops[g.source[w]]))
                                                : fmt::format(", written by {}", where(prog, prog.ops[w]));
            const Op* at = w >= 0 ? &prog.ops[w] : nullptr;
            pr.add(at ? at->line : 0, at ? at->col : 0,
                   fmt::format("rank {}{}: output chunk {} holds {}{}, but the {} needs {} there [completeness]", r, mode, c,
                               layout.describe(out[r][c]), by, prog.coll, layout.describe(want)));
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
    Elem algo = Lexer(text, name).parse();
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
    Collective coll{prog.coll == "alltoall"    ? CollectiveKind::alltoall
                    : prog.coll == "allgather" ? CollectiveKind::allgather
                                               : CollectiveKind::broadcast,
                    Node{0},
                    {}};
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
