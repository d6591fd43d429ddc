/** \file
 * The transfers of an MSCCL++ plan as export_mscclpp.cpp places them, private to it and its
 * helpers (export_mscclpp_floor.cpp, _fuse.cpp, _readback.cpp): where each reads and writes, a floor
 * on the ops of a GPU's busiest thread block that holds at every thread-block count (the writer's
 * fast refusal), and several channels in one op.
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/core/ids.hpp"
#include "compiler/interop/export_mscclpp.hpp"

namespace collsched::detail {

/// A place in a GPU's buffers: 'i', 'o', 's' plain chunks, or 'p' an LL packet slot of the scratch.
struct PlanLoc {
    char buf = 'i';
    int idx = 0;
    bool operator==(const PlanLoc&) const = default;
};

/// One endpoint transfer as the plan carries it.
struct PlanMove {
    int src = 0, dst = 0;
    Step sent = 0, arrived = 0;
    PlanLoc from, to;  ///< at src (plain, or 'p': the packet slot it arrived in), at dst
    int chain = 0;     ///< the thread block's share: the message (copies) or the chunk (reductions)
    bool port = false;
    // reductions: what the receiver does with the arrived partial at `arrived`
    bool combine = false;
    PlanLoc work;  ///< the receiver's working chunk W
    // copies: where the receiver keeps the message (the plain destination), if anywhere
    std::optional<PlanLoc> keep;
};

/// A buffer an op names: a GPU's own ('i', 'o', 's'; JSON `type`, `index`, `size`) or a peer's, through the GPU's
/// remote buffer `buffer_id` (JSON `buffer_id`, `index`, `size`).
struct PlanBuf {
    char type = 'i';
    int index = 0, size = 1;
    int buffer_id = -1;  ///< -1: the GPU's own buffer
    bool operator==(const PlanBuf&) const = default;
};

/// One op of a thread block as the writer composes it (export_mscclpp.cpp: written as JSON only for the plan it keeps;
/// the thread-block counts it tries are counted in these): its JSON keys in this order, each only when set.
struct PlanOp {
    std::string_view name;          ///< a static op name ("put", "nop", ...)
    std::vector<PlanBuf> src = {}, dst = {};  ///< src_buff, dst_buff
    std::vector<int> channel_ids = {};
    bool reduce = false;  ///< reduce_op "sum"
    char channel = 0;     ///< channel_type: 'm' memory, 'p' port, 0 none
};

/// The plan of a table whose GPUs put to each other (export_mscclpp.cpp; not yet verified: table_to_mscclpp, in
/// export_mscclpp_readback.cpp, reads it back and checks it). Throws InputError naming what the format cannot express.
std::string puts_plan(const SendTable&, const MscclppOptions&);

/// One put through a port channel as the writer fuses them: the block's channel index, the local source and the
/// peer's destination.
struct PortPut {
    int channel = 0;
    PlanBuf src, dst;
};

/// Whether the route from p to q crosses a router or a link group named nic*: then the pair talks through port
/// channels (a NIC), else through memory channels (NVLink, NVSwitch). export_mscclpp_fuse.cpp.
bool needs_port(const Topology& topo, std::uint32_t p, std::uint32_t q);

/// A step's port puts of one thread block (`name` "pws" or "pwsf") as ops of up to 8 puts on distinct channels:
/// thread t pushes entry t into the FIFO of channel_ids[t] (handlePut, execution_kernel.hpp:168-186). Two pushes
/// into one channel's FIFO by different threads land in either order unless a nop lies between, so `thread`
/// keeps per channel the thread that last pushed into it since the block's last nop; an op places a channel
/// at that thread where it can, and is preceded by a nop (returned as one, `thread` cleared) where it cannot.
/// export_mscclpp_fuse.cpp.
std::vector<PlanOp> fuse_port_puts(std::string_view name, const std::vector<PortPut>& puts, std::map<int, int>& thread);

/// Channels (with repeats: one entry per wait) as ops of up to 8 distinct channels each (handleWait,
/// execution_kernel.hpp:101-118: thread t waits on channel_ids[t]), in the order given.
std::vector<std::vector<int>> distinct_groups(const std::vector<int>& channels);

/// JSON text laid out exactly as nlohmann::ordered_json::dump(2) lays it out, written as it goes (the plan's JSON
/// tree took 2 s and 200 MB for 29,760 transfers): open an object or array, then per member key() and a value.
class JsonText {
public:
    explicit JsonText(std::string& out) : out_(out) {}
    JsonText& key(std::string_view k);
    JsonText& open(char bracket);  ///< '{' or '['
    JsonText& close();
    JsonText& str(std::string_view s);
    JsonText& num(std::int64_t n);
    JsonText& unum(std::uint64_t n);
    JsonText& boolean(bool b);
    JsonText& ints(const std::vector<int>& list);  ///< an array of numbers
    JsonText& op(const PlanOp& op);

private:
    void next();  ///< before a value: the separator and indent in an array (after key(): nothing)
    void quoted(std::string_view s);
    JsonText& buf(const PlanBuf& b);
    std::string& out_;
    std::vector<std::pair<char, std::size_t>> open_;  ///< per open bracket: ']' or '}' and the members so far
    bool after_key_ = false;
};

/// A floor on the ops of the busiest thread block of a plan with K thread blocks a GPU (one
/// instance), at every K, without writing the plan (export_mscclpp_floor.cpp has its derivation).
/// `chains` are the plan's chains in the order Writer::build deals them to blocks (round-robin),
/// `initial_chain[g]` the chains of GPU g's local copies at the start.
/// The chains `ids` by the steps they are active in (first send, last arrival; a local copy at the start at step 0), so
/// that Writer::build(K), dealing them in runs (block_of with G = K), gives a block chains of the same steps: a block
/// pays its per-step ops (puts, a nop, signals, waits, a nop) only in the steps its chains are active in, where dealing
/// them round-robin makes every block active in every step of a pipelined table.
std::vector<int> chains_by_steps(const std::vector<PlanMove>& moves, const std::vector<std::vector<int>>& initial_chain, const std::vector<int>& ids);

/// The thread block of the chain at place r of n (chains_by_steps) with K blocks a GPU in G groups: the chains
/// cut into G runs of consecutive places, run i dealt round-robin to its own blocks i * K / G up to (i + 1) * K / G
/// (G = 1: every chain round-robin over all K blocks), `row` consecutive places of a run to a block at a time
/// (MscclppOptions::chains_a_block).
inline int block_of(std::size_t r, std::size_t n, int K, int G, int row = 1) {
    const std::size_t k = std::size_t(std::max(1, K)), g = std::min<std::size_t>(std::size_t(std::max(1, G)), k);
    const std::size_t run = r * g / std::max<std::size_t>(n, 1), lo = run * k / g, hi = (run + 1) * k / g;
    const std::size_t first = (run * n + g - 1) / g;  // the run's first place: the least r with r * g / n == run
    return int(lo + (r - first) / std::size_t(std::max(1, row)) % (hi - lo));
}

class OpFloor {
public:
    OpFloor(const std::vector<PlanMove>& moves, const std::vector<std::vector<int>>& initial_chain, const std::vector<int>& chains, int gpus,
            bool packets, bool reduction, bool handshake);
    std::size_t busiest(int K, int G, int row = 1) const;

private:
    struct Group {
        int gpu = 0, bound = 1, times = 1;
        std::size_t begin = 0, end = 0;  ///< its items in items_, sorted by key
    };
    std::vector<Group> groups_;
    std::vector<std::pair<int, int>> items_;  ///< (key, chain's place in `chains`): ops cover up to `bound` distinct keys
    int gpus_ = 0;
    std::size_t chains_ = 0;
    std::size_t dropped_ = 0;  ///< counted ops a block may drop (Simple: its trailing nop)
};

}  // namespace collsched::detail
