#include "compiler/interop/mscclpp_plan.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include <fmt/format.h>

#include "compiler/core/json_tree.hpp"
#include "dsl/excerpt.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/teardown.hpp"

namespace collsched::mscclpp {

namespace {

constexpr CodeInfo codes[] = {
    {"nop", Code::nop, "NOP", "__syncthreads(): every thread of the block waits for the others"},
    {"barrier", Code::barrier, "BARRIER", "device-wide barrier `barrier_id` over `num_threadblocks` thread blocks of the GPU"},
    {"put", Code::put, "PUT", "copy src[i] to the peer's dst[i] (memory: the threads store; port: the proxy writes)"},
    {"ppkt", Code::ppkt, "PUT_PACKETS", "write src[i] as LL packets into the peer's scratch at dst[i]"},
    {"rppkt", Code::rppkt, "READ_PUT_PACKETS", "read LL packets from the local scratch (waiting for their flags) and put them to peers"},
    {"pws", Code::pws, "PUT_WITH_SIGNAL", "port: put, then signal on the same channel; memory: a plain put (no signal)"},
    {"pwsf", Code::pwsf, "PUT_WITH_SIGNAL_AND_FLUSH", "port: put, signal, and wait for the proxy; memory: a plain put"},
    {"get", Code::get, "GET", "copy the peer's src[i] into the local dst[i] (memory channels)"},
    {"copy", Code::copy, "COPY", "copy src[0] to dst[0] on the GPU"},
    {"cpkt", Code::cpkt, "COPY_PACKETS", "write src[0] as LL packets at dst[0]"},
    {"upkt", Code::upkt, "UNPACK_PACKETS", "read LL packets from the scratch at src[0] (waiting for their flags) into dst[0]"},
    {"signal", Code::signal, "SIGNAL", "increment the peer's semaphore of each channel (release order)"},
    {"wait", Code::wait, "WAIT", "wait until each channel's semaphore has been signalled once more (acquire order)"},
    {"flush", Code::flush, "FLUSH", "wait for the port channels' proxy to finish (reads nOutputs, not the channels)"},
    {"re", Code::re, "REDUCE", "dst[0] = src[0] + src[1] + ... (local buffers)"},
    {"repkt", Code::repkt, "REDUCE_PACKETS", "dst[0] = src[0] + LL packets at src[1..] in the scratch"},
    {"recpkt", Code::recpkt, "REDUCE_COPY_PACKETS", "as repkt, and the result also as packets at dst[1]"},
    {"res", Code::res, "REDUCE_SEND", "as re, and the result also to the peers' dst[1..]"},
    {"respkt", Code::respkt, "REDUCE_SEND_PACKETS", "as repkt, and the result as packets to the peers' dst[1..]"},
    {"recspkt", Code::recspkt, "REDUCE_COPY_SEND_PACKETS", "as recpkt, and the result as packets to the peers' dst[2..]"},
    {"rre", Code::rre, "READ_REDUCE", "dst[0] = src[0] + the peers' src[1..] (read through memory channels)"},
    {"rres", Code::rres, "READ_REDUCE_SEND", "as rre, and the result also to the peers' dst[1..]"},
    {"glres", Code::glres, "MULTI_LOAD_REDUCE_STORE", "switch: load-reduce src over the group, store to dst on every member"},
    {"rlxsignal", Code::rlxsignal, "RELAXED_SIGNAL", "signal with relaxed order: counts, but orders no memory"},
    {"rlxwait", Code::rlxwait, "RELAXED_WAIT", "wait with relaxed order: counts, but orders no memory"},
    {"pipeline", Code::pipeline, "PIPELINE", "run the inner ops over the chunks in slices of unit_size bytes"},
    {"sem_release", Code::sem_release, "SEM_RELEASE", "release the GPU's device semaphores semaphore_ids"},
    {"sem_acquire", Code::sem_acquire, "SEM_ACQUIRE", "acquire the GPU's device semaphores semaphore_ids"},
    {"gstore", Code::gstore, "MULTI_STORE", "switch: store src[0] to dst on every member of the group"},
    {"gstorepkt", Code::gstorepkt, "MULTI_STORE_PKT", "switch: read local LL packets, store them as packets on every member"},
};

using json_tree::Kind;
using json_tree::Value;

/// Reads one level of the document, collecting findings with their JSON path. Two kinds of
/// problem (docs/errors.md, "Executor formats: one rule"): bad input, judged from one value alone
/// (a required key missing, a wrong JSON type, a number outside its field's range, a name the
/// format does not have), is collected in `problems` and thrown as one InputError (exit 2) when
/// the document has been read; what depends on how values fit together (an index past its list,
/// a rank that does not exist, an id that is not its position) is a finding (exit 1).
class Reader {
public:
    Reader(std::string_view file, std::vector<Finding>& out, bool& checkable, std::vector<std::string>& problems)
        : file_(file), out_(out), ok_(checkable), problems_(problems) {}

    void add(const std::string& rule, const std::string& path, const Value* v, std::string what) {
        out_.push_back({rule, path, v ? Pos{v->line, v->col} : Pos{}, std::move(what)});
    }
    void add(const std::string& rule, const std::string& path, Pos p, std::string what) { out_.push_back({rule, path, p, std::move(what)}); }
    /// A finding that makes the plan impossible to model (the executor crashes or refuses).
    void broken(const std::string& path, const Value* v, std::string what) {
        ok_ = false;
        add("structure", path, v, std::move(what));
    }
    /// Bad input (exit 2): `file:line:col: path: what`.
    void bad(const std::string& path, const Value* v, std::string what) {
        ok_ = false;
        problems_.push_back(v && v->line > 0 ? fmt::format("{}:{}:{}: {}: {}", file_, v->line, v->col, path, what)
                                             : fmt::format("{}: {}: {}", file_, path, what));
    }

