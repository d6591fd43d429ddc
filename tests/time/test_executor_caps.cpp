// NCCL's caps on LL and LL128 in the executor model (docs/time.md, "Executors"): each GPU sends and
// receives at most llMaxBw under LL, each network channel moves at most perChMaxRingLL128Bw under
// LL128; NCCL's own ring timed as a table on the nccl executor then meets NCCL's own model's bus
// bandwidth where the cap binds, and is faster without the cap.
#include <algorithm>
#include <map>
#include <vector>

#include <doctest/doctest.h>

#include "compiler/table/builder.hpp"
#include "runtime/executor/executor.hpp"
#include "runtime/timing.hpp"
#include "tests/approx.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/constructions/nccl/nccl.hpp"

using namespace collsched;

namespace {

std::shared_ptr<const Topology> caps_machine(const std::string& name, const std::string& args) {
    static const test::Scratch scratch("executor_caps");
    const std::string out = scratch.file(name + ".json");
    const auto w = test::run("machine " + args + " -o " + out);
    REQUIRE(w.code == 0);
    return Topology::parse("graph:" + out);
}

SendTable caps_ring(const std::shared_ptr<const Topology>& topo) {
    return nccl::nccl_baseline(topo, Collective::parse("allreduce", *topo), topo->default_model(), "ring").table;
}

/// The nccl executor's time of `t` at `size` in protocol p, NCCL's caps charged or not.
double caps_time(const SendTable& t, double size, Protocol p, bool caps, bool synchronous = false) {
    TimeOptions o{size, std::nullopt};
    ExecutorCosts c = executor_costs(builtin_executor(ExecutorKind::nccl), p);
    c.nccl_caps = caps;
    o.executor = c;
    const TimePrediction r = predict_time(t, o);
    return synchronous ? r.synchronous : r.asynchronous;
}

double nccl_model(const Topology& topo, nccl::Protocol p, double size) {
    return *nccl::nccl_model_time(nccl::nccl_system(topo), CollectiveKind::allreduce, nccl::Algorithm::ring, p, size);
}

}  // namespace

TEST_CASE("executor caps: the machine as NCCL's tuner reads it, and its caps") {
    const CapMachine h2 = cap_machine(*Topology::parse("graph:" + test::source("schedules/machines/h100rail2x8.json")));
    CHECK(h2.generation == 2);
    CHECK(h2.boxes == 2);
    CHECK(!h2.amd);
    const CapMachine a1 = cap_machine(*Topology::parse("graph:" + test::source("schedules/machines/dgx_a100.json")));
    CHECK(a1.generation == 1);
    CHECK(a1.boxes == 1);
    CHECK(a1.amd);
    // tuning.cc llMaxBws: Hopper one box 141, two boxes on Intel 39, four on AMD 19; perChMaxRingLL128Bws Hopper 36.7
    CHECK(nccl_protocol_caps(Protocol::ll, {2, 1, false}).gpu == test::rel(141e9));
    CHECK(nccl_protocol_caps(Protocol::ll, {2, 2, false}).gpu == test::rel(39e9));
    CHECK(nccl_protocol_caps(Protocol::ll, {1, 4, true}).gpu == test::rel(19e9));
    CHECK(nccl_protocol_caps(Protocol::ll128, {2, 2, false}).network_channel == test::rel(36.7e9));
    CHECK(nccl_protocol_caps(Protocol::ll128, {2, 2, false}).gpu == 0);
    CHECK(nccl_protocol_caps(Protocol::simple, {2, 2, false}) == ProtocolCaps{});
    // the built-in rows: NCCL's kernels charge the caps on LL and LL128, not Simple; MSCCL++ none
    CHECK(executor_costs(builtin_executor(ExecutorKind::nccl), Protocol::ll).nccl_caps);
    CHECK(executor_costs(builtin_executor(ExecutorKind::msccl), Protocol::ll128).nccl_caps);
    CHECK(!executor_costs(builtin_executor(ExecutorKind::nccl), Protocol::simple).nccl_caps);
    CHECK(!executor_costs(builtin_executor(ExecutorKind::mscclpp), Protocol::ll).nccl_caps);
}

