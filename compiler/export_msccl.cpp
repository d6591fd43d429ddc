#include "compiler/export_msccl.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "compiler/export_ranks.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched {

namespace {

constexpr std::size_t flush_at = 1 << 22;

struct Loc {
    char buf = 'i';  ///< 'i' input, 'o' output, 's' scratch
    int off = -1;
};

struct Op {
    const char* type;  ///< "s", "r", "cpy"
    Loc src, dst;
    int depid = -1, deps = -1;
    bool hasdep = false;
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
    std::vector<Gpu> gpus;
};

/// Where the collective puts a message in a GPU's input and output buffers.
class Layout {
public:
    Layout(const SendTable& t) : kind_(t.collective.kind), root_(idx(t.collective.root)), ms_(t.messages()), P_(t.topology->processors()) {}

    std::optional<int> input(std::uint32_t g, MessageId m) const {
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
    std::optional<int> output(std::uint32_t g, MessageId m) const {
        MessageKey k = ms_.key(m);
        switch (kind_) {
            case CollectiveKind::alltoall:
                return k.kind == MessageKind::personal && k.dst == g && k.src != g ? std::optional<int>(k.src) : std::nullopt;
            case CollectiveKind::allgather: return k.kind == MessageKind::broadcast ? std::optional<int>(k.src) : std::nullopt;
            case CollectiveKind::broadcast: return m == ms_.broadcast(root_) ? std::optional<int>(0) : std::nullopt;
            default: return std::nullopt;
        }
    }
    int i_chunks(std::uint32_t g) const {
        return kind_ == CollectiveKind::alltoall ? P_ : kind_ == CollectiveKind::allgather || g == root_ ? 1 : 0;
    }
    int o_chunks() const { return kind_ == CollectiveKind::broadcast ? 1 : P_; }
    int chunks_per_loop() const { return o_chunks(); }
    /// The local copy that puts the GPU's own data into its output (NCCL semantics), if any.
    std::optional<Op> local_copy(std::uint32_t g) const {
        switch (kind_) {
            case CollectiveKind::alltoall: return Op{"cpy", {'i', int(g)}, {'o', int(g)}};
            case CollectiveKind::allgather: return Op{"cpy", {'i', 0}, {'o', int(g)}};
            case CollectiveKind::broadcast: return g == root_ ? std::optional<Op>(Op{"cpy", {'i', 0}, {'o', 0}}) : std::nullopt;
            default: return std::nullopt;
        }
    }

private:
    CollectiveKind kind_;
    std::uint32_t root_;
    Messages ms_;
    int P_;
};

[[noreturn]] void refuse(const SendTable& t, std::string_view why) {
    throw InputError(fmt::format("cannot write MSCCL-IR for {} on {}: {}", t.collective.to_string(), t.topology->spec(), why));
}

std::string algo_name(const SendTable& t) {
    std::string s = fmt::format("collsched {} on {}", t.collective.to_string(), t.topology->spec());
    for (char& c : s)
        if (c == '"' || c == '<' || c == '>' || c == '&' || c == '\'' || c == '\n' || c == '\r') c = '_';
    if (s.size() > 200) s.resize(200);
    return s;
}

/// Builds the whole plan (every check happens here, before a byte is written).
Plan build_plan(const SendTable& t) {
    const CollectiveKind kind = t.collective.kind;
    if (kind != CollectiveKind::alltoall && kind != CollectiveKind::allgather && kind != CollectiveKind::broadcast)
        refuse(t, "MSCCL-IR export covers alltoall, allgather and broadcast, the collectives whose buffer layout the MSCCL "
                  "executor fixes; use --format ranks for this one");
    if (!t.requirements.empty()) refuse(t, "extra requirements have no place in an MSCCL buffer layout");
    if (t.has_composites())
        refuse(t, "MSCCL-IR cannot express combined values (a(i..j)) or bundles (b(0)+b(4)): a threadblock step copies one chunk; "
                  "use --format ranks, which names them");
    const std::uint32_t P = t.topology->processors();
    if (P < 2) refuse(t, "MSCCL needs at least 2 GPUs");
    if (P > MscclLimits::max_gpus) refuse(t, fmt::format("{} GPUs; the executor's XML reader takes at most {}", P, MscclLimits::max_gpus));
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
    plan.coll = kind == CollectiveKind::alltoall ? "alltoall" : kind == CollectiveKind::allgather ? "allgather" : "broadcast";
    plan.nchunksperloop = layout.chunks_per_loop();
    plan.gpus.resize(P);

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

    // One connection per directed pair of GPUs, on the lowest channel where neither end has its
    // 32 thread blocks of that direction yet.
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> chan_of;
    for (const EndpointTransfer& e : ev) chan_of.emplace(std::pair(idx(e.src), idx(e.dst)), 0);
    std::vector<std::vector<int>> sends_on(P), recvs_on(P);
    for (auto& [pair, chan] : chan_of) {
        auto& so = sends_on[pair.first];
        auto& ro = recvs_on[pair.second];
        int c = 0;
        while ((c < int(so.size()) && so[c] >= MscclLimits::max_tbs_per_channel) ||
               (c < int(ro.size()) && ro[c] >= MscclLimits::max_tbs_per_channel))
            ++c;
        if (c >= MscclLimits::max_channels)
            refuse(t, fmt::format("GPU {} would need more than {} channels of {} thread blocks each", pair.first,
                                  MscclLimits::max_channels, MscclLimits::max_tbs_per_channel));
        so.resize(std::max<std::size_t>(so.size(), c + 1));
        ro.resize(std::max<std::size_t>(ro.size(), c + 1));
        ++so[c];
        ++ro[c];
        chan = c;
        plan.nchannels = std::max(plan.nchannels, c + 1);
    }

    // Thread blocks per GPU, sorted as msccl-tools sorts them, by (send, recv, chan): the local
    // copy (-1, -1), then receivers (-1, q), then senders (p, -1).
    std::vector<std::pair<int, int>> recv_pos(ev.size());  // (tb, step) of each receive
    std::vector<std::pair<int, int>> send_pos(ev.size());
    for (std::uint32_t g = 0; g < P; ++g) {
        Gpu& gpu = plan.gpus[g];
        gpu.i_chunks = layout.i_chunks(g);
        gpu.o_chunks = layout.o_chunks();
        if (auto copy = layout.local_copy(g)) gpu.tbs.push_back(Tb{-1, -1, 0, {*copy}});
    }
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> recv_tb, send_tb;  // (gpu, peer) -> tb index
    for (auto& [pair, chan] : chan_of) {
        (void)chan;
        recv_tb[{pair.second, pair.first}] = 0;
        send_tb[{pair.first, pair.second}] = 0;
    }
    for (auto& [gp, tb] : recv_tb) {
        Gpu& gpu = plan.gpus[gp.first];
        tb = int(gpu.tbs.size());
        gpu.tbs.push_back(Tb{-1, int(gp.second), chan_of[{gp.second, gp.first}], {}});
    }
    for (auto& [gp, tb] : send_tb) {
        Gpu& gpu = plan.gpus[gp.first];
        tb = int(gpu.tbs.size());
        gpu.tbs.push_back(Tb{int(gp.second), -1, chan_of[{gp.first, gp.second}], {}});
    }
    // ev is sorted by (sent, src, dst, message, arrived): filtered by pair, both ends see the
    // same order, which is the order the executor matches sends and receives in.
    for (std::size_t i = 0; i < ev.size(); ++i) {
        std::uint32_t a = idx(ev[i].src), b = idx(ev[i].dst);
        int rt = recv_tb[{b, a}];
        Tb& r = plan.gpus[b].tbs[rt];
        recv_pos[i] = {rt, int(r.ops.size())};
        r.ops.push_back(Op{"r", src_loc[i], dst_loc[i]});
        int st = send_tb[{a, b}];
        Tb& s = plan.gpus[a].tbs[st];
        send_pos[i] = {st, int(s.ops.size())};
        s.ops.push_back(Op{"s", src_loc[i], dst_loc[i]});
    }
    for (std::size_t i = 0; i < ev.size(); ++i) {
        if (!depends_on[i]) continue;
        std::uint32_t g = idx(ev[i].src);
        auto [tb, step] = recv_pos[*depends_on[i]];
        if (tb > MscclLimits::max_dependency_tb)
            refuse(t, fmt::format("GPU {} would depend on thread block {}; the executor stores dependency ids in an int8_t "
                                  "(at most {})",
                                  g, tb, MscclLimits::max_dependency_tb));
        Op& op = plan.gpus[g].tbs[send_pos[i].first].ops[send_pos[i].second];
        op.depid = tb;
        op.deps = step;
        plan.gpus[g].tbs[tb].ops[step].hasdep = true;
    }
    for (std::uint32_t g = 0; g < P; ++g) {
        std::size_t nodes = 1 + P + plan.gpus[g].tbs.size();
        for (std::size_t k = 0; k < plan.gpus[g].tbs.size(); ++k) {
            const Tb& tb = plan.gpus[g].tbs[k];
            nodes += tb.ops.size();
            if (tb.ops.size() > std::size_t(MscclLimits::max_steps))
                refuse(t, fmt::format("GPU {}, thread block {} ({} {}) needs {} steps; the executor allows at most {} per thread "
                                      "block (s < {})",
                                      g, k, tb.send >= 0 ? "sending to" : "receiving from", tb.send >= 0 ? tb.send : tb.recv,
                                      tb.ops.size(), MscclLimits::max_steps, MscclLimits::max_steps));
        }
        if (nodes > std::size_t(MscclLimits::max_nodes))
            refuse(t, fmt::format("GPU {} needs {} XML elements; the executor's reader loads at most {}", g, nodes,
                                  MscclLimits::max_nodes));
    }
    return plan;
}

}  // namespace

void write_table_msccl(const SendTable& t, fmt::memory_buffer& out, const Flush& flush) {
    Plan plan = build_plan(t);
    auto it = std::back_inserter(out);
    // The executor's reader wants one space between attributes, double quotes, no XML
    // declaration and `/>` right after the last attribute value.
    fmt::format_to(it,
                   "<algo name=\"{}\" proto=\"Simple\" nchannels=\"{}\" nchunksperloop=\"{}\" ngpus=\"{}\" coll=\"{}\" "
                   "inplace=\"0\" outofplace=\"1\" minBytes=\"0\" maxBytes=\"0\">\n",
                   plan.name, plan.nchannels, plan.nchunksperloop, plan.gpus.size(), plan.coll);
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
                               "      <step s=\"{}\" type=\"{}\" srcbuf=\"{}\" srcoff=\"{}\" dstbuf=\"{}\" dstoff=\"{}\" cnt=\"1\" "
                               "depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
                               s, op.type, op.src.buf, op.src.off, op.dst.buf, op.dst.off, op.depid, op.deps, op.hasdep ? 1 : 0);
            }
            fmt::format_to(it, "    </tb>\n");
            if (out.size() > flush_at) flush(out);
        }
        fmt::format_to(it, "  </gpu>\n");
    }
    fmt::format_to(it, "</algo>\n");
    flush(out);
}

std::string table_to_msccl(const SendTable& t) {
    std::string s;
    fmt::memory_buffer buf;
    write_table_msccl(t, buf, [&](fmt::memory_buffer& b) {
        s.append(b.data(), b.size());
        b.clear();
    });
    return s;
}

}  // namespace collsched