    /// Why `v` is no integer of `key`, and what the executor does with it: its nlohmann (v3.12.0)
    /// converts a number or a boolean into an integer field without a word (from_json for arithmetic
    /// types: a static_cast, so 1.0 reads as 1, -0.0 as 0, 1.5 as 1, true as 1) and throws
    /// type_error 302 for null, strings, arrays and objects.
    static std::string not_integer(const Value& v, std::string_view key, std::int64_t lo, std::int64_t hi) {
        if (v.kind == Kind::number && v.text.find_first_of(".eE") == std::string::npos)  // a plain integer beyond 64 bits
            return fmt::format("\"{}\" is {}, out of range {}..{}", key, excerpt(v.text), lo, hi);
        if (v.kind == Kind::number)
            return fmt::format("\"{}\" is {}, not an integer (the executor's nlohmann converts it without an error, truncating toward "
                               "zero: 1.0 reads as 1, -0.0 as 0, 1.5 as 1; write the integer)", key, excerpt(v.text));
        if (v.kind == Kind::boolean)
            return fmt::format("\"{}\" is {}, not an integer (the executor's nlohmann converts it without an error: true reads as 1, "
                               "false as 0; write the integer)", key, v.boolean ? "true" : "false");
        return fmt::format("\"{}\" is {}, not an integer (the executor's nlohmann throws type_error 302, \"type must be number\")", key,
                           v.kind_name());
    }

    /// The member `key` of object `o`; missing: bad input, saying how the executor fails.
    const Value* need(const Value& o, std::string_view key, const std::string& path, std::string_view how = "") {
        const Value* v = o.find(key);
        if (!v)
            bad(path, &o,
                   fmt::format("has no \"{}\"; {}", key,
                               how.empty() ? "the executor reads it without a check (nlohmann's operator[] on a const object: "
                                             "undefined behaviour, an assertion or a crash)"
                                           : how));
        return v;
    }
    std::optional<std::int64_t> integer(const Value* v, const std::string& path, std::string_view key, std::int64_t lo,
                                        std::int64_t hi) {
        if (!v) return std::nullopt;
        auto i = v->integer();
        if (!i) {
            bad(path, v, not_integer(*v, key, lo, hi));
            return std::nullopt;
        }
        if (*i < lo || *i > hi) {
            bad(path, v, fmt::format("\"{}\" is {}, outside {}..{}", key, *i, lo, hi));
            return std::nullopt;
        }
        return i;
    }
    const Value* array(const Value* v, const std::string& path, std::string_view key) {
        if (!v) return nullptr;
        if (v->kind != Kind::array) {
            bad(path, v, fmt::format("\"{}\" is {}, not an array", key, v->kind_name()));
            return nullptr;
        }
        return v;
    }
    const Value* object(const Value* v, const std::string& path, std::string_view what) {
        if (!v) return nullptr;
        if (v->kind != Kind::object) {
            bad(path, v, fmt::format("{} is {}, not an object", what, v->kind_name()));
            return nullptr;
        }
        return v;
    }
    /// A string naming one of `names`; anything else is a finding saying how the executor fails.
    template <class T, std::size_t N>
    std::optional<T> one_of(const Value* v, const std::string& path, std::string_view key, const std::pair<std::string_view, T> (&names)[N],
                            std::string_view refusal) {
        if (!v) return std::nullopt;
        if (v->kind == Kind::string)
            for (const auto& [name, value] : names)
                if (v->text == name) return value;
        std::string known;
        for (std::size_t k = 0; k < N; ++k) known += fmt::format("{}\"{}\"", k == 0 ? "" : k + 1 == N ? " and " : ", ", names[k].first);
        bad(path, v, fmt::format("\"{}\" is {}; the executor knows {} only ({})", key,
                                 v->kind == Kind::string ? fmt::format("\"{}\"", excerpt(v->text)) : std::string(v->kind_name()), known, refusal));
        return std::nullopt;
    }
    std::optional<Buf> buffer(const Value* v, const std::string& path, std::string_view key) {
        static constexpr std::pair<std::string_view, Buf> names[] = {{"i", Buf::input}, {"o", Buf::output}, {"s", Buf::scratch}};
        return one_of(v, path, key, names, "convertToBufferType throws \"Invalid buffer type\"");
    }
    std::optional<Chan> channel(const Value* v, const std::string& path, std::string_view key) {
        static constexpr std::pair<std::string_view, Chan> names[] = {
            {"memory", Chan::memory}, {"port", Chan::port}, {"switch", Chan::switch_}, {"none", Chan::none}};
        return one_of(v, path, key, names, "convertToChannelType throws \"Invalid channel type\"");
    }
    /// The required member `key` of `o` as an integer in lo..hi (need, then integer).
    std::optional<std::int64_t> int_key(const Value& o, std::string_view key, const std::string& path, std::int64_t lo, std::int64_t hi) {
        return integer(need(o, key, path), path, key, lo, hi);
    }
    std::vector<int> ints(const Value* v, const std::string& path, std::string_view key, std::int64_t lo, std::int64_t hi) {
        std::vector<int> out;
        if (!array(v, path, key)) return out;
        for (std::size_t k = 0; k < v->items.size(); ++k)
            if (auto i = integer(&v->items[k], fmt::format("{}.{}[{}]", path, key, k), key, lo, hi)) out.push_back(int(*i));
        return out;
    }

