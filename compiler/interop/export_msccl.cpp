#include "compiler/interop/export_msccl.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "compiler/io/export_ranks.hpp"
#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

constexpr std::size_t flush_at = 1 << 22;

struct Loc {
    char buf = 'i';  ///< 'i' input, 'o' output, 's' scratch
    int off = -1;
};

struct Op {
    const char* type;  ///< "s", "r", "rrc", "cpy"; fused: "rcs", "rrcs"
    Loc src, dst;
    int depid = -1, deps = -1;
    int cnt = 1;  ///< chunks copied (the local copy of a chunked datum: C)
    bool hasdep = false;
    /// Where the step sits in the table's order: (step, 0 sends / 1 receives, endpoint transfer);
    /// every dependency points to an earlier key, so thread blocks in this order cannot deadlock.
    std::tuple<Step, int, std::size_t> key{0, 0, 0};
    std::size_t transfer = 0;  ///< the endpoint transfer it sends or receives
    std::vector<std::size_t> also = {};  ///< with cnt > 1 (coalesced): the transfers of chunks 1, 2, ...
};

/// A step that would wait for two others: coalescing put transfers with different waits into one
/// step, so build_plan tries again without coalescing.
struct TwoWaits : InputError {
    using InputError::InputError;
};

/// A dependency on a thread block past the executor's int8_t ids: for an alltoall that serves
/// in-place calls, build_plan tries again out of place only (no in-place waits).
struct DependencyLimit : InputError {
    using InputError::InputError;
};

struct Tb {
    int send = -1, recv = -1, chan = 0;
    std::vector<Op> ops;
};

struct Gpu {
    int i_chunks = 0, o_chunks = 0, s_chunks = 0;
    std::vector<Tb> tbs;
};

struct Plan {
    std::string name, coll;
    int nchannels = 1, nchunksperloop = 1;
    /// Whether the program is also correct in place (the executor's isInPlace, msccl_lifecycle.cc).
    bool inplace = false;
    /// Why not, when the collective could be but this table cannot (an alltoall's order).
    std::string inplace_refusal;
    /// An alltoall's in-place waits are not written (build_plan's fallback when they would
    /// break the executor's int8_t dependency ids): the program serves out-of-place calls only.
    bool out_of_place_only = false;
    std::vector<Gpu> gpus;
};

/// Where the collective puts a message in a GPU's input and output buffers. With C chunks per
/// datum (docs/exports.md), datum slot i of a buffer is the C chunks i*C .. i*C + C-1 and chunk c
/// of the datum sits at offset i*C + c.
class Layout {
public:
    Layout(const SendTable& t)
        : kind_(t.collective.kind), root_(idx(t.collective.root)), ms_(t.messages()), P_(t.topology->processors()),
          C_(static_cast<int>(t.collective.chunks)) {}

    std::optional<int> input(std::uint32_t g, MessageId m) const {
        auto slot = input_slot(g, m);
        return slot ? std::optional<int>(*slot * C_ + static_cast<int>(ms_.key(m).chunk)) : std::nullopt;
    }
    std::optional<int> output(std::uint32_t g, MessageId m) const {
        auto slot = output_slot(g, m);
        return slot ? std::optional<int>(*slot * C_ + static_cast<int>(ms_.key(m).chunk)) : std::nullopt;
    }

private:
    std::optional<int> input_slot(std::uint32_t g, MessageId m) const {
        MessageKey k = ms_.key(m);
        if (k.src != g) return std::nullopt;
        switch (kind_) {
            case CollectiveKind::alltoall: return k.kind == MessageKind::personal && k.dst != g ? std::optional<int>(k.dst) : std::nullopt;
            case CollectiveKind::allgather: return k.kind == MessageKind::broadcast ? std::optional<int>(0) : std::nullopt;
            case CollectiveKind::broadcast:
                return k.kind == MessageKind::broadcast && g == root_ ? std::optional<int>(0) : std::nullopt;
            default: return std::nullopt;
        }
    }
    std::optional<int> output_slot(std::uint32_t g, MessageId m) const {
        MessageKey k = ms_.key(m);
        switch (kind_) {
            case CollectiveKind::alltoall:
                return k.kind == MessageKind::personal && k.dst == g && k.src != g ? std::optional<int>(k.src) : std::nullopt;
            case CollectiveKind::allgather: return k.kind == MessageKind::broadcast ? std::optional<int>(k.src) : std::nullopt;
            case CollectiveKind::broadcast:  // every chunk of the root's datum (b(r,c) for C > 1)
                return k.kind == MessageKind::broadcast && k.src == root_ ? std::optional<int>(0) : std::nullopt;
            default: return std::nullopt;
        }
    }

public:
    int i_chunks(std::uint32_t g) const {
        return C_ * (kind_ == CollectiveKind::alltoall ? P_ : kind_ == CollectiveKind::allgather || g == root_ ? 1 : 0);
    }
    int o_chunks() const { return C_ * (kind_ == CollectiveKind::broadcast ? 1 : P_); }
    int chunks_per_loop() const { return o_chunks(); }
    /// The local copy that puts the GPU's own data into its output (NCCL semantics), if any: the
    /// C chunks of its datum at once (cnt = C).
    std::optional<Op> local_copy(std::uint32_t g) const {
        auto op = [&](int in, int out) {
            Op o{"cpy", {'i', in * C_}, {'o', out * C_}};
            o.cnt = C_;
            return o;
        };
        switch (kind_) {
            case CollectiveKind::alltoall: return op(int(g), int(g));
            case CollectiveKind::allgather: return op(0, int(g));
            case CollectiveKind::broadcast: return g == root_ ? std::optional<Op>(op(0, 0)) : std::nullopt;
            default: return std::nullopt;
        }
    }

private:
    CollectiveKind kind_;
    std::uint32_t root_;
    Messages ms_;
    int P_;
    int C_ = 1;
};

[[noreturn]] void refuse(const SendTable& t, std::string_view why) {
    throw InputError(fmt::format("cannot write MSCCL-IR for {} on {}: {}", t.collective.to_string(), t.topology->spec(), why));
}

/// A thread block longer than MSCCL_MAX_NUM_STEPS: paired thread blocks hold the steps of two,
/// so build_plan tries again unpaired.
struct StepLimit : InputError {
    using InputError::InputError;
};

std::string algo_name(const SendTable& t) {
    std::string s = fmt::format("collsched {} on {}", t.collective.to_string(), t.topology->spec());
    for (char& c : s)
        if (c == '"' || c == '<' || c == '>' || c == '&' || c == '\'' || c == '\n' || c == '\r') c = '_';
    if (s.size() > 200) s.resize(200);
    return s;
}

