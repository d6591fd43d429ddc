// Where the MSCCL-IR writer places every endpoint transfer (compiler/interop/export_msccl_impl.hpp):
// copies (alltoall, allgather, broadcast) and reductions under the buffer rule.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "compiler/interop/export_msccl_impl.hpp"
#include "support/assert.hpp"

namespace collsched::msccl_plan {

namespace {
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

}  // namespace

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

}  // namespace collsched::msccl_plan
