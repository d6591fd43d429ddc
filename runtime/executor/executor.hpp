/** \file
 * The executor model (docs/time.md, "Executors"): what a GPU pays to run a table, beyond the
 * network's share, for each executor that runs collsched's exports. It is collsched's scheduling
 * model in the sense of LLVM's (X86SchedSkylakeClient.td read through TargetSchedModel): one row
 * of constants per executor and protocol, each constant with its source, read by the time model
 * (runtime/timing.hpp) through `ExecutorCosts` and by nothing else.
 *
 * An executor charges, on top of the machine's links:
 *  - a *launch*: once per collective (kernel launch and set-up; NCCL's base latency);
 *  - a *hop*: on every transfer that leaves a GPU, the synchronization its receiver waits for
 *    (a flag written after the data and polled; NCCL's per-step hardware latency), by link class;
 *  - a *message*: every transfer holds its connection this long beyond its bytes (issuing the
 *    copy or the RDMA write and its completion: what makes 4,096 transfers of 64 bytes cost more
 *    than one of 256 KiB), by link class; a channel carries the bytes of several connections at
 *    once where the executor runs several over it (NCCL: one for each of its channels,
 *    runtime/timing.hpp connections_per_channel), else the message holds the channel;
 *  - a *proxy*: MSCCL++'s port channels: a transfer on a network channel out of a GPU also holds
 *    that GPU's one proxy thread this long (its triggers in turn);
 *  - an *efficiency*: the achievable fraction of a link's peak bandwidth, by link class (NCCL's
 *    own calibrated NVLink speeds against the datasheet; a switch's reduction throughput);
 *  - a *wire* factor: bytes on the wire per byte of data (LL's flags);
 *  - a *grain*: the smallest transfer worth sending: a smaller one holds its channel as long as one
 *    of the grain's bytes (the executor moves whole warps of the protocol's lines; NCCL's Simple
 *    rounds a chunk up), so splitting below it never pays;
 *  - a *rate*: what one connection (an NCCL channel's thread block) moves out of a GPU per second,
 *    whatever the link's free bandwidth: a transfer out of a GPU holds its connection at least its
 *    bytes at the rate beyond its message (0: not bounded).
 *
 * Link classes: `box` (NVLink, NVSwitch without reduction, PCIe inside a box), `network` (a NIC's
 * channels: below a quarter of the fastest channel between processors, the rule NCCL's protocol
 * latencies and the machine view use), `switch` (channels into or out of a router that reduces or
 * multicasts: NVLS, SHARP).
 *
 * `ideal` is an executor like the others, with every cost zero and every efficiency 1: the time it
 * gives is the network's share, the model the proven lower bounds are stated in. A calibration
 * (`collsched calibrate`, a file `collsched.calibration/1`) replaces some constants of one executor
 * for one machine, and names the measurements it was fitted on.
 */
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collsched {

class Topology;

/// The executor's protocol (docs/time.md, "Protocols"): `none`, the network's share only (every
/// table's default), or NCCL's LL, LL128 and Simple, as MSCCL-IR programs (`proto`) and MSCCL++
/// plans (`protocol`) declare them.
enum class Protocol : std::uint8_t { none, ll, ll128, simple };
std::string_view to_string(Protocol);
/// "LL", "LL128", "Simple" (as the formats spell them); nullopt for anything else.
std::optional<Protocol> parse_protocol(std::string_view);

/// What a protocol costs (docs/time.md, "Protocols", with NCCL's sources): the bytes on the wire per
/// byte of data, and the latency it adds to a hop that leaves a processor, inside a box (NCCL's
/// NVLink figures) and out of it (its network figures), over LL's (the machines' alpha).
struct ProtocolCost {
    double wire = 1;
    double box_s = 0, network_s = 0;
};
ProtocolCost protocol_cost(Protocol);

/// The classes of channels an executor charges differently (see the file comment).
enum class LinkClass : std::uint8_t { box, network, in_switch };
inline constexpr std::size_t link_classes = 3;
constexpr std::size_t idx_of(LinkClass c) { return static_cast<std::size_t>(c); }
std::string_view to_string(LinkClass);

/// The executors collsched's exports run on, and the ideal one.
enum class ExecutorKind : std::uint8_t { ideal, nccl, mscclpp, msccl };
std::string_view to_string(ExecutorKind);
/// "ideal", "nccl", "mscclpp", "msccl"; nullopt for anything else.
std::optional<ExecutorKind> parse_executor(std::string_view);
/// The names, for --help and did-you-mean.
std::vector<std::string_view> executor_names();

/// A constant of the model and where it comes from (a file and line of the executor's source, a
/// published measurement, or a fit with the rows it was fitted on).
struct Constant {
    double value = 0;
    std::string source;
};

/// One protocol of one executor: the constants the time model reads.
struct ProtocolRow {
    Protocol protocol = Protocol::simple;
    Constant launch;                                    ///< seconds, once per collective
    std::array<Constant, link_classes> hop;             ///< seconds on every transfer leaving a GPU, over the link's alpha
    std::array<Constant, link_classes> message;         ///< seconds a transfer holds its connection beyond its bytes
    std::array<Constant, link_classes> efficiency;      ///< achievable fraction of peak, in (0, 1]
    Constant grain;                                     ///< bytes: the smallest transfer worth sending
    Constant rate;                                      ///< bytes/s one connection moves out of a GPU; 0: not bounded
    /// seconds a transfer on a network channel holds its GPU's one proxy thread (MSCCL++'s port channels); 0: no proxy
    Constant proxy;
    /// The protocol runs on NCCL's kernels, so NCCL's caps on its bandwidth bind (nccl_protocol_caps:
    /// LL's per-GPU llMaxBw, LL128's per-channel perChMaxRingLL128Bw); the source says which.
    Constant caps;                                      ///< 1: NCCL's caps charged, 0: none
};

/// What an executor can run (its limits, as its own source states them); 0 where it has none.
struct ExecutorLimits {
    std::uint32_t max_steps_per_block = 0;   ///< MSCCL: MSCCL_MAX_NUM_STEPS
    std::uint32_t max_blocks = 0;            ///< MSCCL: MSCCL_MAX_NUM_THREAD_BLOCKS
    std::uint32_t max_channels = 0;          ///< NCCL: MAXCHANNELS
    std::string source;
};

/// One executor: its protocols (the first is its default) and limits.
struct ExecutorModel {
    ExecutorKind kind = ExecutorKind::ideal;
    std::string name;
    std::string note;               ///< one line: what runs the table
    std::vector<ProtocolRow> protocols;
    ExecutorLimits limits;
    std::string calibration;        ///< empty: the built-in constants; else what replaced them
    /// The model's validated error, relative: two times it predicts closer than a factor 1 + error
    /// are a tie (a speed-up inside it is not claimed). 0 for `ideal` (exact in its own model).
    Constant error;
    /// The row of protocol p (the default's when the executor has no such protocol, `none`).
    const ProtocolRow& row(Protocol p) const;
};

/// The built-in model of an executor (constants from its source and NCCL's tuning model).
const ExecutorModel& builtin_executor(ExecutorKind);

/// NCCL's caps on a protocol's bandwidth (src/graph/tuning.cc ncclTopoTuneModel; docs/time.md,
/// "Executors"), resolved for one machine; 0 where nothing is capped.
struct ProtocolCaps {
    /// Bytes of data per second a GPU sends, over all its channels (LL: `llMaxBw`, the ring's bus
    /// bandwidth cap, which is each GPU's rate of sending).
    double gpu = 0;
    /// Bytes of data per second on one network channel (LL128: `perChMaxRingLL128Bw`, NCCL's cap per
    /// channel, one NCCL channel on each NIC as its search lays rings across boxes).
    double network_channel = 0;
    bool operator==(const ProtocolCaps&) const = default;
};

/// What NCCL's tuner reads to choose the caps: the GPU generation (compCapIndex: 0 Volta, 1 Ampere,
/// 2 Hopper), the boxes (nNodes) and whether the host CPU is AMD (for llMaxBw across boxes).
struct CapMachine {
    std::uint32_t generation = 0;
    std::uint32_t boxes = 1;
    bool amd = false;
};
/// The topology as NCCL's caps read it: the generation from the fastest channel out of a GPU (400
/// GB/s or more a Hopper, 240 an Ampere, else a Volta: verifier/constructions/nccl/nccl_system.cpp's rule
/// on a GPU's NVLinks), the boxes declared (`"boxes"`) or else the sets of processors joined by
/// channels of the fast class (a quarter of the fastest and above), the CPU AMD on an Ampere
/// machine (DGX A100, NDv4; nccl_system's assumption).
CapMachine cap_machine(const Topology&);
/// NCCL's caps of protocol p on machine m (zero for Simple and none).
ProtocolCaps nccl_protocol_caps(Protocol p, const CapMachine& m);

/// The costs the time model reads for one executor and protocol: every constant resolved to a
/// number. Default-constructed: the ideal executor (nothing charged, peak rates, the protocol's
/// wire factor and hop latencies only when a protocol is given).
struct ExecutorCosts {
    ExecutorKind kind = ExecutorKind::ideal;
    Protocol protocol = Protocol::none;
    double wire = 1;
    double launch = 0;
    std::array<double, link_classes> hop{0, 0, 0};
    std::array<double, link_classes> message{0, 0, 0};
    std::array<double, link_classes> efficiency{1, 1, 1};
    double grain = 0;
    double rate = 0;  ///< bytes/s a connection moves out of a GPU (0: not bounded)
    double proxy = 0;  ///< seconds a network transfer holds its sending GPU's proxy thread (0: none)
    /// NCCL's caps are charged: the time model resolves `caps` from the topology (with_network_class)
    bool nccl_caps = false;
    ProtocolCaps caps;
    bool ideal() const;
    bool operator==(const ExecutorCosts&) const = default;
};

/// The costs of `model` under protocol p (`none`: the model's default protocol).
ExecutorCosts executor_costs(const ExecutorModel&, Protocol p = Protocol::none);
/// Only a protocol's wire factor and hop latencies: how MSCCL-IR programs and MSCCL++ plans are
/// timed without an executor named (docs/time.md, "Protocols").
ExecutorCosts protocol_costs(Protocol);

/// A calibration (`collsched.calibration/1`, docs/time.md "Calibration"): constants of one
/// executor fitted for one machine. Fields left out keep the built-in values.
struct Calibration {
    ExecutorKind executor = ExecutorKind::nccl;
    std::string machine;                 ///< what the fit was for (a name, free text)
    std::string fitted_on;               ///< the measurements (file, rows)
    std::optional<double> heldout_median;  ///< the fit's median relative error on held-out rows: the model's error
    struct Entry {
        Protocol protocol = Protocol::simple;
        std::optional<double> launch;
        std::array<std::optional<double>, link_classes> efficiency;
        std::array<std::optional<double>, link_classes> hop;
        std::array<std::optional<double>, link_classes> message;
        std::optional<double> rate;  ///< bytes/s a connection moves out of a GPU (0: not bounded)
    };
    std::vector<Entry> entries;
};

/// `base` with the calibration's constants in place, each citing the fit.
ExecutorModel calibrated(const ExecutorModel& base, const Calibration&);

/// The calibration file: JSON text; InputError with file:line:col on anything else.
Calibration read_calibration(std::string_view text, std::string_view file);
std::string write_calibration(const Calibration&);

}  // namespace collsched