/// What a step waits for: nothing, the receive or the send of endpoint transfer `index`, or the
/// local copy of chunk `index` (step `index` of the local-copy thread block).
struct Dep {
    enum Kind : std::uint8_t { none, recv, send, local } kind = none;
    std::size_t index = 0;
};

/// Where every endpoint transfer reads and writes, how its receive treats the data ("r" a copy,
/// "rrc" receive-reduce into the local chunk), and what its send and its receive wait for.
struct Placement {
    std::vector<Loc> src, dst;
    std::vector<Loc> recv_src;  ///< the source a receive names: the sender's (informative), rrc's local operand
    std::vector<const char*> recv_type;
    std::vector<Dep> send_dep, recv_dep;
    std::vector<std::vector<Op>> local;  ///< per GPU, the local-copy thread block's steps (none: no such block)
};

/// Reductions under the buffer rule (docs/semantics.md, "Reductions"; docs/exports.md,
/// "Reductions"): GPU g works on one chunk W(g, c) per chunk c of the buffer: output chunk c
/// (allreduce; reduce at the root), output chunk c - g*C/P for g's own block (reduce_scatter),
/// scratch chunk c otherwise. A local copy first puts input chunk c into W(g, c). A send reads
/// W; a receive that combines is `rrc` (receive, reduce with W, write W), one that covers is `r`
/// into W. The operations on W(g, c) (the copy, sends, receives) are chained in table order,
/// sends of a step before the receives of that step: each waits for the one before it (one
/// `depid`), so no receive overwrites W before the sends that read the older partial.
Placement place_reduction(const SendTable& t, const std::vector<EndpointTransfer>& ev, Plan& plan) {
    const std::uint32_t P = t.topology->processors(), C = table_chunks(t);
    const Messages ms = t.messages();
    const CollectiveKind kind = t.collective.kind;
    const std::uint32_t block = kind == CollectiveKind::reduce_scatter ? C / P : C;
    auto work = [&](std::uint32_t g, std::uint32_t c) -> Loc {
        if (kind == CollectiveKind::allreduce || (kind == CollectiveKind::reduce && g == 0)) return {'o', int(c)};
        if (kind == CollectiveKind::reduce_scatter && c / block == g) return {'o', int(c - g * block)};
        return {'s', int(c)};
    };
    plan.nchunksperloop = int(C);
    plan.inplace = true;
    for (std::uint32_t g = 0; g < P; ++g) {
        Gpu& gpu = plan.gpus[g];
        gpu.i_chunks = int(C);
        gpu.o_chunks = kind == CollectiveKind::allreduce ? int(C) : kind == CollectiveKind::reduce_scatter ? int(block) : g == 0 ? int(C) : 0;
        gpu.s_chunks = kind == CollectiveKind::allreduce || (kind == CollectiveKind::reduce && g == 0) ? 0 : int(C);
    }
    Placement pl;
    const std::size_t N = ev.size();
    pl.src.resize(N);
    pl.dst.resize(N);
    pl.recv_type.assign(N, "r");
    pl.send_dep.resize(N);
    pl.recv_dep.resize(N);
    // the chain of every (GPU, chunk): (time, phase, transfer); phase 0 sends, 1 receives
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::tuple<Step, int, std::size_t>>> chain;
    std::vector<SourceSet> held;  // the buffer rule, replayed to tell rrc from r
    for (std::uint32_t g = 0; g < P; ++g)
        for (std::uint32_t c = 0; c < C; ++c) held.emplace_back(g);
    for (std::size_t i = 0; i < N; ++i) {
        auto pv = partial_of(ms, ev[i].message);
        if (!pv) refuse(t, fmt::format("{} is not a partial of the reduction", ms.name(ev[i].message)));
        const std::uint32_t a = idx(ev[i].src), b = idx(ev[i].dst), c = pv->chunk;
        pl.src[i] = work(a, c);
        pl.dst[i] = work(b, c);
        chain[{a, c}].push_back({ev[i].sent, 0, i});
        chain[{b, c}].push_back({ev[i].arrived, 1, i});
    }
    // rrc or r, in the order the buffer rule applies arrivals (step, then table order)
    std::vector<std::size_t> by_arrival(N);
    for (std::size_t i = 0; i < N; ++i) by_arrival[i] = i;
    std::stable_sort(by_arrival.begin(), by_arrival.end(), [&](std::size_t x, std::size_t y) { return ev[x].arrived < ev[y].arrived; });
    for (std::size_t i : by_arrival) {
        auto pv = partial_of(ms, ev[i].message);
        const std::uint32_t b = idx(ev[i].dst);
        switch (apply_arrival(held[std::size_t{b} * C + pv->chunk], pv->sources)) {
            case Arrival::combined: pl.recv_type[i] = "rrc"; break;
            case Arrival::replaced: pl.recv_type[i] = "r"; break;
            case Arrival::counted_twice:
                refuse(t, fmt::format("GPU {} receives {} in step {} while its buffer shares a contribution with it: the table counts "
                                      "a contribution twice (`collsched verify` shows where)",
                                      b, ms.name(ev[i].message), ev[i].arrived));
        }
    }
    pl.local.resize(P);
    for (std::uint32_t g = 0; g < P; ++g)
        for (std::uint32_t c = 0; c < C; ++c) pl.local[g].push_back(Op{"cpy", {'i', int(c)}, work(g, c)});
    pl.recv_src = pl.src;
    for (std::size_t i = 0; i < N; ++i)
        if (std::string_view(pl.recv_type[i]) == "rrc") pl.recv_src[i] = pl.dst[i];  // rrc reduces with the chunk it writes
    for (auto& [gc, events] : chain) {
        std::stable_sort(events.begin(), events.end(), [](const auto& x, const auto& y) {
            return std::tie(std::get<0>(x), std::get<1>(x)) < std::tie(std::get<0>(y), std::get<1>(y));
        });
        Dep prev{Dep::local, gc.second};
        for (const auto& [time, phase, i] : events) {
            (phase == 0 ? pl.send_dep[i] : pl.recv_dep[i]) = prev;
            prev = Dep{phase == 0 ? Dep::send : Dep::recv, i};
        }
    }
    return pl;
}

