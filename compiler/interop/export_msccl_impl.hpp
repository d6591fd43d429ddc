/** \file
 * The MSCCL-IR writer's private parts (compiler/interop/export_msccl.cpp): the plan it builds
 * (GPUs, thread blocks, steps), the buffer layout, and the placement of every endpoint transfer
 * (export_msccl_place.cpp: copies and reductions under the buffer rule). Included only by those
 * two files.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "compiler/interop/export_msccl.hpp"
#include "compiler/io/export_ranks.hpp"
#include "compiler/table/partials.hpp"
#include "support/error.hpp"

namespace collsched::msccl_plan {

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

[[noreturn]] inline void refuse(const SendTable& t, std::string_view why) {
    throw InputError(fmt::format("cannot write MSCCL-IR for {} on {}: {}", t.collective.to_string(), t.topology->spec(), why));
}

/// A thread block longer than MSCCL_MAX_NUM_STEPS: paired thread blocks hold the steps of two,
/// so build_plan tries again unpaired.
struct StepLimit : InputError {
    using InputError::InputError;
};

inline std::string algo_name(const SendTable& t) {
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

/// Reductions under the buffer rule (export_msccl_place.cpp).
Placement place_reduction(const SendTable& t, const std::vector<EndpointTransfer>& ev, Plan& plan);
/// Copies: alltoall, allgather, broadcast (export_msccl_place.cpp).
Placement place_copies(const SendTable& t, const std::vector<EndpointTransfer>& ev, Plan& plan);

}  // namespace collsched::msccl_plan
