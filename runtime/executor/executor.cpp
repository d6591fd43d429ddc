// The executors' constants (docs/time.md, "Executors"). Each constant names its source: a file and
// line of the executor's code (NVIDIA/nccl 2.30.7 as verifier/constructions/nccl/nccl_model.cpp reads it;
// microsoft/mscclpp; Azure/msccl-executor-nccl), or a published measurement in
// runtime/executor/calibration/measurements.csv (by row id), or the derivation from them.
#include "runtime/executor/executor.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/core/json_tree.hpp"
#include "compiler/topology/machine_view.hpp"
#include "compiler/topology/topology.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

std::string_view to_string(Protocol p) {
    switch (p) {
        case Protocol::ll: return "LL";
        case Protocol::ll128: return "LL128";
        case Protocol::simple: return "Simple";
        case Protocol::none: break;
    }
    return "none";
}

std::optional<Protocol> parse_protocol(std::string_view s) {
    if (s == "LL") return Protocol::ll;
    if (s == "LL128") return Protocol::ll128;
    if (s == "Simple") return Protocol::simple;
    return std::nullopt;
}

ProtocolCost protocol_cost(Protocol p) {
    // NVIDIA/nccl 5067397c. Wire: src/include/device.h:75-88 (an LL line is 16 bytes, 8 of them
    // data: flag1 and flag2 beside data1 and data2), :110-112 (an LL128 line is 16 eight-byte
    // elements, 15 of them data). Latency: src/graph/tuning.cc:156-176 hwLatencies, the ring's
    // row (NVLink LL 0.6, LL128 1.9, Simple 3.4 us; network LL 2.7, LL128 4.0, Simple 14.0 us),
    // over LL's, which the machines' alpha already are (docs/topologies.md, "Link speeds").
    switch (p) {
        case Protocol::ll: return {2.0, 0, 0};
        case Protocol::ll128: return {128.0 / 120.0, 1.3e-6, 1.3e-6};
        case Protocol::simple: return {1.0, 2.8e-6, 11.3e-6};
        case Protocol::none: break;
    }
    return {};
}