    void op(const Value& j, const std::string& path, Op& op, bool inside_pipeline);

private:
    std::string_view file_;
    std::vector<Finding>& out_;
    bool& ok_;
    std::vector<std::string>& problems_;
};

constexpr std::int64_t u32max = 0xffffffffLL;
constexpr std::int64_t u8max = 255;

/// Whether an op of `ops` spins until another block (of any GPU) acts: a wait, a semaphore acquire, a barrier of more
/// than one block, or an LL packet read (the kernel polls the packet's flag: execution_kernel.hpp).
bool spins(const std::vector<Op>& ops) {
    for (const Op& op : ops) {
        switch (op.code) {
            case Code::wait:
            case Code::rlxwait:
            case Code::sem_acquire:
            case Code::upkt:
            case Code::rppkt:
            case Code::repkt:
            case Code::respkt:
            case Code::recpkt:
            case Code::recspkt:
            case Code::gstorepkt: return true;
            case Code::barrier:
                if (op.num_threadblocks != 1) return true;
                break;
            case Code::pipeline:
                if (spins(op.inner)) return true;
                break;
            default: break;
        }
    }
    return false;
}

void Reader::op(const Value& j, const std::string& path, Op& op, bool inside_pipeline) {
    op.path = path;
    op.pos = {j.line, j.col};
    if (!object(&j, path, "an op")) return;
    const Value* name = need(j, "name", path);
    if (name) {
        bool known = false;
        if (name->kind == Kind::string)
            for (const CodeInfo& c : codes)
                if (c.name == name->text) {
                    op.code = c.code;
                    known = true;
                }
        if (!known) {
            bad(path, name,
                name->kind == Kind::string
                    ? fmt::format("unknown op \"{}\" (getOpType throws \"Invalid operation type\")", excerpt(name->text))
                    : fmt::format("\"name\" is {}, not a string", name->kind_name()));
            return;
        }
    }
    if (const Value* c = j.find("channel_type")) op.channel_type = channel(c, path, "channel_type");
    if (const Value* c = j.find("channel_ids")) {
        op.channel_ids = ints(c, path, "channel_ids", 0, u8max);
        if (c->kind == Kind::array && c->items.size() > 8)
            add("limit", path, c,
                fmt::format("has {} channel ids; an op holds at most 8 (MAX_CHANNEL_PER_OPERATION, execution_common.hpp:16): "
                            "the parser writes past channelIndexes[8] into the offsets",
                            c->items.size()));
    }
    if (const Value* t = j.find("tbg_info"); object(t, path, "\"tbg_info\"")) {
        auto id = int_key(*t, "tb_id", path + ".tbg_info", 0, u32max);
        auto size = int_key(*t, "tbg_size", path + ".tbg_info", 1, u32max);
        if (id && size) {
            op.tbg_id = *id;
            op.tbg_size = *size;
            if (*id >= *size) add("blind spot", path, t, fmt::format("tbg_info tb_id {} is not below tbg_size {}: the slice lies past the op's chunks", *id, *size));
        }
    }
    for (auto [key, list] : {std::pair{"src_buff", &op.src}, std::pair{"dst_buff", &op.dst}}) {
        const Value* b = j.find(key);
        if (!array(b, path, key)) continue;
        if (b->items.size() > 10)
            add("limit", path, b,
                fmt::format("\"{}\" has {} entries; an op holds at most 10 (MAX_LOCAL_BUFFER_PER_OPERATION + "
                            "MAX_CHANNEL_PER_OPERATION, execution_common.hpp:13-16): the parser writes past the arrays",
                            key, b->items.size()));
        for (std::size_t k = 0; k < b->items.size(); ++k) {
            const std::string bpath = fmt::format("{}.{}[{}]", path, key, k);
            const Value& e = b->items[k];
            BufRef r;
            r.pos = {e.line, e.col};
            if (!object(&e, bpath, "a buffer entry")) continue;
            if (const Value* t = e.find("type")) r.type = buffer(t, bpath, "type");
            if (const Value* id = e.find("buffer_id")) r.buffer_id = int(integer(id, bpath, "buffer_id", 0, u8max).value_or(-1));
            if (const Value* s = e.find("switch_channel_id"))
                r.switch_channel_id = int(integer(s, bpath, "switch_channel_id", 0, u8max).value_or(-1));
            r.index = int_key(e, "index", bpath, 0, u32max).value_or(0);
            r.size = int_key(e, "size", bpath, 0, u32max).value_or(0);
            if (!r.type && r.buffer_id < 0 && r.switch_channel_id < 0)
                bad(bpath, &e, "names no buffer (\"type\", \"buffer_id\" or \"switch_channel_id\"); the executor reads "
                                  "BufferType::NONE and throws \"Invalid buffer type\"");
            list->push_back(r);
        }
    }
    if (const Value* b = j.find("barrier_id")) op.barrier_id = int(integer(b, path, "barrier_id", 0, u32max).value_or(-1));
    if (const Value* n = j.find("num_threadblocks"))
        op.num_threadblocks = int(integer(n, path, "num_threadblocks", 0, u32max).value_or(-1));
    if (const Value* s = j.find("semaphore_ids")) {
        op.semaphore_ids = ints(s, path, "semaphore_ids", 0, u32max);
        if (s->kind == Kind::array && s->items.size() > 16)
            add("limit", path, s,
                fmt::format("has {} semaphore ids; an op holds at most 16 (MAX_DEVICE_SEMAPHORES, execution_common.hpp:20)",
                            s->items.size()));
    }
    if (const Value* r = j.find("reduce_op")) {
        op.reduce_op = r->kind == Kind::string ? r->text : "";
        if (op.reduce_op != "sum")
            add("blind spot", path, r,
                fmt::format("reduce_op {}: the executor never reads reduce_op and always sums (execution_kernel.hpp:748-764 "
                            "instantiate ReduceOp SUM)",
                            r->kind == Kind::string ? fmt::format("\"{}\"", excerpt(r->text)) : std::string(r->kind_name())));
    }
    if (op.code == Code::pipeline) {
        if (inside_pipeline) {
            broken(path, &j, "a pipeline inside a pipeline: the kernel runs the inner ops flat, so the inner pipeline's "
                             "ops would run twice");
            return;
        }
        const Value* ctx = object(need(j, "iter_context", path), path, "\"iter_context\"");
        if (ctx) {
            op.unit_size = int_key(*ctx, "unit_size", path + ".iter_context", 1, u32max).value_or(1);
            op.num_chunks = int_key(*ctx, "num_chunks", path + ".iter_context", 0, 0x7fffffff).value_or(0);
        }
        const Value* inner = array(need(j, "ops", path), path, "ops");
        if (inner)
            for (std::size_t k = 0; k < inner->items.size(); ++k) {
                Op in;
                this->op(inner->items[k], fmt::format("{}.ops[{}]", path, k), in, true);
                op.inner.push_back(std::move(in));
            }
    } else if (j.find("iter_context")) {
        broken(path, j.find("iter_context"),
               "has an iter_context but is no pipeline: the parser reads op[\"ops\"] of it (execution_plan.cc:592-598)");
    }
}

}  // namespace

char buf_letter(Buf b) { return b == Buf::input ? 'i' : b == Buf::output ? 'o' : 's'; }

std::string_view chan_name(Chan c) {
    switch (c) {
        case Chan::memory: return "memory";
        case Chan::port: return "port";
        case Chan::switch_: return "switch";
        case Chan::none: return "none";
    }
    return "?";
}

std::span<const CodeInfo> code_table() { return codes; }

const CodeInfo& info(Code c) { return codes[static_cast<std::size_t>(c)]; }

bool looks_like_mscclpp_plan(std::string_view text) {
    // cheap and exact enough: a JSON object (first non-blank '{') with both keys and no "format"
    std::size_t i = text.find_first_not_of(" \t\r\n");
    if (i == std::string_view::npos || text[i] != '{') return false;
    if (text.find("\"gpus\"") == std::string_view::npos || text.find("\"collective\"") == std::string_view::npos) return false;
    try {
        json_tree::Value v = json_tree::parse(text, "");
        return v.kind == Kind::object && v.find("gpus") && v.find("collective") && !v.find("format");
    } catch (...) {
        return text.find("\"format\"") == std::string_view::npos;  // a broken plan: let the reader say where
    }
}

std::string format_finding(std::string_view file, const Finding& f) {
    std::string at = f.pos.line > 0 ? fmt::format("{}:{}:{}: ", file, f.pos.line, f.pos.col) : fmt::format("{}: ", file);
    return fmt::format("{}{}{}{} [{}]", at, f.path, f.path.empty() ? "" : ": ", f.what, f.rule);
}

namespace {

/// Reads a plan as the executor's parser does (execution_plan.cc): the top level, then each GPU's
/// channels, remote buffers, semaphores and thread blocks. Every deviation is a finding.
class PlanReader {
public:
    PlanReader(std::string_view text, std::string_view file, Deadline deadline)
        : file_(file), root_(json_tree::parse(text, file, deadline)), rd_(file, res_.findings, res_.checkable, problems_), deadline_(deadline) {}