/// An alltoall in place (the executor aliases input and output, msccl_lifecycle.cc:315-320):
/// output slot s of GPU g is input slot s, so the receive that writes m(s,g) there must come
/// after the send that reads m(g,s) from it. Each such receive waits for that send (one
/// `depid`, or program order when both share a thread block). Possible when the GPU sends
/// input slot s once, in a step before the receive lands (or the same step: a thread block puts
/// sends before receives); otherwise the program serves out-of-place calls only, and
/// `--inplace` is refused with the first receive that comes too early.
void alltoall_in_place(const SendTable& t, const std::vector<EndpointTransfer>& ev, Placement& pl, Plan& plan) {
    std::map<std::pair<std::uint32_t, int>, std::vector<std::size_t>> readers;  // (gpu, input slot) -> sends
    for (std::size_t i = 0; i < ev.size(); ++i)
        if (pl.src[i].buf == 'i') readers[{idx(ev[i].src), pl.src[i].off}].push_back(i);
    const Messages ms = t.messages();
    for (std::size_t i = 0; i < ev.size(); ++i) {
        if (pl.dst[i].buf != 'o') continue;
        const std::uint32_t g = idx(ev[i].dst);
        auto it = readers.find({g, pl.dst[i].off});
        if (it == readers.end()) continue;
        const std::size_t j = it->second.back();
        if (it->second.size() > 1 || ev[j].sent > ev[i].arrived) {
            plan.inplace = false;
            plan.inplace_refusal =
                it->second.size() > 1
                    ? fmt::format("GPU {} sends input chunk {} {} times, and in place the receive of {} into that chunk (output "
                                  "chunk {}) would have to wait for all of them",
                                  g, pl.dst[i].off, it->second.size(), ms.name(ev[i].message), pl.dst[i].off)
                    : fmt::format("GPU {} receives {} into output chunk {} in step {} but sends {} from that chunk (input chunk {}, "
                                  "the same memory in place) only in step {}: in place the receive would overwrite it first",
                                  g, ms.name(ev[i].message), pl.dst[i].off, ev[i].arrived, ms.name(ev[j].message), pl.dst[i].off,
                                  ev[j].sent);
            for (Dep& d : pl.recv_dep) d = Dep{};
            return;
        }
        pl.recv_dep[i] = Dep{Dep::send, j};
    }
}

/// Collectives without reductions: a message a GPU starts with is read from its input; the
/// first arrival of a message is its canonical copy (output chunk, or scratch when the GPU only
/// relays it); a send of received data waits for the receive that brought it.
Placement place_copies(const SendTable& t, const std::vector<EndpointTransfer>& ev, Plan& plan) {
    const CollectiveKind kind = t.collective.kind;
    const std::uint32_t P = t.topology->processors();
    const Messages ms = t.messages();
    Layout layout(t);
    plan.nchunksperloop = layout.chunks_per_loop();
    // In place, an allgather's input is output chunk g and a broadcast's input is its output:
    // sends read the GPU's own chunk, which no receive overwrites (receives write other output
    // chunks or scratch), and the local copy copies a chunk onto itself. An alltoall in place
    // shares slot s between m(g,s) (input) and m(s,g) (output): below, the receive into output
    // slot s waits for the send that reads input slot s, which the table must order first.
    plan.inplace = true;
    for (std::uint32_t g = 0; g < P; ++g) {
        plan.gpus[g].i_chunks = layout.i_chunks(g);
        plan.gpus[g].o_chunks = layout.o_chunks();
    }
    Placement pl;
    pl.local.resize(P);
    for (std::uint32_t g = 0; g < P; ++g)
        if (auto copy = layout.local_copy(g)) pl.local[g].push_back(*copy);

    // Where each receive puts its chunk: the first arrival of a message the GPU does not start
    // with is its canonical copy (output chunk, or a scratch chunk when the GPU only relays it);
    // later copies of the same message go to scratch chunks of their own and are never read.
    auto key = [](Node g, MessageId m) { return (std::uint64_t{idx(g)} << 32) | idx(m); };
    std::unordered_map<std::uint64_t, std::size_t> canonical;
    for (std::size_t i = 0; i < ev.size(); ++i) {
        if (layout.input(idx(ev[i].dst), ev[i].message)) continue;
        auto [it, fresh] = canonical.emplace(key(ev[i].dst, ev[i].message), i);
        if (!fresh && ev[i].arrived < ev[it->second].arrived) it->second = i;
    }
    std::vector<Loc> dst_loc(ev.size());
    for (std::size_t i = 0; i < ev.size(); ++i) {
        std::uint32_t g = idx(ev[i].dst);
        auto c = canonical.find(key(ev[i].dst, ev[i].message));
        auto out = layout.output(g, ev[i].message);
        if (c != canonical.end() && c->second == i && out) dst_loc[i] = {'o', *out};
        else dst_loc[i] = {'s', plan.gpus[g].s_chunks++};
    }
    // Where each send reads its chunk, and the receive it waits for.
    std::vector<Loc> src_loc(ev.size());
    std::vector<std::optional<std::size_t>> depends_on(ev.size());
    for (std::size_t i = 0; i < ev.size(); ++i) {
        std::uint32_t g = idx(ev[i].src);
        if (auto in = layout.input(g, ev[i].message)) {
            src_loc[i] = {'i', *in};
            continue;
        }
        auto c = canonical.find(key(ev[i].src, ev[i].message));
        if (c == canonical.end())
            refuse(t, fmt::format("GPU {} sends {} in step {} but never holds it (the table breaks causality; `collsched "
                                  "verify` shows where)",
                                  g, ms.name(ev[i].message), ev[i].sent));
        if (ev[c->second].arrived >= ev[i].sent)
            refuse(t, fmt::format("GPU {} sends {} in step {} but receives it only in step {} (the table breaks causality)", g,
                                  ms.name(ev[i].message), ev[i].sent, ev[c->second].arrived));
        src_loc[i] = dst_loc[c->second];
        depends_on[i] = c->second;
    }

    pl.src = std::move(src_loc);
    pl.recv_src = pl.src;
    pl.dst = std::move(dst_loc);
    pl.recv_type.assign(ev.size(), "r");
    pl.send_dep.resize(ev.size());
    pl.recv_dep.resize(ev.size());
    for (std::size_t i = 0; i < ev.size(); ++i)
        if (depends_on[i]) pl.send_dep[i] = Dep{Dep::recv, *depends_on[i]};
    if (kind == CollectiveKind::alltoall && !plan.out_of_place_only) alltoall_in_place(t, ev, pl, plan);
    if (plan.out_of_place_only) {
        plan.inplace = false;
        plan.inplace_refusal = "its in-place waits would name thread blocks past the executor's int8_t dependency ids";
    }
    return pl;
}

Plan build_plan_as(const SendTable& t, const MscclOptions& opt);

