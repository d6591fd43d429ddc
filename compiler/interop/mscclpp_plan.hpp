/** \file
 * MSCCL++ execution plans (microsoft/mscclpp: the JSON its `ExecutionPlan` loads and its
 * `Executor` runs), read exactly as the executor's parser reads them
 * (src/core/executor/execution_plan.cc), with every key the parser touches checked for presence
 * and type and every limit of src/core/include/execution_common.hpp, so that a plan the executor
 * would crash on, refuse, or silently misrun is named with its JSON path and line:col.
 * docs/exports.md ("MSCCL++ execution plans") has the semantics with the sources.
 *
 * Two kinds of problem (docs/errors.md, "Executor formats: one rule"): bad input, judged from one
 * value alone (not JSON, not a plan, a required key missing, a wrong type, a number outside its
 * field's range, a name the format does not have), throws one InputError with every such problem of
 * the file (exit 2); what the executor would refuse, crash on, or run other than the file says
 * because of how values fit together is a Finding (exit 1), and the reader keeps going to report
 * them all.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/budget.hpp"

namespace collsched::mscclpp {

/// The buffers a plan names: "i" (the call's input), "o" (its output), "s" (the scratch buffer
/// the executor allocates), as BufferType in execution_common.hpp:24-29.
enum class Buf : std::uint8_t { input, output, scratch };
/// Channel kinds (execution_common.hpp:31-36; "none" is accepted by the parser and ignored).
enum class Chan : std::uint8_t { none, memory, port, switch_ };

/// The thread blocks of one launch that every GPU MSCCL++ runs on holds at once (docs/exports.md,
/// "What `verify PLAN.json` decides"): the executor launches a GPU's blocks as one grid
/// (executor.cc:495-503) and a wait spins until another block signals, so a plan is free of
/// deadlock only if all of them run at once. The kernel is declared __launch_bounds__(1024, 1)
/// (execution_kernel.hpp:801): it may use 64 registers a thread, and an SM's 65,536 registers hold
/// floor(1024 / threads) of its blocks; an A100, the GPU with the fewest SMs among the data-centre
/// GPUs MSCCL++ targets (sm_80 and up), has 108.
inline constexpr int smallest_sm_count = 108;
constexpr int resident_blocks(int threads_per_block) {
    return smallest_sm_count * (threads_per_block >= 1024 || threads_per_block < 1 ? 1 : 1024 / threads_per_block);
}

char buf_letter(Buf b);
std::string_view chan_name(Chan c);

/// Every op code the parser accepts (execution_plan.cc:25-89), in OperationType order.
enum class Code : std::uint8_t {
    nop, barrier, put, ppkt, rppkt, pws, pwsf, get, copy, cpkt, upkt, signal, wait, flush, re, repkt, recpkt, res,
    respkt, recspkt, rre, rres, glres, rlxsignal, rlxwait, pipeline, sem_release, sem_acquire, gstore, gstorepkt
};

/// One row per op code: its JSON name, the OperationType it becomes, and one line on what the
/// device interpreter (execution_kernel.hpp) does with it.
struct CodeInfo {
    std::string_view name;
    Code code;
    std::string_view operation_type;
    std::string_view meaning;
};
std::span<const CodeInfo> code_table();
const CodeInfo& info(Code c);

struct Pos {
    int line = 0, col = 0;
};

/// One entry of `src_buff` or `dst_buff`: a local buffer (`type`), a peer's buffer through the
/// thread block's remote-buffer list (`buffer_id`), or a switch channel's buffer
/// (`switch_channel_id`); `index` and `size` in chunks.
struct BufRef {
    std::optional<Buf> type;
    int buffer_id = -1;
    int switch_channel_id = -1;
    std::int64_t index = 0, size = 0;
    Pos pos;
};

struct Op {
    Code code = Code::nop;
    Pos pos;
    std::string path;  ///< "gpus[1].threadblocks[0].ops[3]"
    std::optional<Chan> channel_type;
    std::vector<int> channel_ids;
    std::vector<BufRef> src, dst;
    int barrier_id = -1, num_threadblocks = -1;
    std::vector<int> semaphore_ids;
    std::int64_t tbg_id = 0, tbg_size = 1;  ///< up to 2^32 - 1 each
    std::int64_t unit_size = 0, num_chunks = 0;  ///< pipeline's iter_context
    std::vector<Op> inner;                       ///< pipeline's ops
    std::string reduce_op;                       ///< as written (the executor ignores it: it sums)
};

struct Tb {
    int id = 0;
    Pos pos;
    std::string path;
    std::vector<Op> ops;
    /// Per channel type: indexes into the GPU's flattened channels of that type, in order
    /// (execution_plan.cc:393-411); an op's channel_ids index into these.
    std::vector<int> memory, port, switch_;
    /// Per access type: ids of the GPU's remote_buffers, in order (execution_plan.cc:423-443); an
    /// op's buffer_id indexes into these.
    std::vector<int> memory_buffers, port_buffers;
};

struct GpuChannel {
    Chan type = Chan::none;
    std::vector<int> peers;  ///< connected_to
    Pos pos;
    std::string path;
    // switch channels
    std::optional<Buf> buffer_type;
    std::vector<std::vector<int>> groups;  ///< rank_groups[].ranks
};

struct RemoteBuffer {
    int rank = 0;
    Buf type = Buf::input;
    std::vector<Chan> access;
    Pos pos;
};

struct Gpu {
    int id = 0;
    Pos pos;
    std::int64_t input_chunks = 0, output_chunks = 0, scratch_chunks = 0;
    std::vector<Tb> tbs;
    std::vector<GpuChannel> channels;
    std::vector<RemoteBuffer> remote_buffers;
    std::vector<std::int64_t> semaphores;  ///< init_value of each
    /// The flattened channels of each type: peer of channel k (execution_plan.cc:313-342).
    std::vector<int> memory_peers, port_peers;
    /// Switch channels: the rank groups, flattened (one NvlsInfo per group), with buffer types.
    std::vector<std::vector<int>> switch_groups;
    std::vector<Buf> switch_buffers;
};

struct Plan {
    std::string name, collective, protocol;
    bool inplace = false, reuse_resources = false, double_scratch = false;
    std::int64_t buffer_alignment = 16, num_threads = 1024;
    bool packets() const { return protocol == "LL"; }
    std::vector<Gpu> gpus;
};

/// Something the executor would refuse, crash on, or run other than the plan says, or (from the
/// checker) a deadlock, a race or a wrong result. `rule` names the class in brackets.
struct Finding {
    std::string rule;  ///< "deadlock", "data race", "result", "limit", "blind spot", "structure"
    std::string path;  ///< JSON path, or empty
    Pos pos;
    std::string what;
};

struct ReadResult {
    Plan plan;
    std::string file;  ///< the name messages give it
    std::vector<Finding> findings;
    /// Whether the plan's structure is sound enough to model its execution (no missing key, no
    /// index outside its list, no unknown op): the checker runs only then.
    bool checkable = true;
};

/// Whether a text is an MSCCL++ plan by its content: a JSON object whose top level has "gpus"
/// and "collective" and no "format" (collsched's own files carry "format").
bool looks_like_mscclpp_plan(std::string_view text);

/// Reads a plan; `file` names it in messages. Throws InputError when the text is not a plan, and
/// LimitReached once `deadline` passes (polled after the text is parsed and at every GPU: reading
/// back a 128-GPU plan of 300,000 transfers takes seconds).
ReadResult read_plan(std::string_view text, std::string_view file, Deadline deadline = {});

/// `file:line:col: path: what [rule]` for one finding.
std::string format_finding(std::string_view file, const Finding& f);

}  // namespace collsched::mscclpp