    ReadResult read() {
        const Value* gpus = header();
        P_ = int(gpus->items.size());
        if (P_ == 0) throw InputError(fmt::format("{}:{}:{}: \"gpus\" is empty: a plan has at least one GPU", file_, gpus->line, gpus->col));
        res_.plan.gpus.resize(std::size_t(P_));
        for (int g = 0; g < P_; ++g) {
            if (deadline_.passed()) throw LimitReached(fmt::format("time limit (reading {} back, at GPU {} of {})", file_, g, P_));
            gpu(gpus->items[std::size_t(g)], g);
        }
        res_.file = std::string(file_);
        if (!problems_.empty()) {
            // every problem of the file, at most 20 lines (as MSCCL-IR's reader)
            std::string text;
            for (std::size_t k = 0; k < problems_.size() && k < 20; ++k) text += (k ? "\n" : "") + problems_[k];
            if (problems_.size() > 20) text += fmt::format("\n({} more problems)", problems_.size() - 20);
            throw InputError(text);
        }
        return std::move(res_);
    }

private:
    /// A top-level key the executor reads first; Kind::null: any kind, and may be missing.
    const Value* top(std::string_view key, Kind kind, std::string_view what) const {
        const Value* v = root_.find(key);
        if (!v) {
            if (kind == Kind::null) return nullptr;
            throw InputError(fmt::format("{}:{}:{}: not an MSCCL++ execution plan: no \"{}\" at the top level (the executor "
                                         "reads obj[\"{}\"] first, execution_plan.cc:122-134, 235-254)",
                                         file_, root_.line, root_.col, key, key));
        }
        const Kind want = kind == Kind::null ? v->kind : kind;
        if (v->kind != want && !(want == Kind::number && v->integer()))
            throw InputError(fmt::format("{}:{}:{}: \"{}\" is {}, but the executor reads it as {}", file_, v->line, v->col, key,
                                         v->kind_name(), what));
        return v;
    }