/// Builds the whole plan (every check happens here, before a byte is written). Every refusal
/// names the executor's rule; docs/exports.md gives the source line of each. Paired thread
/// blocks that exceed the step limit fall back to one thread block per connection end.
Plan build_plan(const SendTable& t, const MscclOptions& opt) {
    try {
        return build_plan_as(t, opt);
    } catch (const TwoWaits&) {
        if (!opt.coalesce) throw;
        MscclOptions one = opt;  // chunks with different waits: one step per chunk
        one.coalesce = false;
        return build_plan(t, one);
    } catch (const StepLimit&) {
        if (!opt.pair) throw;
        MscclOptions unpaired = opt;
        unpaired.pair = false;
        return build_plan(t, unpaired);
    } catch (const DependencyLimit& e) {
        // An alltoall that serves in-place calls waits, per receive, for the send that reads its
        // slot; on large GPU counts those waits name thread blocks past 127. Without --inplace
        // the out-of-place program (no such waits) is still a correct answer.
        if (opt.inplace || t.collective.kind != CollectiveKind::alltoall || opt.out_of_place_only) throw InputError(e.what());
        MscclOptions out = opt;
        out.out_of_place_only = true;
        return build_plan(t, out);
    }
}

Plan build_plan_as(const SendTable& t, const MscclOptions& opt) {
    if (opt.max_steps < 1 || opt.max_steps > MscclLimits::max_dependency_step + 1)
        throw InputError(fmt::format("--max-steps {} is outside 1..{} (the executor stores step numbers in an int16_t)",
                                     opt.max_steps, MscclLimits::max_dependency_step + 1));
    if (opt.proto != "Simple" && opt.proto != "LL" && opt.proto != "LL128")
        throw InputError(fmt::format("--proto {} is not Simple, LL or LL128", opt.proto));
    if (opt.channels < 1 || opt.channels > MscclLimits::max_channels)
        throw InputError(fmt::format("--channels {} is outside 1..{} (MAXCHANNELS)", opt.channels, MscclLimits::max_channels));
    const CollectiveKind kind = t.collective.kind;
    const bool reduction = uses_partials(t);
    if (reduction && kind != CollectiveKind::allreduce && kind != CollectiveKind::reduce_scatter && kind != CollectiveKind::reduce)
        refuse(t, "MSCCL-IR export covers allreduce, reduce_scatter and reduce among the reductions (MSCCL has no scan); use --format "
                  "ranks for this one");
    if (!reduction && kind != CollectiveKind::alltoall && kind != CollectiveKind::allgather && kind != CollectiveKind::broadcast)
        refuse(t, "MSCCL-IR export covers alltoall, allgather, broadcast and the reductions allreduce, reduce_scatter and reduce "
                  "with partials, the collectives whose buffer layout the MSCCL executor fixes; use --format ranks for this one");
    if (kind == CollectiveKind::reduce && reduction && idx(t.collective.root) != 0)
        refuse(t, fmt::format("the root is processor {}, but the executor picks an algorithm by collective, rank count and size "
                              "only, never by root (msccl_lifecycle.cc), so the file would also serve ncclReduce with root 0 "
                              "[reduce root]; relabel the processors so that the root is 0",
                              idx(t.collective.root)));
    if (kind == CollectiveKind::broadcast && idx(t.collective.root) != 0)
        refuse(t, fmt::format("the root is processor {}, but the executor picks an algorithm by collective, rank count and size "
                              "only, never by root (msccl_lifecycle.cc), so the file would also serve ncclBroadcast with "
                              "root 0 and deliver wrong data [broadcast root]; relabel the processors so that the root is 0",
                              idx(t.collective.root)));
    if (!t.requirements.empty()) refuse(t, "extra requirements have no place in an MSCCL buffer layout");
    if (t.has_composites() && !reduction)
        refuse(t, "MSCCL-IR cannot express combined values (a(i..j)) or bundles (b(0)+b(4)): a threadblock step copies one chunk; "
                  "use --format ranks, which names them");
    const std::uint32_t P = t.topology->processors();
    if (P < 2) refuse(t, "MSCCL needs at least 2 GPUs");
    if (P > MscclLimits::max_gpus)
        refuse(t, fmt::format("{} GPUs; the executor's XML reader takes at most {} children of <algo> [MAX_SUBS]", P,
                              MscclLimits::max_gpus));
    Messages ms = t.messages();
    Layout layout(t);
    EndpointView view = endpoint_view(t);
    const auto& ev = view.transfers;
    for (const EndpointTransfer& e : ev)
        if (e.src == e.dst)
            refuse(t, fmt::format("processor {} sends {} in step {} and it comes back to itself through routers; in MSCCL a "
                                  "peer is never the GPU itself",
                                  idx(e.src), ms.name(e.message), e.sent));

    Plan plan;
    plan.name = algo_name(t);
    plan.gpus.resize(P);
    plan.out_of_place_only = opt.out_of_place_only;
    Placement pl = reduction ? place_reduction(t, ev, plan) : place_copies(t, ev, plan);
    if (opt.inplace && !plan.inplace) refuse(t, plan.inplace_refusal + " (drop --inplace for an out-of-place program)");
    plan.coll = std::string(t.collective.row().msccl);

    // One connection per directed pair of GPUs. A channel holds at most 32 sending and 32
    // receiving thread blocks per GPU. Two assignments, the one with fewer channels wins (the
    // first at a tie): (a) greedy, the lowest channel where neither end has 32 thread blocks of
    // that direction yet (one channel for sparse patterns such as rings); (b) by offset, pair
    // (p, q) on window (q - p - 1) mod P / 32 of the offsets in use, which never exceeds 32 per
    // GPU and direction because a GPU has one peer per offset, and needs ceil((P-1)/32)
    // channels for an all-pairs pattern, where (a) fragments. With k instances (--channels k),
    // instance j of a connection uses channel c + j * B, B being the channels of one instance.
    const int K = opt.channels;
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> chan_of;
    for (const EndpointTransfer& e : ev) chan_of.emplace(std::pair(idx(e.src), idx(e.dst)), 0);
    auto window = [&](std::pair<std::uint32_t, std::uint32_t> pq) {
        return int(((pq.second + P - pq.first) % P - 1) / MscclLimits::max_tbs_per_channel);
    };
    std::vector<int> window_channel((P + MscclLimits::max_tbs_per_channel - 1) / MscclLimits::max_tbs_per_channel, -1);
    int by_offset = 0;
    for (auto& [pair, chan] : chan_of) window_channel[window(pair)] = 0;
    for (int& w : window_channel)
        if (w == 0) w = by_offset++;
    std::vector<std::vector<int>> sends_on(P), recvs_on(P);
    int greedy = 0;
    for (auto& [pair, chan] : chan_of) {
        auto& so = sends_on[pair.first];
        auto& ro = recvs_on[pair.second];
        int c = 0;
        while ((c < int(so.size()) && so[c] >= MscclLimits::max_tbs_per_channel) ||
               (c < int(ro.size()) && ro[c] >= MscclLimits::max_tbs_per_channel))
            ++c;
        so.resize(std::max<std::size_t>(so.size(), c + 1));
        ro.resize(std::max<std::size_t>(ro.size(), c + 1));
        ++so[c];
        ++ro[c];
        chan = c;
        greedy = std::max(greedy, c + 1);
    }
    if (by_offset < greedy)
        for (auto& [pair, chan] : chan_of) chan = window_channel[window(pair)];
    plan.nchannels = std::max(1, std::min(greedy, by_offset));
    if (plan.nchannels * K > MscclLimits::max_channels)
        refuse(t, fmt::format("the connections need {} channels of at most {} sending and {} receiving thread blocks per GPU "
                              "[MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL], and the executor has {} [MAXCHANNELS]",
                              plan.nchannels * K, MscclLimits::max_tbs_per_channel, MscclLimits::max_tbs_per_channel,
                              MscclLimits::max_channels));
    const int B = plan.nchannels;
    plan.nchannels = B * K;

    // Local copies: in place (--inplace) a copy of a chunk onto itself is no copy at all (the
    // executor's in-place call aliases input and output, msccl_lifecycle.cc:315-327); steps that
    // waited for it wait for nothing.
    auto aliased = [&](std::uint32_t g, Loc l) -> Loc {
        if (!opt.inplace || l.buf == 's') return l;
        switch (kind) {
            case CollectiveKind::allgather: return l.buf == 'i' ? Loc{'o', int(g) * int(t.collective.chunks) + l.off} : l;
            case CollectiveKind::reduce_scatter:
                return l.buf == 'o' ? Loc{'i', int(g) * (plan.nchunksperloop / int(P)) + l.off} : l;
            default: return l.buf == 'o' ? Loc{'i', l.off} : l;
        }
    };
    std::vector<std::vector<int>> local_pos(P);  // copy index -> step in the local thread block, -1 if dropped
    for (std::uint32_t g = 0; g < P; ++g) {
        std::vector<Op> kept;
        for (const Op& op : pl.local[g]) {
            Loc a = aliased(g, op.src), b = aliased(g, op.dst);
            const bool self = a.buf == b.buf && a.off == b.off;
            local_pos[g].push_back(self ? -1 : int(kept.size()));
            if (!self) kept.push_back(op);
        }
        if (!kept.empty()) plan.gpus[g].tbs.push_back(Tb{-1, -1, 0, std::move(kept)});
    }
    // (gpu, peer, channel) -> tb index; std::map iterates in msccl-tools' order
    // (a connection with fewer than K transfers gets one instance per transfer)
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> count;
    for (const EndpointTransfer& e : ev) ++count[{idx(e.src), idx(e.dst)}];
    std::map<std::tuple<std::uint32_t, std::uint32_t, int>, int> recv_tb, send_tb;
    for (auto& [pair, chan] : chan_of)
        for (int j = 0; j < K && std::uint64_t(j) < count[pair]; ++j) {
            recv_tb[{pair.second, pair.first, chan + j * B}] = 0;
            send_tb[{pair.first, pair.second, chan + j * B}] = 0;
        }
    // Pairing (MscclOptions::pair, as msccl-tools does): on each channel a GPU's sending thread
    // block shares one thread block with a receiving one, the receiver from the same peer first,
    // then the others in order; a thread block has one send and one receive peer.
    std::map<std::tuple<std::uint32_t, std::uint32_t, int>, std::tuple<std::uint32_t, std::uint32_t, int>> partner;  // send -> recv
    if (opt.pair) {
        std::map<std::pair<std::uint32_t, int>, std::vector<std::uint32_t>> free_recv;  // (gpu, chan) -> receive peers
        for (auto& [gpc, tb] : recv_tb) free_recv[{std::get<0>(gpc), std::get<2>(gpc)}].push_back(std::get<1>(gpc));
        std::vector<std::tuple<std::uint32_t, std::uint32_t, int>> unpaired;
        for (auto& [gpc, tb] : send_tb) {
            auto& peers = free_recv[{std::get<0>(gpc), std::get<2>(gpc)}];
            auto same = std::find(peers.begin(), peers.end(), std::get<1>(gpc));
            if (same == peers.end()) {
                unpaired.push_back(gpc);
                continue;
            }
            partner[gpc] = {std::get<0>(gpc), *same, std::get<2>(gpc)};
            peers.erase(same);
        }
        for (const auto& gpc : unpaired) {
            auto& peers = free_recv[{std::get<0>(gpc), std::get<2>(gpc)}];
            if (peers.empty()) continue;
            partner[gpc] = {std::get<0>(gpc), peers.front(), std::get<2>(gpc)};
            peers.erase(peers.begin());
        }
    }
    // Thread blocks per GPU, sorted as msccl-tools sorts them, by (send, recv, chan): the local
    // copy (-1, -1), then receivers (-1, q), then senders (p, ...).
    {
        using Gpc = std::tuple<std::uint32_t, std::uint32_t, int>;
        std::map<std::tuple<std::uint32_t, int, int, int>, std::pair<bool, Gpc>> order;  // (gpu, send, recv, chan)
        std::set<Gpc> paired_recv;
        for (auto& [snd, rcv] : partner) paired_recv.insert(rcv);
        for (auto& [gpc, tb] : recv_tb)
            if (!paired_recv.count(gpc)) order[{std::get<0>(gpc), -1, int(std::get<1>(gpc)), std::get<2>(gpc)}] = {false, gpc};
        for (auto& [gpc, tb] : send_tb) {
            auto p = partner.find(gpc);
            const int recv = p == partner.end() ? -1 : int(std::get<1>(p->second));
            order[{std::get<0>(gpc), int(std::get<1>(gpc)), recv, std::get<2>(gpc)}] = {true, gpc};
        }
        for (auto& [k, member] : order) {
            Gpu& gpu = plan.gpus[std::get<0>(k)];
            const int id = int(gpu.tbs.size());
            gpu.tbs.push_back(Tb{std::get<1>(k), std::get<2>(k), std::get<3>(k), {}});
            const auto& [sending, gpc] = member;
            if (!sending) {
                recv_tb[gpc] = id;
                continue;
            }
            send_tb[gpc] = id;
            if (auto p = partner.find(gpc); p != partner.end()) recv_tb[p->second] = id;
        }
    }
    // ev is sorted by (sent, src, dst, message, arrived): filtered by pair, both ends see the
    // same order, which is the order the executor matches sends and receives in; the k-th
    // transfer of a pair goes to instance k mod K at both ends. A thread block runs its steps in
    // the table's order (step, sends before receives, transfer), which keeps every connection's
    // order and puts every step after the ones it waits for.
    std::vector<std::pair<int, int>> recv_pos(ev.size());  // (tb, step) of each receive
    std::vector<std::pair<int, int>> send_pos(ev.size());
    // Coalescing wants the chunks a GPU sends one peer in one step in the order of their offsets;
    // both ends of a connection sort by the same rank, so its order stays the same at both.
    std::vector<std::size_t> rank(ev.size());
    {
        std::vector<std::size_t> by(ev.size());
        for (std::size_t i = 0; i < ev.size(); ++i) by[i] = i;
        if (opt.coalesce)
            std::stable_sort(by.begin(), by.end(), [&](std::size_t x, std::size_t y) {
                return std::tuple(ev[x].sent, idx(ev[x].src), idx(ev[x].dst), pl.src[x].buf, pl.src[x].off) <
                       std::tuple(ev[y].sent, idx(ev[y].src), idx(ev[y].dst), pl.src[y].buf, pl.src[y].off);
            });
        for (std::size_t r = 0; r < by.size(); ++r) rank[by[r]] = r;
    }
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> nth;
    for (std::size_t i = 0; i < ev.size(); ++i) {
        std::uint32_t a = idx(ev[i].src), b = idx(ev[i].dst);
        const int chan = chan_of[{a, b}] + int(nth[{a, b}]++ % K) * B;
        Op r{pl.recv_type[i], pl.recv_src[i], pl.dst[i]};
        r.key = {ev[i].arrived, 1, rank[i]};
        r.transfer = i;
        plan.gpus[b].tbs[recv_tb[{b, a, chan}]].ops.push_back(r);
        Op s{"s", pl.src[i], pl.dst[i]};
        s.key = {ev[i].sent, 0, rank[i]};
        s.transfer = i;
        plan.gpus[a].tbs[send_tb[{a, b, chan}]].ops.push_back(s);
    }
    for (std::uint32_t g = 0; g < P; ++g)
        for (Tb& tb : plan.gpus[g].tbs)
            if (tb.send >= 0 || tb.recv >= 0)  // both ends of a connection in one order
                std::stable_sort(tb.ops.begin(), tb.ops.end(), [](const Op& x, const Op& y) { return x.key < y.key; });
    // Coalescing (MscclOptions::coalesce, as msccl-tools' cnt > 1): consecutive sends of one
    // thread block in one table step whose chunks are contiguous, and whose receives are
    // consecutive in their thread block, arrive in one step and land contiguously, are one send
    // and one receive of cnt chunks (both ends alike, so the connection's matching is kept).
    if (opt.coalesce) {
        std::vector<std::tuple<std::uint32_t, int, int>> rloc(ev.size());  // receive -> (gpu, tb, step)
        for (std::uint32_t g = 0; g < P; ++g)
            for (std::size_t k = 0; k < plan.gpus[g].tbs.size(); ++k) {
                const auto& ops = plan.gpus[g].tbs[k].ops;
                for (std::size_t st = 0; st < ops.size(); ++st)
                    if (std::get<1>(ops[st].key) == 1) rloc[ops[st].transfer] = {g, int(k), int(st)};
            }
        std::vector<std::vector<std::vector<bool>>> gone(P);
        for (std::uint32_t g = 0; g < P; ++g)
            for (const Tb& tb : plan.gpus[g].tbs) gone[g].emplace_back(tb.ops.size(), false);
        for (std::uint32_t a = 0; a < P; ++a)
            for (std::size_t k = 0; k < plan.gpus[a].tbs.size(); ++k) {
                auto& ops = plan.gpus[a].tbs[k].ops;
                for (std::size_t st = 0; st < ops.size(); ++st) {
                    if (std::get<1>(ops[st].key) != 0 || gone[a][k][st] || std::string_view(ops[st].type) != "s") continue;
                    const Op& first = ops[st];
                    const auto [b, rk, rs] = rloc[first.transfer];
                    auto& rops = plan.gpus[b].tbs[std::size_t(rk)].ops;
                    const Op& rfirst = rops[std::size_t(rs)];
                    std::size_t len = 1;
                    while (st + len < ops.size() && len + 1 < std::size_t(MscclLimits::max_count)) {
                        const Op& s2 = ops[st + len];
                        if (std::get<1>(s2.key) != 0 || std::get<0>(s2.key) != std::get<0>(first.key) || s2.src.buf != first.src.buf ||
                            s2.src.off != first.src.off + int(len) || std::string_view(s2.type) != "s")
                            break;
                        const auto [b2, rk2, rs2] = rloc[s2.transfer];
                        if (b2 != b || rk2 != rk || rs2 != rs + int(len)) break;
                        const Op& r2 = rops[std::size_t(rs2)];
                        if (std::string_view(r2.type) != rfirst.type || std::get<0>(r2.key) != std::get<0>(rfirst.key) ||
                            r2.dst.buf != rfirst.dst.buf || r2.dst.off != rfirst.dst.off + int(len) || r2.src.buf != rfirst.src.buf ||
                            r2.src.off != rfirst.src.off + int(len))
                            break;
                        ++len;
                    }
                    if (len == 1) continue;
                    for (std::size_t j = 1; j < len; ++j) {
                        ops[st].also.push_back(ops[st + j].transfer);
                        rops[std::size_t(rs) + j].type = rfirst.type;
                        rops[std::size_t(rs)].also.push_back(rops[std::size_t(rs) + j].transfer);
                        gone[a][k][st + j] = true;
                        gone[b][std::size_t(rk)][std::size_t(rs) + j] = true;
                    }
                    ops[st].cnt = int(len);
                    rops[std::size_t(rs)].cnt = int(len);
                }
            }
        for (std::uint32_t g = 0; g < P; ++g)
            for (std::size_t k = 0; k < plan.gpus[g].tbs.size(); ++k) {
                auto& ops = plan.gpus[g].tbs[k].ops;
                std::vector<Op> kept;
                for (std::size_t st = 0; st < ops.size(); ++st)
                    if (!gone[g][k][st]) kept.push_back(std::move(ops[st]));
                ops = std::move(kept);
            }
    }
    // Fusion (MscclOptions::fuse, the executor's rcs and rrcs): a receive followed in its thread
    // block by the send of exactly what it wrote, which waits for nothing else, is one step.
    for (std::uint32_t g = 0; g < P && opt.fuse; ++g)
        for (Tb& tb : plan.gpus[g].tbs) {
            std::vector<Op> fused;
            for (std::size_t k = 0; k < tb.ops.size(); ++k) {
                const Op& op = tb.ops[k];
                if (!fused.empty() && std::string_view(op.type) == "s" && std::get<1>(fused.back().key) == 1) {
                    Op& r = fused.back();
                    // chunk j of the send is chunk j of the receive, and waits for exactly that
                    bool from_r = op.cnt == r.cnt && op.also.size() == r.also.size();
                    for (std::size_t j = 0; from_r && j <= op.also.size(); ++j) {
                        const Dep d = pl.send_dep[j == 0 ? op.transfer : op.also[j - 1]];
                        from_r = d.kind == Dep::recv && d.index == (j == 0 ? r.transfer : r.also[j - 1]);
                    }
                    const std::string_view rt = r.type;
                    if (from_r && op.src.buf == r.dst.buf && op.src.off == r.dst.off && (rt == "r" || rt == "rrc")) {
                        r.type = rt == "r" ? "rcs" : "rrcs";
                        for (std::size_t j = 0; j <= op.also.size(); ++j)  // resolved below: the step of that receive
                            send_pos[j == 0 ? op.transfer : op.also[j - 1]] = {-2, int(j == 0 ? r.transfer : r.also[j - 1])};
                        continue;
                    }
                }
                fused.push_back(op);
            }
            tb.ops = std::move(fused);
        }
    for (std::uint32_t g = 0; g < P; ++g)
        for (std::size_t k = 0; k < plan.gpus[g].tbs.size(); ++k) {
            const Tb& tb = plan.gpus[g].tbs[k];
            if (tb.send < 0 && tb.recv < 0) continue;
            for (std::size_t st = 0; st < tb.ops.size(); ++st) {
                const Op& op = tb.ops[st];
                const std::string_view ty = op.type;
                for (std::size_t j = 0; j <= op.also.size(); ++j)
                    (ty == "s" ? send_pos : recv_pos)[j == 0 ? op.transfer : op.also[j - 1]] = {int(k), int(st)};
            }
        }
    for (auto& sp : send_pos)
        if (sp.first == -2) sp = recv_pos[std::size_t(sp.second)];
    // Dependencies: a step waits for the step it depends on unless that one comes earlier in its
    // own thread block (steps of a thread block run in order) or is the step itself (fused).
    auto resolve = [&](std::uint32_t g, std::pair<int, int> me, Dep d) {
        if (d.kind == Dep::none) return;
        std::pair<int, int> target;
        if (d.kind == Dep::local) {
            const int at = local_pos[g][d.index];
            if (at < 0) return;  // a copy onto itself, dropped in place
            target = {0, at};
        } else {
            target = d.kind == Dep::recv ? recv_pos[d.index] : send_pos[d.index];
        }
        if (target.first == me.first) {
            if (target.second <= me.second) return;
            const std::string why = fmt::format("cannot write MSCCL-IR for {} on {}: GPU {}, thread block {}: step {} must wait for "
                                                "step {} of the same thread block; the table orders the operations on one chunk "
                                                "against the order of its connection",
                                                t.collective.to_string(), t.topology->spec(), g, me.first, me.second,
                                                target.second);
            if (opt.coalesce) throw TwoWaits(why);  // the offset order may be the cause: again in table order
            throw InputError(why);
        }
        if (target.first > MscclLimits::max_dependency_tb)
            throw DependencyLimit(fmt::format("cannot write MSCCL-IR for {} on {}: GPU {} would depend on thread block {}; the "
                                              "executor stores dependency ids in an int8_t (at most {}) [dependentBid]",
                                              t.collective.to_string(), t.topology->spec(), g, target.first,
                                              MscclLimits::max_dependency_tb));
        Op& op = plan.gpus[g].tbs[me.first].ops[me.second];
        // two waits on one thread block: the later step implies the earlier (a thread block runs in
        // order and publishes a count, msccl_kernel.cu:224-236)
        if (op.depid == target.first) target.second = std::max(target.second, op.deps);
        if (op.depid >= 0 && (op.depid != target.first || op.deps > target.second))
            throw TwoWaits(fmt::format("cannot write MSCCL-IR for {} on {}: GPU {}, thread block {}: step {} would wait for two "
                                       "steps; collsched writes one dependency per step",
                                       t.collective.to_string(), t.topology->spec(), g, me.first, me.second));
        op.depid = target.first;
        op.deps = target.second;
        plan.gpus[g].tbs[target.first].ops[target.second].hasdep = true;
    };
    for (std::size_t i = 0; i < ev.size(); ++i) {
        resolve(idx(ev[i].src), send_pos[i], pl.send_dep[i]);
        resolve(idx(ev[i].dst), recv_pos[i], pl.recv_dep[i]);
    }
    // The executor's load rules, per rank: thread blocks, steps per thread block, elements.
    std::size_t longest = 0;
    for (std::uint32_t g = 0; g < P; ++g)
        for (const Tb& tb : plan.gpus[g].tbs) longest = std::max(longest, tb.ops.size());
    for (std::uint32_t g = 0; g < P; ++g) {
        const Gpu& gpu = plan.gpus[g];
        if (gpu.tbs.size() > std::size_t(MscclLimits::max_tbs))
            refuse(t, fmt::format("GPU {} needs {} thread blocks; the executor allows at most {} per GPU "
                                  "[MSCCL_MAX_NUM_THREAD_BLOCKS]",
                                  g, gpu.tbs.size(), MscclLimits::max_tbs));
        std::size_t nodes = 1 + P + gpu.tbs.size();
        for (std::size_t k = 0; k < gpu.tbs.size(); ++k) {
            const Tb& tb = gpu.tbs[k];
            nodes += tb.ops.size();
            if (tb.ops.size() > std::size_t(opt.max_steps)) {
                const std::size_t fit = (longest * K + opt.max_steps - 1) / opt.max_steps;
                std::string hint = fit * B <= std::size_t(MscclLimits::max_channels)
                                       ? fmt::format("; --channels {} spreads every connection over {} thread blocks", fit, fit)
                                       : "";
                throw StepLimit(fmt::format(
                    "cannot write MSCCL-IR for {} on {}: GPU {}, thread block {} ({} {}) needs {} steps; the executor allows at "
                    "most {} per thread block (s < {}) [MSCCL_MAX_NUM_STEPS]{}; --max-steps N if the executor is built with "
                    "MSCCL_MAX_NUM_STEPS=N",
                    t.collective.to_string(), t.topology->spec(), g, k, tb.send >= 0 ? "sending to" : "receiving from",
                    tb.send >= 0 ? tb.send : tb.recv, tb.ops.size(), opt.max_steps, opt.max_steps, hint));
            }
        }
        if (nodes >= std::size_t(MscclLimits::max_nodes))
            refuse(t, fmt::format("GPU {} loads {} XML elements (1 <algo>, {} <gpu>, {} <tb>, {} <step>); the executor's reader "
                                  "holds at most {} [MAX_NODES = {}]",
                                  g, nodes, P, gpu.tbs.size(), nodes - 1 - P - gpu.tbs.size(), MscclLimits::max_nodes - 1,
                                  MscclLimits::max_nodes));
    }
    return plan;
}

