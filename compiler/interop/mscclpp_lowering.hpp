/** \file
 * The lowering of an MSCCL++ plan to the asynchronous program the engine replays
 * (compiler/interop/mscclpp_check.hpp, the model), private to its two files:
 * mscclpp_check.cpp (the set-up, the barriers, packets and semaphores after the operations, the
 * goals and the report) and mscclpp_lower.cpp (every thread block and operation).
 */
#pragma once

#include "compiler/interop/mscclpp_check.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <fmt/format.h>

#include "compiler/interop/async_program.hpp"
#include "compiler/interop/expect_file.hpp"
#include "compiler/core/json_tree.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::mscclpp {

using async::OpId;
using async::Slot;

/// Regions of a GPU's memory: the three buffers as plain data, and the same buffers holding LL
/// packets (a packet slot i is the 2*chunk bytes at 2*i*chunk; the executor never mixes the two
/// views of one buffer in the plans it is given, and a plan that does is refused below).
inline std::uint32_t region(Buf b, bool packet) { return std::uint32_t(b) + (packet ? 3 : 0); }

/// Key spaces for the engine's matching.
enum KeySpace : std::uint64_t { memory_sem = 1, port_sem = 2, device_sem = 3 };
inline std::uint64_t key(KeySpace s, int gpu, std::uint32_t index) { return (std::uint64_t(s) << 56) | (std::uint64_t(gpu) << 32) | index; }
inline constexpr std::uint32_t phantom = 0x80000000u;

inline std::string buffer_name(Buf b) { return b == Buf::input ? "input" : b == Buf::output ? "output" : "scratch"; }

/// Builds the asynchronous program of a plan (see the header for the model).
class Lowering {
public:
    /// `file` names the plan in the refusals of what is beyond collsched's limits (InputError).
    /// `nccl_inplace`: an in-place reducescatter's output aliases the input as NCCL's convention
    /// has it (recvbuff = sendbuff + rank * recvcount), not as mscclpp's (recvbuff == sendbuff).
    Lowering(const Plan& plan, std::vector<Finding>& findings, std::string_view file, bool nccl_inplace = false)
        : plan_(plan), out_(findings), file_(file), nccl_inplace_(nccl_inplace) {}

    /// A chunk is split into at most this many parts for thread-block groups (the least common
    /// multiple of their sizes), and the replay tracks at most max_chunk_parts input and output
    /// chunk parts (MSCCL-IR's reader checks the same 2^24).
    static constexpr std::int64_t max_parts = 64, max_chunk_parts = std::int64_t(1) << 24;
    /// Past it build() throws LimitReached (polled once a GPU).
    Deadline deadline;

    bool build();

    async::Program& program() { return prog_; }
    const std::vector<const Op*>& op_of() const { return op_of_; }
    const std::vector<std::string>& what() const { return what_; }
    const std::vector<bool>& moves() const { return moves_; }
    int L() const { return L_; }
    std::int64_t input_chunks(int g) const { return plan_.gpus[std::size_t(g)].input_chunks; }
    std::string slot_name(Slot s) const;
    /// An atom: (rank, input chunk, part).
    std::tuple<int, int, int> atom_parts(async::Atom a) const;
    async::Atom atom(int rank, std::int64_t chunk, int part) const;
    std::int64_t Ci() const { return Ci_; }

    /// In place, the input is part of the output: allgather's input chunk j is output chunk
    /// rank*input_chunks + j; the other collectives pass one buffer (algorithm.cc:13-23); under
    /// NCCL's convention a reducescatter's output chunk j is input chunk rank*output_chunks + j.
    Slot slot(int rank, Buf b, bool packet, std::int64_t chunk, std::int64_t part) const;

    /// How many chunks (or packet slots) a buffer of a rank has.
    std::int64_t capacity(int rank, Buf b, bool packet) const;

private:
    void finding(const std::string& rule, const Op& op, std::string what) { out_.push_back({rule, op.path, op.pos, std::move(what)}); }
    void fail(const Op& op, std::string what);

    void atoms_per_chunk();

    /// The executor connects rank r's k-th channel of a type to peer p with the k-th of p's
    /// channels of that type to r (executor.cc:287-312: one tag counter per peer, memory
    /// channels first, each side's unpaired surplus connected to nothing the plan uses).
    void pair_channels();

    void initial_values();

    struct TbState {
        int gpu = 0, tb = 0;
        async::AgentId spine = 0;
        std::optional<OpId> gate;  ///< the last nop/barrier: everything after it follows it
        std::vector<OpId> segment;  ///< ops since the gate: the next nop/barrier follows them all
        std::map<int, async::AgentId> lanes;
        std::vector<async::AgentId> data;
        std::size_t next_data = 0;
        std::map<int, int> barrier_calls;  ///< barrier id -> calls so far
    };

    OpId new_op(async::AgentId agent, const Op& op, std::string what);
    OpId in_segment(TbState& s, async::AgentId agent, const Op& op, std::string what);
    OpId data_op(TbState& s, const Op& op, std::string what);
    OpId lane_op(TbState& s, int t, const Op& op, std::string what);
    /// A nop or barrier: after everything since the last one, before everything that follows.
    OpId sync_op(TbState& s, const Op& op, std::string what);
    async::AgentId proxy(int gpu, int channel);

    /// The slots of `size` chunks from `index`, the part a thread-block group member handles.
    std::vector<Slot> slots(const Op& op, int rank, Buf b, bool packet, std::int64_t index, std::int64_t size);

    std::optional<Buf> local(const Op& op, const BufRef& r, const char* role);

    /// A peer's buffer through the thread block's remote-buffer list of the op's channel type.
    std::optional<std::pair<int, Buf>> remote(const Op& op, const Tb& tb, const Gpu& gpu, const BufRef& r, const char* role);