    bool opt_bool(std::string_view key, bool dflt) const {
        const Value* v = root_.find(key);
        if (!v) return dflt;
        if (v->kind != Kind::boolean)
            throw InputError(fmt::format("{}:{}:{}: \"{}\" is {}, but the executor reads it as a boolean", file_, v->line, v->col, key,
                                         v->kind_name()));
        return v->boolean;
    }

    std::int64_t opt_int(std::string_view key, std::int64_t dflt, std::int64_t lo) const {
        const Value* v = root_.find(key);
        if (!v) return dflt;
        auto i = v->integer();
        if (!i)
            throw InputError(fmt::format("{}:{}:{}: \"{}\" is {}, but the executor reads it as an unsigned integer", file_, v->line,
                                         v->col, key, v->kind == Kind::number ? v->text : std::string(v->kind_name())));
        // 0 is an unsigned integer: the message said it was not ("is 0, but the executor reads it as an unsigned integer")
        if (*i < lo)
            throw InputError(fmt::format("{}:{}:{}: \"{}\" is {}, outside {}..2^64-1", file_, v->line, v->col, key, v->text, lo));
        return *i;
    }

    /// min_message_size or max_message_size: nlohmann holds an integer up to 2^64 - 1 exactly (the
    /// default maximum, which DSLs write in full); the executor reads both as size_t.
    std::uint64_t opt_size(std::string_view key, std::uint64_t dflt) const {
        const Value* v = root_.find(key);
        if (!v) return dflt;
        std::uint64_t n = 0;
        const bool digits = v->kind == Kind::number && v->text.find_first_not_of("0123456789") == std::string::npos;
        if (digits) {
            auto [end, ec] = std::from_chars(v->text.data(), v->text.data() + v->text.size(), n);
            if (ec == std::errc{} && end == v->text.data() + v->text.size()) return n;
            throw InputError(fmt::format("{}:{}:{}: \"{}\" is {}, outside 0..2^64-1 (nlohmann holds it as a double, and the executor's "
                                         "conversion to size_t is undefined)",
                                         file_, v->line, v->col, key, v->text));
        }
        return std::uint64_t(opt_int(key, 0, 0));  // a fraction, a sign, a string: said as for every integer
    }

    /// The plan's top level; returns "gpus".
    const Value* header() {
        Plan& plan = res_.plan;
        if (root_.kind != Kind::object)
            throw InputError(fmt::format("{}:{}:{}: not an MSCCL++ execution plan: the document is {}, not an object", file_, root_.line,
                                         root_.col, root_.kind_name()));
        plan.name = top("name", Kind::string, "a string")->text;
        plan.collective = top("collective", Kind::string, "a string")->text;
        plan.protocol = top("protocol", Kind::string, "a string")->text;
        plan.inplace = top("inplace", Kind::boolean, "a boolean")->boolean;
        const Value* gpus = top("gpus", Kind::array, "an array");
        plan.reuse_resources = opt_bool("reuse_resources", false);
        plan.double_scratch = opt_bool("use_double_scratch_buffer", false);
        plan.buffer_alignment = opt_int("buffer_alignment", 16, 1);
        plan.num_threads = opt_int("num_threads_per_block", 1024, 1);
        const std::uint64_t least = opt_size("min_message_size", 0), most = opt_size("max_message_size", ~std::uint64_t{0});
        // the executor reads min_message_size through nlohmann's value() with the default 0, an int (plan.cc:132, 250):
        // the low 32 bits, sign-extended into size_t; only sizes below 2^31 or from 2^64 - 2^31 read as written
        const std::uint64_t as_read = std::uint64_t(std::int64_t(std::int32_t(std::uint32_t(least))));
        if (as_read != least)
            rd_.add("blind spot", "min_message_size", root_.find("min_message_size"),
                    fmt::format("min_message_size {} is read by the executor as {}: it reads the key as an int (nlohmann's value() "
                                "with the default 0, plan.cc:132, 250) and keeps the low 32 bits, so the plan serves other sizes than "
                                "written; a least size below 2^31 (2 GiB) reads as written",
                                least, as_read));
        // the executor throws for a call whose size lies outside min..max (checkMessageSize, plan.cc:293-308): with min
        // above max, for every call
        if (least > most)
            rd_.add("structure", "max_message_size", root_.find("max_message_size"),
                    fmt::format("min_message_size {} is above max_message_size {}: no message size lies between them, and the executor "
                                "throws for every call outside the range (checkMessageSize, plan.cc:293-308)",
                                least, most));
        for (std::string_view key : {"name", "collective", "protocol", "inplace", "gpus"})
            if (root_.count(key) > 1)
                res_.findings.push_back({"blind spot", std::string(key), {root_.find(key)->line, root_.find(key)->col},
                                         fmt::format("\"{}\" appears {} times; nlohmann keeps the last", key, root_.count(key))});
        if (plan.protocol != "LL" && plan.protocol != "Simple")
            rd_.add("blind spot", "protocol", top("protocol", Kind::string, "a string"),
                    fmt::format("protocol \"{}\": the executor runs every protocol but \"LL\" as Simple (execution_plan.cc:243-246)",
                                excerpt(plan.protocol)));
        if (plan.num_threads > 1024)
            rd_.add("limit", "num_threads_per_block", root_.find("num_threads_per_block"),
                    fmt::format("{} threads per block; the kernel is declared __launch_bounds__(1024, 1) (execution_kernel.hpp:801)",
                                plan.num_threads));
        return gpus;
    }