/// `--instances I`, as msccl-tools' replicate (msccl/language/rank_dag.py:318-378, with its
/// default interleaved policy): the executor knows no instances, only more thread blocks,
/// channels and chunks per loop. Every thread block k becomes I thread blocks k*I + i on channel
/// chan + nchannels*i; every chunk of the input and output becomes I chunks (off*I + i*cnt for an
/// op of cnt chunks, so a datum's slices stay inside its slot and in-place aliasing is kept),
/// scratch chunks are batched (off + s_chunks*i); a dependency points to the same instance.
/// The plan is built without coalescing first, so that every op of a slot moves the same slices.
void replicate(const SendTable& t, Plan& plan, int I) {
    const int C = plan.nchannels;
    if (C * I > MscclLimits::max_channels)
        refuse(t, fmt::format("{} instances of {} channels need {} channels; the executor has {} [MAXCHANNELS]", I, C, C * I,
                              MscclLimits::max_channels));
    for (std::size_t g = 0; g < plan.gpus.size(); ++g) {
        Gpu& gpu = plan.gpus[g];
        const int S = gpu.s_chunks;
        auto at = [&](Loc l, int cnt, int i) -> Loc {
            if (l.off < 0) return l;
            return l.buf == 's' ? Loc{l.buf, l.off + S * i} : Loc{l.buf, l.off * I + i * cnt};
        };
        std::vector<Tb> tbs;
        for (const Tb& tb : gpu.tbs)
            for (int i = 0; i < I; ++i) {
                Tb copy{tb.send, tb.recv, tb.chan + C * i, tb.ops};
                for (Op& op : copy.ops) {
                    op.src = at(op.src, op.cnt, i);
                    op.dst = at(op.dst, op.cnt, i);
                    if (op.depid >= 0) op.depid = op.depid * I + i;
                }
                tbs.push_back(std::move(copy));
            }
        gpu.tbs = std::move(tbs);
        gpu.i_chunks *= I;
        gpu.o_chunks *= I;
        gpu.s_chunks *= I;
        if (gpu.tbs.size() > std::size_t(MscclLimits::max_tbs))
            refuse(t, fmt::format("GPU {} needs {} thread blocks with {} instances; the executor allows at most {} per GPU "
                                  "[MSCCL_MAX_NUM_THREAD_BLOCKS]",
                                  g, gpu.tbs.size(), I, MscclLimits::max_tbs));
        std::size_t nodes = 1 + plan.gpus.size() + gpu.tbs.size();
        for (const Tb& tb : gpu.tbs) {
            nodes += tb.ops.size();
            for (const Op& op : tb.ops)
                if (op.depid > MscclLimits::max_dependency_tb)
                    refuse(t, fmt::format("GPU {} would depend on thread block {} with {} instances; the executor stores "
                                          "dependency ids in an int8_t (at most {}) [dependentBid]",
                                          g, op.depid, I, MscclLimits::max_dependency_tb));
        }
        if (nodes >= std::size_t(MscclLimits::max_nodes))
            refuse(t, fmt::format("GPU {} loads {} XML elements with {} instances; the executor's reader holds at most {} "
                                  "[MAX_NODES = {}]",
                                  g, nodes, I, MscclLimits::max_nodes - 1, MscclLimits::max_nodes));
    }
    plan.nchannels = C * I;
    plan.nchunksperloop *= I;
}