TEST_CASE("executor caps: LL on one H100 box runs at llMaxBw, NCCL's own model's bus bandwidth") {
    // NCCL's ring LL on one box: busBw = min(llMaxBw 141, 12 channels x 30 x .5 = 180) = 141 GB/s
    const auto topo = caps_machine("h100", "dgx-h100");
    const SendTable ring = caps_ring(topo);
    const double size = 1 << 30;
    const double capped = caps_time(ring, size, Protocol::ll, true), free = caps_time(ring, size, Protocol::ll, false);
    const double nccl = nccl_model(*topo, nccl::Protocol::ll, size);
    INFO("capped ", capped, " uncapped ", free, " NCCL's model ", nccl);
    CHECK(free < 0.9 * capped);
    CHECK(std::abs(capped / nccl - 1) < 0.03);
    // the synchronous time charges the cap too
    CHECK(caps_time(ring, size, Protocol::ll, true, true) > 1.05 * caps_time(ring, size, Protocol::ll, false, true));
}

TEST_CASE("executor caps: across two H100 boxes LL runs at 39 GB/s a GPU and LL128 at 36.7 a NIC channel") {
    const auto topo = Topology::parse("graph:" + test::source("schedules/machines/h100rail2x8.json"));
    const SendTable ring = caps_ring(topo);
    const double size = 1 << 30;
    // LL: llMaxBws[Intel][2 boxes] = 39 GB/s against 8 channels x 48 x .5 = 192
    const double ll = caps_time(ring, size, Protocol::ll, true);
    INFO("LL capped ", ll, " uncapped ", caps_time(ring, size, Protocol::ll, false), " NCCL ", nccl_model(*topo, nccl::Protocol::ll, size));
    CHECK(caps_time(ring, size, Protocol::ll, false) < 0.5 * ll);
    // within 15 %: NCCL's model divides the cap evenly over the 8 rings; the time model runs each GPU's sends first come
    // first served, and the ring that crosses the NIC (350 us a transfer there, 215 at the cap) waits behind the others
    CHECK(ll > 0.97 * nccl_model(*topo, nccl::Protocol::ll, size));
    CHECK(ll < 1.15 * nccl_model(*topo, nccl::Protocol::ll, size));
    // LL128: min(8 x 48 x .92 = 353, 8 channels x 36.7 = 293.6)
    const double ll128 = caps_time(ring, size, Protocol::ll128, true);
    const double ll128_nccl = nccl_model(*topo, nccl::Protocol::ll128, size);
    INFO("LL128 capped ", ll128, " uncapped ", caps_time(ring, size, Protocol::ll128, false), " NCCL ", ll128_nccl);
    CHECK(caps_time(ring, size, Protocol::ll128, false) < 0.9 * ll128);
    CHECK(std::abs(ll128 / ll128_nccl - 1) < 0.03);
}



TEST_CASE("executor connections: NCCL's rings each pay their own message cost, as NCCL's channels do") {
    // h100rail 2 x 8: NCCL's 8 rings share each GPU's NVLink channel to the next GPU; every ring is an
    // NCCL channel with its own connection, slots and thread block, so each ring's transfer holds its
    // connection for the message cost while the channel carries the other rings' bytes. Charged on the
    // channel, the 8 rings' LL128 messages took turns: 81 us at 1 MiB (NCCL's model 47.9), LL 2.1x faster
    const auto topo = Topology::parse("graph:" + test::source("schedules/machines/h100rail2x8.json"));
    const SendTable ring = nccl::nccl_baseline(topo, Collective::parse("allgather", *topo), topo->default_model(), "ring").table;
    const double size = 1 << 20;
    const double ll128 = caps_time(ring, size, Protocol::ll128, true), ll = caps_time(ring, size, Protocol::ll, true);
    const double nccl = *nccl::nccl_model_time(nccl::nccl_system(*topo), CollectiveKind::allgather, nccl::Algorithm::ring,
                                               nccl::Protocol::ll128, size);
    INFO("LL128 ", ll128, " LL ", ll, " NCCL's model LL128 ", nccl);
    // 61.0 us: each ring still pays its 15 hops' messages in turn, and its PXN relay forwards the copy from the ring
    // (runtime/timing.cpp relays_copy)
    CHECK(ll128 < 1.3 * nccl);
    CHECK(ll128 / ll < 1.75);  // 1.67 (NCCL's model: 0.99)
    // one connection a channel (the MSCCL executor, NCCL's constants): the rings' messages take turns, both timings
    TimeOptions o{size, std::nullopt};
    o.executor = executor_costs(builtin_executor(ExecutorKind::msccl), Protocol::ll128);
    const TimePrediction one = predict_time(ring, o);
    CHECK(one.asynchronous > 1.2 * ll128);  // 78.1 us, 1.28
    CHECK(one.synchronous > 1.2 * caps_time(ring, size, Protocol::ll128, true, true));
}