    /// The global channel (index into the GPU's flattened channels of that type) of the op's t-th channel id.
    std::optional<int> channel(const Op& op, const Tb& tb, Chan c, std::size_t t);

    /// The key a signal on channel `k` of GPU `g` posts to, and the key a wait on it takes.
    std::uint64_t signal_key(Chan c, int g, int k) const;
    std::uint64_t wait_key(Chan c, int g, int k) const { return key(c == Chan::memory ? memory_sem : port_sem, g, std::uint32_t(k)); }

    /// Thread block t of GPU g: its ops with the channels of `chan_tb`, the block whose id is t
    /// (null: none has it, the block's own).
    void lower_tb(int g, int t, const Tb* chan_tb);

    void finding_once(const std::string& tag, const Op& op, std::string what);

    std::string describe(const Op& op) const { return fmt::format("{} ({})", op.path, info(op.code).name); }

    /// What every operation's lowering reads: its thread block, GPU, name and channel type.
    struct OpContext {
        TbState& s;
        const Gpu& gpu;
        const Tb& tb;
        const Op& op;
        int g;
        std::string name;
        Chan ct;
    };
    /// One operation, by its code: one method per family of codes below.
    void lower_op(TbState& s, const Gpu& gpu, const Tb& tb, const Op& op);
    bool need_src(OpContext& c, std::size_t n);
    bool need_dst(OpContext& c, std::size_t n);
    /// One lane per atom: out[x] = combine(in[0][x], in[1][x], ...).
    void lanes(OpId o, const std::vector<std::vector<Slot>>& ins, const std::vector<std::vector<Slot>>& outs, bool mark);
    void reads_packets(OpId o, const std::vector<Slot>& v);
    void writes_packets(OpId o, const std::vector<Slot>& v);
    std::vector<Slot> local_slots(OpContext& c, const BufRef& r, bool packet, std::int64_t size);
    std::vector<Slot> remote_slots(OpContext& c, const BufRef& r, bool packet, std::int64_t index, std::int64_t size);
    /// The t-th put of an op through a port channel: the thread's trigger (after `after`, if
    /// given) and the proxy's op that moves the data into dst_buff[t]; the proxy is the
    /// channel's last. nullopt, with a finding, when the channel or the buffer is missing.
    struct PortPut {
        int channel;  ///< index into the GPU's port channels
        int rank;     ///< the destination buffer's rank
        Buf buf;
        OpId proxy;
    };
    std::optional<PortPut> port_put(OpContext& c, std::size_t t, std::optional<OpId> after = std::nullopt);
    /// Thread t of the op's block pushes into port channel k's FIFO: a finding when another thread of the block
    /// pushed into it last and no nop or barrier lies between.
    void push(OpContext& c, int t, int k);
    struct LastPush {
        int tb = 0, thread = 0;
        std::optional<OpId> gate;
        const Op* op = nullptr;
    };
    std::map<std::pair<int, int>, LastPush> pushes_;  ///< per (GPU, port channel)
    void lower_barrier(OpContext& c);
    void lower_semaphore_op(OpContext& c);
    void lower_flush(OpContext& c);
    void lower_device_semaphore(OpContext& c);
    void lower_put(OpContext& c);
    void lower_get(OpContext& c);
    void lower_copy(OpContext& c);
    void lower_reduce(OpContext& c);
    void lower_copy_packets(OpContext& c);
    void lower_unpack_packets(OpContext& c);
    void lower_put_packets(OpContext& c);
    void lower_read_put_packets(OpContext& c);
    void lower_reduce_packets(OpContext& c);
    void lower_switch(OpContext& c);

    void finish_barriers();

    /// LL packets: a read spins until the packet's flag is this launch's, so it follows the one
    /// write of that packet in the launch; none, and it spins forever; two, and which one it sees
    /// is a race.
    void finish_packets();

    void finish_semaphores();

    int waits_count(Chan c, int g, int ch) const;

public:
    /// Device semaphores' initial values: registered before any lowering (call first).
    void semaphore_initial_values();
    std::vector<Finding> notes() const { return notes_text_; }
    struct MultiWriter {
        OpId reader;
        Slot slot;
        std::vector<OpId> writers;
    };
    const std::vector<MultiWriter>& multi_writers() const { return multi_writers_; }

private:
    struct Barrier {
        async::AgentId agent = 0;  ///< +1; 0: none yet
        std::vector<OpId> joins;
        std::vector<std::vector<std::pair<OpId, const Op*>>> calls;
    };

    const Plan& plan_;
    std::vector<Finding>& out_;
    std::string file_;
    bool nccl_inplace_ = false;
    async::Program prog_;
    int P_ = 0, L_ = 1;
    std::int64_t Ci_ = 1;
    bool failed_ = false;
    std::vector<std::vector<int>> mem_pair_, port_pair_;
    std::vector<const Op*> op_of_;
    std::vector<std::string> what_;
    std::vector<bool> moves_;
    std::map<std::pair<int, int>, async::AgentId> proxies_;
    std::map<std::pair<int, int>, OpId> last_proxy_;
    std::map<std::pair<int, int>, Barrier> barriers_;
    std::map<Slot, std::vector<OpId>> packet_writers_;
    std::vector<std::pair<OpId, Slot>> packet_reads_;
    std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> races_;
    std::vector<MultiWriter> multi_writers_;
    std::map<std::tuple<Chan, int, int>, int> signals_, waits_;
    std::map<std::pair<int, int>, int> releases_, acquires_;
    std::set<std::string> notes_;
    std::vector<Finding> notes_text_;
    Buf current_switch_buf_ = Buf::scratch;
};

}  // namespace collsched::mscclpp