Plan build_instances(const SendTable& t, const MscclOptions& opt) {
    if (opt.instances < 1 || opt.instances > MscclLimits::max_channels)
        throw InputError(fmt::format("--instances {} is outside 1..{} (an instance needs a channel of its own; MAXCHANNELS)",
                                     opt.instances, MscclLimits::max_channels));
    if (opt.instances == 1) return build_plan(t, opt);
    MscclOptions base = opt;
    base.coalesce = false;
    Plan plan = build_plan(t, base);
    replicate(t, plan, opt.instances);
    return plan;
}

}  // namespace

void write_table_msccl(const SendTable& t, const MscclOptions& opt, fmt::memory_buffer& out, const Flush& flush) {
    Plan plan = build_instances(t, opt);
    auto it = std::back_inserter(out);
    // The executor's reader wants one space between attributes, double quotes, no XML
    // declaration and `/>` right after the last attribute value.
    fmt::format_to(it,
                   "<algo name=\"{}\" proto=\"{}\" nchannels=\"{}\" nchunksperloop=\"{}\" ngpus=\"{}\" coll=\"{}\" "
                   "inplace=\"{}\" outofplace=\"{}\" minBytes=\"0\" maxBytes=\"0\">\n",
                   plan.name, opt.proto, plan.nchannels, plan.nchunksperloop, plan.gpus.size(), plan.coll, plan.inplace ? 1 : 0,
                   opt.inplace ? 0 : 1);
    for (std::size_t g = 0; g < plan.gpus.size(); ++g) {
        const Gpu& gpu = plan.gpus[g];
        fmt::format_to(it, "  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"{}\">\n", g, gpu.i_chunks, gpu.o_chunks,
                       gpu.s_chunks);
        for (std::size_t k = 0; k < gpu.tbs.size(); ++k) {
            const Tb& tb = gpu.tbs[k];
            fmt::format_to(it, "    <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"{}\">\n", k, tb.send, tb.recv, tb.chan);
            for (std::size_t s = 0; s < tb.ops.size(); ++s) {
                const Op& op = tb.ops[s];
                fmt::format_to(it,
                               "      <step s=\"{}\" type=\"{}\" srcbuf=\"{}\" srcoff=\"{}\" dstbuf=\"{}\" dstoff=\"{}\" cnt=\"{}\" "
                               "depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
                               s, op.type, op.src.buf, op.src.off, op.dst.buf, op.dst.off, op.cnt, op.depid, op.deps, op.hasdep ? 1 : 0);
            }
            fmt::format_to(it, "    </tb>\n");
            if (out.size() > flush_at) flush(out);
        }
        fmt::format_to(it, "  </gpu>\n");
    }
    fmt::format_to(it, "</algo>\n");
    flush(out);
}

std::string table_to_msccl(const SendTable& t, const MscclOptions& opt) {
    std::string s;
    fmt::memory_buffer buf;
    write_table_msccl(t, opt, buf, [&](fmt::memory_buffer& b) {
        s.append(b.data(), b.size());
        b.clear();
    });
    return s;
}

}  // namespace collsched