TEST_CASE("executor connections: MSCCL++'s thread blocks each have their own memory channel to a peer") {
    // microsoft/mscclpp executor.cc:287-313 (one connection, its own QP, per channel entry), execution_plan.cc:395-411
    // (a thread block's channels), executor.cc:145-154 (one ProxyService an executor); docs/time.md, "Executors".
    // NCCL's 8 rings on h100rail 2 x 8 put 8 transfers a step on each GPU's NVLink channel to the next GPU, in 15 steps
    const auto topo = Topology::parse("graph:" + test::source("schedules/machines/h100rail2x8.json"));
    const SendTable ring = nccl::nccl_baseline(topo, Collective::parse("allgather", *topo), topo->default_model(), "ring").table;
    TimeOptions o{1 << 20, std::nullopt};
    o.executor = executor_costs(builtin_executor(ExecutorKind::mscclpp), Protocol::simple);
    o = with_network_class(*topo, o);
    const double box = o.executor->message[idx_of(LinkClass::box)];
    const TimePrediction t = predict_time(ring, o);
    // one connection a channel held 120 messages in turn on every busy NVLink channel (751 us at least); a block's own
    // connection pays its ring's 15 in turn, the 8 rings side by side (asynchronous 315 us, synchronous 458 us: the
    // two NIC hops' 20.5 us each, in every ring)
    CHECK(t.asynchronous < 0.5 * 120 * box);
    CHECK(t.synchronous < 0.7 * 120 * box);
}

TEST_CASE("executor connections: MSCCL++'s port channels' triggers of one GPU take turns on its one proxy, their messages overlap") {
    // An alltoall on 3 GPUs: 0 -> 1 and 0 -> 2 over InfiniBand (port channels: the network class), 2 -> 1 over NVLink. GPU
    // 0 puts m(0,1) to 1 and m(0,2) to 2 through its proxy (executor.cc:145-154 one ProxyService; proxy.cc:60-85 one
    // thread): the second trigger starts the proxy's turn (1 us) after the first, not a message (20.5 us) after. GPU 2
    // puts m(2,1) and m(2,0) to 1 on one NVLink channel, each on its own thread block's channel: both at once
    const test::Scratch scratch("mscclpp_proxy");
    const std::string graph = scratch.file("g.json", R"({"processors": 3, "alpha": "1 us",
 "link_types": {"nv": {"bandwidth": "400 GB/s"}, "ib": {"bandwidth": "50 GB/s"}},
 "edges": [[0, 1, 1, "ib"], [0, 2, 1, "ib"], [2, 1, 1, "nv"]]})");
    auto topo = Topology::parse("graph:" + graph);
    TableBuilder tb(topo, Model{}, Collective::parse("alltoall", *topo));
    auto m = [&](const char* text) { return *tb.messages().parse(text); };
    tb.hop(1, *topo->find_channel(Node{0}, Node{1}), m("m(0,1)"));
    tb.hop(1, *topo->find_channel(Node{0}, Node{2}), m("m(0,2)"));
    tb.hop(1, *topo->find_channel(Node{2}, Node{1}), m("m(2,1)"));
    tb.hop(1, *topo->find_channel(Node{2}, Node{1}), m("m(2,0)"));
    const SendTable t = std::move(tb).finish();
    TimeOptions o{3072, std::nullopt};
    o.executor = executor_costs(builtin_executor(ExecutorKind::mscclpp), Protocol::simple);
    const ExecutorCosts& e = *o.executor;
    const TimePrediction p = predict_time(t, o);
    REQUIRE(p.transfers.size() == 4);
    std::vector<double> port, memory;
    for (std::size_t j = 0; j < 4; ++j)
        (topo->channel(t.transfers[j].channel).from == Node{0} ? port : memory).push_back(p.transfers[j].start);
    REQUIRE(port.size() == 2);
    REQUIRE(memory.size() == 2);
    // the model's 1 us (docs/time.md, "Executors"); without the proxy both start at 0 (two channels, no group)
    CHECK(e.proxy == doctest::Approx(1e-6));
    CHECK(std::abs(port[1] - port[0]) == doctest::Approx(e.proxy).epsilon(1e-6));
    CHECK(e.proxy < 0.1 * e.message[idx_of(LinkClass::network)]);
    CHECK(std::abs(memory[1] - memory[0]) < 0.01 * e.message[idx_of(LinkClass::box)]);  // the second waits for the first's bytes only
}