    void gpu(const Value& jg, int g) {
        Gpu& gpu = res_.plan.gpus[std::size_t(g)];
        const std::string gpath = fmt::format("gpus[{}]", g);
        gpu.id = g;
        gpu.pos = {jg.line, jg.col};
        if (!rd_.object(&jg, gpath, "a GPU")) return;
        if (auto id = rd_.int_key(jg, "id", gpath, INT32_MIN, INT32_MAX); id && *id != g)
            rd_.broken(gpath, jg.find("id"),
                       fmt::format("has id {} at position {}: the executor takes gpus[rank] and throws \"GPU rank does not match\" "
                                   "(execution_plan.cc:256-259)",
                                   *id, g));
        auto chunks = [&](std::string_view key) { return rd_.int_key(jg, key, gpath, 0, u32max).value_or(0); };
        gpu.input_chunks = chunks("input_chunks");
        gpu.output_chunks = chunks("output_chunks");
        gpu.scratch_chunks = chunks("scratch_chunks");
        for (auto [key, n] : {std::pair{"input_chunks", gpu.input_chunks}, std::pair{"output_chunks", gpu.output_chunks}})
            if (n == 0 && jg.find(key) && jg.find(key)->integer() == 0)
                rd_.bad(gpath, jg.find(key),
                           fmt::format("\"{}\" is 0: checkMessageSize takes (size / buffer_alignment) % {} and divides by zero "
                                       "(execution_plan.cc:301-302)",
                                       key, key == std::string_view("input_chunks") ? "inputChunks" : "outputChunks"));
        // channels (execution_plan.cc:313-342): memory and port flattened per type in file order
        if (const Value* chans = rd_.array(rd_.need(jg, "channels", gpath), gpath, "channels"))
            for (std::size_t k = 0; k < chans->items.size(); ++k) gpu_channel(gpu, chans->items[k], fmt::format("{}.channels[{}]", gpath, k), g);
        // remote buffers (execution_plan.cc:344-365)
        if (const Value* rbs = rd_.array(rd_.need(jg, "remote_buffers", gpath), gpath, "remote_buffers"))
            for (std::size_t k = 0; k < rbs->items.size(); ++k)
                remote_buffer(gpu, rbs->items[k], fmt::format("{}.remote_buffers[{}]", gpath, k), g);
        if (const Value* sems = jg.find("semaphores"); rd_.array(sems, gpath, "semaphores"))
            for (std::size_t k = 0; k < sems->items.size(); ++k) {
                const std::string spath = fmt::format("{}.semaphores[{}]", gpath, k);
                if (!rd_.object(&sems->items[k], spath, "a semaphore")) continue;
                gpu.semaphores.push_back(rd_.int_key(sems->items[k], "init_value", spath, INT32_MIN, INT32_MAX).value_or(0));
            }
        const Value* tbs = rd_.array(rd_.need(jg, "threadblocks", gpath), gpath, "threadblocks");
        if (!tbs) return;
        const int T = int(tbs->items.size());
        std::vector<int> seen(std::size_t(T), -1);
        for (int t = 0; t < T; ++t) thread_block(gpu, tbs->items[std::size_t(t)], fmt::format("{}.threadblocks[{}]", gpath, t), t, seen);
        // a GPU's blocks run as one grid (executor.cc:495-503): a block that spins (a wait, a barrier, an LL read) on one not
        // yet started holds its SM for good, so the check's verdict needs them all resident at once (resident_blocks)
        const int resident = resident_blocks(res_.plan.num_threads);
        if (T > resident && std::any_of(gpu.tbs.begin(), gpu.tbs.end(), [](const Tb& tb) { return spins(tb.ops); }))
            rd_.add("blind spot", gpath + ".threadblocks", tbs,
                    fmt::format("{} thread blocks of {} threads, some of which wait on others: an A100 runs at most {} of them at "
                                "once (108 SMs; __launch_bounds__(1024, 1), execution_kernel.hpp:801), and a block that spins on one "
                                "not yet started never ends: the plan can deadlock on the GPU however its ops are ordered",
                                T, res_.plan.num_threads, resident));
    }