namespace {

// NVIDIA/nccl src/graph/tuning.cc (2.30.7), ncclTunerConstantsDefaults, in GB/s (1e9 B/s).
// llMaxBws :177-183, [index1][index2]: index1 the generation for one box (compCapIndex, :263-266),
// the CPU for several (0 Intel, 1 AMD, :267-270); index2 = boxes - 1, at most 2 (:266).
constexpr double ll_max_bws[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
// perChMaxRingLL128Bws :184-189, [compCapIndex][index2].
constexpr double per_ch_max_ring_ll128_bws[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};

}  // namespace

ProtocolCaps nccl_protocol_caps(Protocol p, const CapMachine& m) {
    const std::uint32_t cc = std::min<std::uint32_t>(m.generation, 3), index2 = std::min<std::uint32_t>(std::max(m.boxes, 1u), 3) - 1;
    ProtocolCaps c;
    if (p == Protocol::ll) {
        const std::uint32_t index1 = m.boxes <= 1 ? cc : m.amd ? 1 : 0;
        c.gpu = ll_max_bws[index1][index2] * 1e9;
    } else if (p == Protocol::ll128) {
        c.network_channel = per_ch_max_ring_ll128_bws[cc][index2] * 1e9;
    }
    return c;
}

CapMachine cap_machine(const Topology& t) {
    // the fastest and slowest channel with a GPU at an end: two classes when the slowest is below a quarter
    const auto [fastest, slowest] = processor_channel_speeds(t);
    CapMachine m;
    m.generation = fastest >= 400e9 ? 2 : fastest >= 240e9 ? 1 : 0;
    m.amd = m.generation == 1;
    if (t.declared_boxes() > 0) {
        m.boxes = t.declared_boxes();
    } else if (slowest < fastest / 4) {
        std::vector<std::uint32_t> parent(t.nodes());
        std::iota(parent.begin(), parent.end(), 0u);
        auto find = [&](std::uint32_t x) {
            while (parent[x] != x) x = parent[x] = parent[parent[x]];
            return x;
        };
        for (std::uint32_t c = 0; c < t.channels().size(); ++c) {
            const Channel& ch = t.channel(ChannelId{c});
            if ((t.is_processor(ch.from) || t.is_processor(ch.to)) && t.speed(ChannelId{c}).bandwidth >= fastest / 4)
                parent[find(idx(ch.from))] = find(idx(ch.to));
        }
        std::vector<char> root(t.nodes(), 0);
        m.boxes = 0;
        for (std::uint32_t p = 0; p < t.processors(); ++p)
            if (!root[find(p)]) root[find(p)] = 1, ++m.boxes;
    }
    return m;
}

std::string_view to_string(LinkClass c) {
    switch (c) {
        case LinkClass::box: return "box";
        case LinkClass::network: return "network";
        case LinkClass::in_switch: return "switch";
    }
    return "?";
}

namespace {

struct ExecutorName {
    ExecutorKind kind;
    std::string_view name;
};
constexpr ExecutorName executor_table[] = {
    {ExecutorKind::ideal, "ideal"},
    {ExecutorKind::nccl, "nccl"},
    {ExecutorKind::mscclpp, "mscclpp"},
    {ExecutorKind::msccl, "msccl"},
};

constexpr double us = 1e-6;

// NCCL's sources, as verifier/constructions/nccl/nccl_model.cpp cites them (NCCL 2.30.7).
const char* const base_lat = "NVIDIA/nccl src/graph/tuning.cc:154 baseLat, ring";
const char* const hw_lat_nvl = "NVIDIA/nccl src/graph/tuning.cc:162 hwLat NVLink, ring, less LL's 0.6 us (the machines' alpha)";
const char* const hw_lat_net = "NVIDIA/nccl src/graph/tuning.cc:174 hwLat network, ring, less LL's 2.7 us (the machines' alpha)";
const char* const steps_src =
    "2 x hop / NCCL_STEPS (src/include/device.h:22, 8 slots a connection): a slot is held from the send until its flag "
    "comes back, so a connection moves at most 8 transfers per round trip";
const char* const nvlink_eff = "NVIDIA/nccl src/graph/topo.h SM90_NVLINK_BW 20.6 GB/s a link against 25 GB/s peak (NVLink 4)";
const char* const net_eff = "NVIDIA/nccl src/graph/search.cc sm90SpeedArrayInter[0] 48 GB/s against a 400 Gb/s NIC's 50";
const char* const builtin_error =
    "docs/time.md, \"Calibration\" (bench/calibration_table.py): the built-in constants' median error on the 54 held-out rows "
    "of five machines, each predicted as what NCCL ran, 31.0 %; a calibration of the user's machine replaces it with its own held-out median";
const char* const rate_src =
    "not bounded by the built-in constants: the tables of NCCL's algorithms that compare, optimize and tune time carry a channel's "
    "bytes in a few pieces, not in NCCL's chunks (NCCL_BUFFSIZE / NCCL_STEPS a Simple tree step, src/enqueue.cc:1723-1726 at "
    "v2.21.5-1), and a piece would wait its bytes at the rate at every hop; `collsched calibrate` fits it on tables in NCCL's "
    "chunks (docs/time.md, \"Calibration\": 19.8 GB/s on GCP A3 Mega)";
const char* const switch_eff =
    "1: the machine's switch efficiency (NCCL's nvlsEfficiency) applies; a calibration replaces it (docs/time.md)";

const char* const ll_caps_src =
    "NVIDIA/nccl src/graph/tuning.cc:327 ring LL busBw = min(llMaxBw, busBw x .5) and :332 the tree's, llMaxBws :177-183: "
    "each GPU sends at most llMaxBw (nccl_protocol_caps)";
const char* const ll128_caps_src =
    "NVIDIA/nccl src/graph/tuning.cc:328-329 ring LL128 busBw = min(busBw x .92, nChannels x perChMaxRingLL128Bw), "
    "perChMaxRingLL128Bws :184-189: each network channel (one NCCL channel a NIC) moves at most perChMaxRingLL128Bw (nccl_protocol_caps)";

/// One NCCL-style protocol row: launch, hop latencies by class, the slots' message cost, efficiencies.
ProtocolRow nccl_row(Protocol p, double launch_us, std::string_view launch_src, double grain, std::string grain_src) {
    const ProtocolCost pc = protocol_cost(p);
    ProtocolRow r;
    r.protocol = p;
    r.launch = {launch_us * us, std::string(launch_src)};
    r.hop[idx_of(LinkClass::box)] = {pc.box_s, hw_lat_nvl};
    r.hop[idx_of(LinkClass::network)] = {pc.network_s, hw_lat_net};
    r.hop[idx_of(LinkClass::in_switch)] = {pc.box_s, hw_lat_nvl};
    // the hop a slot waits for is the whole hardware latency, LL's included
    const double rt_box = 2 * (pc.box_s + 0.6 * us) / 8, rt_net = 2 * (pc.network_s + 2.7 * us) / 8;
    r.message[idx_of(LinkClass::box)] = {rt_box, steps_src};
    r.message[idx_of(LinkClass::network)] = {rt_net, steps_src};
    r.message[idx_of(LinkClass::in_switch)] = {rt_box, steps_src};
    r.efficiency[idx_of(LinkClass::box)] = {20.6 / 25.0, nvlink_eff};
    r.efficiency[idx_of(LinkClass::network)] = {48.0 / 50.0, net_eff};
    r.efficiency[idx_of(LinkClass::in_switch)] = {1.0, switch_eff};
    r.grain = {grain, std::move(grain_src)};
    r.rate = {0, rate_src};
    if (p == Protocol::ll) r.caps = {1, ll_caps_src};
    if (p == Protocol::ll128) r.caps = {1, ll128_caps_src};
    return r;
}

ExecutorModel make_ideal() {
    ExecutorModel m;
    m.kind = ExecutorKind::ideal;
    m.name = "ideal";
    m.note = "the network's share: links at peak, no launch, synchronization or message cost (the model of the proven bounds)";
    ProtocolRow r;
    r.protocol = Protocol::none;
    for (auto& e : r.efficiency) e = {1.0, "peak"};
    m.protocols.push_back(r);
    return m;
}

ExecutorModel make_nccl() {
    ExecutorModel m;
    m.kind = ExecutorKind::nccl;
    m.name = "nccl";
    m.note = "stock NCCL running its own algorithms (ring, tree, NVLS) as its graph files and tuner choose them";
    const std::string grain_simple =
        "NVIDIA/nccl src/device/all_reduce.h runRing: a Simple chunk is rounded up to (nthreads - WARP_SIZE) x 8 bytes, "
        "3,840 at NCCL_SIMPLE_MAX_NTHREADS 512";
    const std::string grain_ll =
        "NVIDIA/nccl src/device/prims_ll.h:253-261 LLGenericOp: divUp(nelem, EltPerLine) lines, one 16-byte line "
        "(src/include/device.h:75-88) for each 8 data bytes, only the lines its data fill";
    const std::string grain_ll128 =
        "NVIDIA/nccl src/device/prims_ll128.h:292-315 GenericOp: a warp moves whole slices of WireWordPerSlice = 32 x 8 "
        "eight-byte words (2,048 bytes on the wire, 1,920 of data; recvReduceSendCopy stores every word of it), however "
        "little data it holds";
    m.protocols.push_back(nccl_row(Protocol::simple, 8.4, base_lat, 3840, grain_simple));
    m.protocols.push_back(nccl_row(Protocol::ll128, 14.0, base_lat, 1920, grain_ll128));
    m.protocols.push_back(nccl_row(Protocol::ll, 6.6, base_lat, 8, grain_ll));
    m.limits = {0, 0, 64, "NVIDIA/nccl src/include/device.h MAXCHANNELS 64"};
    m.error = {0.310, builtin_error};
    return m;
}

ExecutorModel make_msccl() {
    // The MSCCL executor (Azure/msccl-executor-nccl) is NCCL with an interpreter of MSCCL-IR: its
    // kernels, launch and connections are NCCL's, so are its protocols' costs.
    ExecutorModel m = make_nccl();
    m.kind = ExecutorKind::msccl;
    m.name = "msccl";
    m.note = "the MSCCL executor (msccl-executor-nccl) running an MSCCL-IR program on NCCL's primitives and connections";
    for (ProtocolRow& r : m.protocols) r.launch.source += " (msccl-executor-nccl launches NCCL's kernel)";
    m.limits = {256, 32, 64,
                "Azure/msccl-executor-nccl src/include/msccl/msccl_struct.h MSCCL_MAX_NUM_STEPS 256, "
                "MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL 32, MAXCHANNELS 64"};
    return m;
}

ExecutorModel make_mscclpp() {
    ExecutorModel m;
    m.kind = ExecutorKind::mscclpp;
    m.name = "mscclpp";
    m.note = "the MSCCL++ executor running an execution plan: MemoryChannel puts inside a box, PortChannel (CPU proxy) across";
    const char* const put = "measurements.csv rows 30-32 (microsoft/mscclpp docs/tutorials/03-memory-channel.md): put + signal + wait, "
                            "6.26 us at zero bytes by the line through 1 MiB and 128 MiB";
    const char* const port = "measurements.csv rows 39-41 (microsoft/mscclpp docs/tutorials/04-port-channel.md): putWithSignal + wait "
                             "through the proxy, 20.5 us at 1 KB";
    const char* const pkt = "measurements.csv rows 36-38 (docs/tutorials/03-memory-channel.md): putPackets, 4.07 us at 1 KB";
    const char* const launch = "measurements.csv row 20 (perf_ndmv5.jsonl allreduce6 at 24 KiB, 6.18 us) less one LL packet round (4.07 us)";
    const char* const put_bw = "measurements.csv row 32: 344.8 GB/s a direction at 128 MiB over NVLink 4's 450";
    auto row = [&](Protocol p, double box_msg, const char* box_src, double wire_eff_box, const char* eff_src, double grain,
                   const char* grain_src) {
        ProtocolRow r;
        r.protocol = p;
        r.launch = {2.1 * us, launch};
        // a plan's thread block runs its ops in order: the measured round is its connection's hold per transfer (a block's own
        // channel and QP to each peer: timing_costs.cpp connections_per_channel)
        r.message[idx_of(LinkClass::box)] = {box_msg, box_src};
        r.message[idx_of(LinkClass::network)] = {20.5 * us, port};
        r.message[idx_of(LinkClass::in_switch)] = {box_msg, box_src};
        r.efficiency[idx_of(LinkClass::box)] = {wire_eff_box, eff_src};
        r.efficiency[idx_of(LinkClass::network)] = {48.0 / 50.0, net_eff};
        r.efficiency[idx_of(LinkClass::in_switch)] = {1.0, switch_eff};
        r.grain = {grain, grain_src};
        r.rate = {0, "not bounded: a thread block's copy is bounded by the link (rows 31-32)"};
        r.proxy = {1.0 * us, "assumed, not measured (rows 39-41 time the whole round trip): one trigger's turn on the GPU's one proxy "
                             "thread, a FIFO poll, ibv_post_send of the write and of the signal's atomic, the pop (microsoft/mscclpp "
                             "src/core/proxy.cc:60-85, port_channel.cc:117-154; executor.cc:145-154 one ProxyService an executor)"};
        return r;
    };
    m.error = {0.310, "not validated on MSCCL++ runs of collsched's tables; the nccl model's figure (docs/time.md, \"Calibration\")"};
    m.protocols.push_back(row(Protocol::simple, 6.26 * us, put, 344.8 / 450.0, put_bw, 16,
                              "microsoft/mscclpp MemoryChannel::put: 16-byte aligned copies (include/mscclpp/memory_channel_device.hpp)"));
    // LL packets: 131.7 GB/s at 128 MiB (row 38) is the wire's half of 263.5: efficiency 263.5 / 450 on the wire
    m.protocols.push_back(row(Protocol::ll, 4.07 * us, pkt, 263.5 / 450.0, "measurements.csv row 38: 131.7 GB/s of data, 263.5 on the wire",
                              8, "microsoft/mscclpp include/mscclpp/packet_device.hpp LL16Packet: 8 data bytes"));
    return m;
}

}  // namespace

std::string_view to_string(ExecutorKind k) {
    for (const ExecutorName& e : executor_table)
        if (e.kind == k) return e.name;
    return "?";
}

std::optional<ExecutorKind> parse_executor(std::string_view s) {
    for (const ExecutorName& e : executor_table)
        if (e.name == s) return e.kind;
    return std::nullopt;
}

std::vector<std::string_view> executor_names() {
    std::vector<std::string_view> v;
    for (const ExecutorName& e : executor_table) v.push_back(e.name);
    return v;
}

const ProtocolRow& ExecutorModel::row(Protocol p) const {
    COLLSCHED_ASSERT(!protocols.empty());
    for (const ProtocolRow& r : protocols)
        if (r.protocol == p) return r;
    return protocols.front();
}

const ExecutorModel& builtin_executor(ExecutorKind k) {
    static const ExecutorModel ideal = make_ideal(), nccl = make_nccl(), mscclpp = make_mscclpp(), msccl = make_msccl();
    switch (k) {
        case ExecutorKind::ideal: return ideal;
        case ExecutorKind::nccl: return nccl;
        case ExecutorKind::mscclpp: return mscclpp;
        case ExecutorKind::msccl: return msccl;
    }
    return ideal;
}

bool ExecutorCosts::ideal() const {
    ExecutorCosts none;
    none.kind = kind;
    none.protocol = protocol;
    return *this == none;
}

ExecutorCosts executor_costs(const ExecutorModel& m, Protocol p) {
    const ProtocolRow& r = m.row(p);
    ExecutorCosts c;
    c.kind = m.kind;
    c.protocol = r.protocol;
    c.wire = protocol_cost(r.protocol).wire;
    c.launch = r.launch.value;
    for (std::size_t k = 0; k < link_classes; ++k) {
        c.hop[k] = r.hop[k].value;
        c.message[k] = r.message[k].value;
        c.efficiency[k] = r.efficiency[k].value;
    }
    c.grain = r.grain.value;
    c.rate = r.rate.value;
    c.proxy = r.proxy.value;
    c.nccl_caps = r.caps.value > 0;
    return c;
}

ExecutorCosts protocol_costs(Protocol p) {
    const ProtocolCost pc = protocol_cost(p);
    ExecutorCosts c;
    c.protocol = p;
    c.wire = pc.wire;
    c.hop = {pc.box_s, pc.network_s, pc.box_s};
    return c;
}

ExecutorModel calibrated(const ExecutorModel& base, const Calibration& cal) {
    ExecutorModel m = base;
    const std::string src = fmt::format("calibrated for {} on {}", cal.machine.empty() ? "this machine" : cal.machine,
                                        cal.fitted_on.empty() ? "the user's measurements" : cal.fitted_on);
    m.calibration = src;
    if (cal.heldout_median) m.error = {*cal.heldout_median, "the held-out median error of the fit " + src.substr(11)};
    for (const Calibration::Entry& e : cal.entries) {
        ProtocolRow* row = nullptr;
        for (ProtocolRow& r : m.protocols)
            if (r.protocol == e.protocol) row = &r;
        if (!row) continue;
        if (e.launch) row->launch = {*e.launch, src};
        for (std::size_t k = 0; k < link_classes; ++k) {
            if (e.efficiency[k]) row->efficiency[k] = {*e.efficiency[k], src};
            if (e.hop[k]) row->hop[k] = {*e.hop[k], src};
            if (e.message[k]) row->message[k] = {*e.message[k], src};
        }
        if (e.rate) row->rate = {*e.rate, src};
    }
    return m;
}

namespace {

const std::array<std::string_view, link_classes> class_keys = {"box", "network", "switch"};

}  // namespace

Calibration read_calibration(std::string_view text, std::string_view file) {
    const json_tree::Value doc = json_tree::parse(text, file);
    auto fail = [&](const json_tree::Value& at, const std::string& what) {
        throw InputError(fmt::format("{}:{}:{}: {}", file, at.line, at.col, what));
    };
    auto number = [&](const json_tree::Value& x, double lo, double hi) {
        double v = 0;
        const auto [end, ec] = std::from_chars(x.text.data(), x.text.data() + x.text.size(), v);
        if (x.kind != json_tree::Kind::number || ec != std::errc{} || end != x.text.data() + x.text.size() || !std::isfinite(v) || v < lo ||
            v > hi)
            fail(x, fmt::format("expected a number in [{}, {}]", lo, hi));
        return v;
    };
    auto object = [&](const json_tree::Value& x, std::string_view what) {
        if (x.kind != json_tree::Kind::object) fail(x, fmt::format("{} must be an object", what));
        for (const json_tree::Member& m : x.members)
            if (x.count(m.first) > 1) fail(m.second, fmt::format("\"{}\" given twice", m.first));
    };
    object(doc, "a calibration");
    const json_tree::Value* format = doc.find("format");
    if (!format || format->kind != json_tree::Kind::string || format->text != "collsched.calibration/1")
        fail(format ? *format : doc, "expected \"format\": \"collsched.calibration/1\"");
    Calibration c;
    for (const json_tree::Member& m : doc.members) {
        const json_tree::Value& v = m.second;
        if (m.first == "format") continue;
        if (m.first == "executor") {
            const std::optional<ExecutorKind> k = v.kind == json_tree::Kind::string ? parse_executor(v.text) : std::nullopt;
            if (!k || *k == ExecutorKind::ideal) fail(v, "\"executor\" must be \"nccl\", \"mscclpp\" or \"msccl\"");
            c.executor = *k;
        } else if (m.first == "machine" || m.first == "fitted_on") {
            if (v.kind != json_tree::Kind::string) fail(v, fmt::format("\"{}\" must be a string", m.first));
            (m.first == "machine" ? c.machine : c.fitted_on) = v.text;
        } else if (m.first == "heldout_median") {
            c.heldout_median = number(v, 0, 10);
        } else if (m.first == "protocols") {
            object(v, "\"protocols\" ({\"Simple\": {...}, \"LL\": {...}})");
            for (const json_tree::Member& pm : v.members) {
                Calibration::Entry e;
                const std::optional<Protocol> p = parse_protocol(pm.first);
                if (!p) fail(pm.second, fmt::format("unknown protocol \"{}\" (LL, LL128, Simple)", pm.first));
                e.protocol = *p;
                object(pm.second, "a protocol's constants");
                for (const json_tree::Member& cm : pm.second.members) {
                    if (cm.first == "launch_us") {
                        e.launch = number(cm.second, 0, 1e6) * us;
                    } else if (cm.first == "rate_gbps") {  // 0: not bounded
                        const double gbps = number(cm.second, 0, 1e6);
                        if (gbps != 0 && gbps < 0.01)
                            fail(cm.second, fmt::format("rate_gbps {} is neither 0 (not bounded) nor at least 0.01 (10 MB/s a connection)", gbps));
                        e.rate = gbps * 1e9;
                    } else if (cm.first == "efficiency" || cm.first == "hop_us" || cm.first == "message_us") {
                        object(cm.second, fmt::format("\"{}\" ({{\"box\": x, \"network\": x, \"switch\": x}})", cm.first));
                        for (const json_tree::Member& lm : cm.second.members) {
                            auto it = std::find(class_keys.begin(), class_keys.end(), lm.first);
                            if (it == class_keys.end()) fail(lm.second, fmt::format("unknown link class \"{}\" (box, network, switch)", lm.first));
                            const std::size_t k = static_cast<std::size_t>(it - class_keys.begin());
                            if (cm.first == "efficiency") e.efficiency[k] = number(lm.second, 1e-3, 1);
                            else if (cm.first == "hop_us") e.hop[k] = number(lm.second, 0, 1e6) * us;
                            else e.message[k] = number(lm.second, 0, 1e6) * us;
                        }
                    } else {
                        fail(cm.second, fmt::format("unknown key \"{}\" (launch_us, efficiency, hop_us, message_us, rate_gbps)", cm.first));
                    }
                }
                c.entries.push_back(e);
            }
        } else {
            fail(v, fmt::format("unknown key \"{}\" (format, executor, machine, fitted_on, heldout_median, protocols)", m.first));
        }
    }
    return c;
}

std::string write_calibration(const Calibration& c) {
    nlohmann::ordered_json j;
    j["format"] = "collsched.calibration/1";
    j["executor"] = std::string(to_string(c.executor));
    j["machine"] = c.machine;
    j["fitted_on"] = c.fitted_on;
    if (c.heldout_median) j["heldout_median"] = *c.heldout_median;
    nlohmann::ordered_json ps = nlohmann::ordered_json::object();
    for (const Calibration::Entry& e : c.entries) {
        nlohmann::ordered_json p = nlohmann::ordered_json::object();
        if (e.launch) p["launch_us"] = *e.launch / us;
        nlohmann::ordered_json eff = nlohmann::ordered_json::object(), hop = nlohmann::ordered_json::object(),
                               msg = nlohmann::ordered_json::object();
        for (std::size_t k = 0; k < link_classes; ++k) {
            if (e.efficiency[k]) eff[std::string(class_keys[k])] = *e.efficiency[k];
            if (e.hop[k]) hop[std::string(class_keys[k])] = *e.hop[k] / us;
            if (e.message[k]) msg[std::string(class_keys[k])] = *e.message[k] / us;
        }
        if (!eff.empty()) p["efficiency"] = eff;
        if (!hop.empty()) p["hop_us"] = hop;
        if (!msg.empty()) p["message_us"] = msg;
        if (e.rate) p["rate_gbps"] = *e.rate / 1e9;
        ps[std::string(to_string(e.protocol))] = p;
    }
    j["protocols"] = ps;
    return j.dump(2) + "\n";
}

}  // namespace collsched