    void gpu_channel(Gpu& gpu, const Value& jc, const std::string& cpath, int g) {
        if (!rd_.object(&jc, cpath, "a channel")) return;
        GpuChannel ch;
        ch.pos = {jc.line, jc.col};
        ch.path = cpath;
        ch.type = rd_.channel(rd_.need(jc, "channel_type", cpath), cpath, "channel_type").value_or(Chan::none);
        if (ch.type == Chan::switch_) {
            ch.buffer_type = rd_.buffer(rd_.need(jc, "buffer_type", cpath), cpath, "buffer_type");
            if (const Value* groups = rd_.array(rd_.need(jc, "rank_groups", cpath), cpath, "rank_groups"))
                for (std::size_t q = 0; q < groups->items.size(); ++q) {
                    const Value& jq = groups->items[q];
                    const std::string qpath = fmt::format("{}.rank_groups[{}]", cpath, q);
                    if (!rd_.object(&jq, qpath, "a rank group")) continue;
                    rd_.int_key(jq, "size", qpath, 0, INT32_MAX);
                    const Value* ranks = rd_.need(jq, "ranks", qpath);
                    ch.groups.push_back(rd_.ints(ranks, qpath, "ranks", 0, INT32_MAX));
                    if (ranks && ranks->kind == Kind::array && ranks->items.empty())
                        rd_.bad(qpath, ranks, "\"ranks\" is empty: a multicast group has at least one member (a group of none "
                                              "stores to no GPU and loads nothing to reduce)");
                    for (std::size_t m = 0; m < ch.groups.back().size(); ++m)
                        if (ch.groups.back()[m] >= P_)
                            rd_.broken(qpath, &ranks->items[m],
                                       fmt::format("a multicast group with rank {}, which does not exist (the plan has {} GPUs)",
                                                   ch.groups.back()[m], P_));
                    gpu.switch_groups.push_back(ch.groups.back());
                    gpu.switch_buffers.push_back(ch.buffer_type.value_or(Buf::scratch));
                }
        } else {
            ch.peers = rd_.ints(rd_.need(jc, "connected_to", cpath), cpath, "connected_to", 0, INT32_MAX);
            for (std::size_t q = 0; q < ch.peers.size(); ++q) {
                const int peer = ch.peers[q];
                const Value* at = &jc.find("connected_to")->items[q];
                if (peer == g)
                    rd_.add("blind spot", cpath, at,
                            fmt::format("a {} channel from GPU {} to itself: the executor connects the rank to itself", chan_name(ch.type), g));
                else if (peer >= P_)
                    rd_.broken(cpath, at,
                               fmt::format("a {} channel to rank {}, which does not exist (the plan has {} GPUs): the "
                                           "executor's connect() to it never completes",
                                           chan_name(ch.type), peer, P_));
                if (ch.type == Chan::memory) gpu.memory_peers.push_back(peer);
                if (ch.type == Chan::port) gpu.port_peers.push_back(peer);
            }
            if (ch.type == Chan::none && !ch.peers.empty())
                rd_.add("blind spot", cpath, &jc, "a channel of type \"none\": the executor counts its peers and builds nothing");
        }
        gpu.channels.push_back(std::move(ch));
    }

    void remote_buffer(Gpu& gpu, const Value& jr, const std::string& rpath, int g) {
        if (!rd_.object(&jr, rpath, "a remote buffer")) return;
        RemoteBuffer rb;
        rb.pos = {jr.line, jr.col};
        rb.rank = int(rd_.int_key(jr, "rank", rpath, 0, INT32_MAX).value_or(0));
        rb.type = rd_.buffer(rd_.need(jr, "type", rpath), rpath, "type").value_or(Buf::input);
        if (const Value* acc = rd_.array(rd_.need(jr, "access_channel_types", rpath), rpath, "access_channel_types"))
            for (const Value& a : acc->items) rb.access.push_back(rd_.channel(&a, rpath, "access_channel_types").value_or(Chan::none));
        if (rb.rank >= P_)
            rd_.broken(rpath, jr.find("rank"), fmt::format("a buffer of rank {}, which does not exist (the plan has {} GPUs)", rb.rank, P_));
        else if (rb.rank == g)
            rd_.add("blind spot", rpath, jr.find("rank"),
                    fmt::format("GPU {} lists its own buffer as remote: the executor sends it the registration itself", g));
        gpu.remote_buffers.push_back(rb);
    }

    /// threadblocks[t]; `seen` maps each id to the position that has it.
    void thread_block(Gpu& gpu, const Value& jt, const std::string& tpath, int t, std::vector<int>& seen) {
        const int T = int(seen.size());
        Tb tb;
        tb.pos = {jt.line, jt.col};
        tb.path = tpath;
        tb.id = t;
        if (!rd_.object(&jt, tpath, "a thread block")) {
            gpu.tbs.push_back(std::move(tb));
            return;
        }
        if (auto id = rd_.int_key(jt, "id", tpath, 0, INT32_MAX)) {
            tb.id = int(*id);
            if (*id >= T)
                rd_.broken(tpath, jt.find("id"),
                           fmt::format("thread block id {} with {} thread blocks: the parser indexes its channel lists (sized "
                                       "{}) by the id (execution_plan.cc:390-411) and writes out of bounds",
                                       *id, T, T));
            else if (seen[std::size_t(*id)] >= 0)
                rd_.broken(tpath, jt.find("id"),
                           fmt::format("thread block id {} again (threadblocks[{}] has it too)", *id, seen[std::size_t(*id)]));
            else
                seen[std::size_t(*id)] = t;
            if (*id != t && *id >= 0 && *id < T)
                rd_.add("blind spot", tpath, jt.find("id"),
                        fmt::format("thread block id {} at position {}: the executor runs the ops of position {} with the "
                                    "channels and remote buffers of id {} (ops are taken by position, execution_plan.cc:474; "
                                    "channels by id, :395-411)",
                                    *id, t, t, t));
        }
        tb_channels(gpu, tb, jt, tpath);
        tb_buffer_refs(gpu, tb, jt, tpath);
        std::size_t flat = 0;
        if (const Value* ops = rd_.array(rd_.need(jt, "ops", tpath), tpath, "ops"))
            for (std::size_t k = 0; k < ops->items.size(); ++k) {
                Op op;
                rd_.op(ops->items[k], fmt::format("{}.ops[{}]", tpath, k), op, false);
                flat += 1 + op.inner.size();
                tb.ops.push_back(std::move(op));
            }
        if (flat > 64)
            rd_.add("limit", tpath, &jt,
                    fmt::format("{} ops (pipelines counted with their inner ops); the executor refuses more than 64 per thread "
                                "block (MAX_OPERATION, execution_common.hpp:17; executor.cc:478-482)",
                                flat));
        gpu.tbs.push_back(std::move(tb));
    }

    void tb_channels(const Gpu& gpu, Tb& tb, const Value& jt, const std::string& tpath) {
        if (const Value* chans = rd_.array(rd_.need(jt, "channels", tpath), tpath, "channels"))
            for (std::size_t k = 0; k < chans->items.size(); ++k) {
                const Value& jc = chans->items[k];
                const std::string cpath = fmt::format("{}.channels[{}]", tpath, k);
                if (!rd_.object(&jc, cpath, "a channel list")) continue;
                auto type = rd_.channel(rd_.need(jc, "channel_type", cpath), cpath, "channel_type");
                if (const Value* b = jc.find("buff")) rd_.buffer(b, cpath, "buff");
                std::vector<int> ids = rd_.ints(rd_.need(jc, "channel_ids", cpath), cpath, "channel_ids", 0, INT32_MAX);
                if (!type) continue;
                std::vector<int>& into = *type == Chan::memory ? tb.memory : *type == Chan::port ? tb.port : tb.switch_;
                const std::size_t have = *type == Chan::memory ? gpu.memory_peers.size()
                                         : *type == Chan::port ? gpu.port_peers.size()
                                                               : gpu.switch_groups.size();
                for (std::size_t q = 0; q < ids.size(); ++q)
                    if (std::size_t(ids[q]) >= have)
                        rd_.broken(cpath, &jc.find("channel_ids")->items[q],
                                   fmt::format("{} channel {} of GPU {}, which has {} {} channel{}: the executor indexes past "
                                               "its channels",
                                               chan_name(*type), ids[q], gpu.id, have, chan_name(*type), have == 1 ? "" : "s"));
                if (*type != Chan::none) into.insert(into.end(), ids.begin(), ids.end());
            }
        for (auto [list, name] : {std::pair{&tb.memory, "memory"}, std::pair{&tb.port, "port"}, std::pair{&tb.switch_, "switch"}})
            if (list->size() > 16)
                rd_.add("limit", tpath, &jt,
                        fmt::format("{} {} channels in one thread block; the device plan holds 16 (MAX_CHANNEL, "
                                    "execution_common.hpp:15, filled without a check at executor.cc:455-465)",
                                    list->size(), name));
    }

    void tb_buffer_refs(const Gpu& gpu, Tb& tb, const Value& jt, const std::string& tpath) {
        if (const Value* refs = jt.find("remote_buffer_refs"); rd_.array(refs, tpath, "remote_buffer_refs"))
            for (std::size_t k = 0; k < refs->items.size(); ++k) {
                const Value& jr = refs->items[k];
                const std::string rpath = fmt::format("{}.remote_buffer_refs[{}]", tpath, k);
                if (!rd_.object(&jr, rpath, "a remote buffer list")) continue;
                auto type = rd_.channel(rd_.need(jr, "access_channel_type", rpath), rpath, "access_channel_type");
                std::vector<int> ids = rd_.ints(rd_.need(jr, "remote_buffer_ids", rpath), rpath, "remote_buffer_ids", 0, INT32_MAX);
                for (std::size_t q = 0; q < ids.size(); ++q)
                    if (std::size_t(ids[q]) >= gpu.remote_buffers.size())
                        rd_.broken(rpath, &jr.find("remote_buffer_ids")->items[q],
                                   fmt::format("remote buffer {} of GPU {}, which lists {}", ids[q], gpu.id, gpu.remote_buffers.size()));
                if (type == Chan::memory) tb.memory_buffers.insert(tb.memory_buffers.end(), ids.begin(), ids.end());
                if (type == Chan::port) tb.port_buffers.insert(tb.port_buffers.end(), ids.begin(), ids.end());
            }
        for (auto [list, name] : {std::pair{&tb.memory_buffers, "memory"}, std::pair{&tb.port_buffers, "port"}})
            if (list->size() > 16)
                rd_.add("limit", tpath, &jt,
                        fmt::format("{} remote buffers reached through {} channels in one thread block; the device plan holds "
                                    "16 (MAX_CHANNEL, execution_common.hpp:79-87)",
                                    list->size(), name));
    }

    std::string_view file_;
    json_tree::Value root_;
    ReadResult res_;
    std::vector<std::string> problems_;  ///< bad input: thrown together when the document is read
    Reader rd_;                          ///< after res_ and problems_: it holds references to them
    Deadline deadline_;
    int P_ = 0;
};

}  // namespace

ReadResult read_plan(std::string_view text, std::string_view file, Deadline deadline) {
    // past the deadline the command ends: the parsed text and the plan read so far are left to the operating system
    // (support/teardown.hpp)
    auto reader = std::make_shared<PlanReader>(text, file, deadline);
    try {
        return reader->read();
    } catch (const LimitReached&) {
        bury(std::move(reader));
        throw;
    }
}

}  // namespace collsched::mscclpp
