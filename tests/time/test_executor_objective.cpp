// Optimizing on an executor (docs/time.md, "Optimizing on an executor"): times in the fastest of
// the executor's protocols, the grain as a floor on what a transfer holds, ties inside the
// executor model's error, winners the executor runs (their exporter's check), `--format` writing
// each size's winner in the executor's format, and the usage rules.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/io/table_io.hpp"
#include "runtime/compare.hpp"
#include "runtime/executor/executor.hpp"
#include "verifier/constructions/compose/allreduce.hpp"
#include "verifier/constructions/compose/nvls.hpp"
#include "verifier/time/candidates.hpp"
#include "verifier/time/executor_check.hpp"
#include "verifier/time/constructions.hpp"
#include "tests/approx.hpp"
#include "tests/tools/cli_run.hpp"

using namespace collsched;

namespace {

SendTable on_executor_ring() {
    static const test::Scratch scratch("on_executor_ring");
    const std::string out = scratch.file("ring.json");
    const auto c = test::run("compile " + test::source("schedules/nccl/ring_allgather_dgx_a100.sched") + " -o " + out);
    REQUIRE(c.code == 0);
    return read_table(out);
}

std::string on_executor_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const std::string on_executor_machine = "--topology graph:" + test::source("schedules/machines/h100rail2x8.json");

}  // namespace

TEST_CASE("executor objective: the basis tries every protocol of the executor and keeps the fastest") {
    const SendTable t = on_executor_ring();
    const TimingPlan plan(t);
    const TimeBasis ideal;
    CHECK(ideal.protocols() == std::vector<Protocol>{Protocol::none});
    CHECK(ideal.executor_name() == "ideal");
    const TimeBasis nccl{std::nullopt, builtin_executor(ExecutorKind::nccl)};
    REQUIRE(nccl.protocols().size() == 3);
    for (double m : {1024.0, 1048576.0, 1073741824.0}) {
        const BasisTime best = time_on(plan, m, nccl, TimeKind::asynchronous);
        double least = 1e300;
        for (Protocol p : nccl.protocols()) least = std::min(least, plan.asynchronous(nccl.at(m, p)));
        CHECK(best.seconds == least);
        CHECK(plan.asynchronous(nccl.at(m, best.protocol)) == best.seconds);
        CHECK(best.other == plan.synchronous(nccl.at(m, best.protocol)));
        // the ideal basis is the plain prediction, byte for byte
        CHECK(time_on(plan, m, ideal, TimeKind::asynchronous).seconds == plan.asynchronous(TimeOptions{m, std::nullopt}));
    }
    // LL's latency wins small, Simple's bandwidth large
    CHECK(time_on(plan, 1024, nccl, TimeKind::asynchronous).protocol == Protocol::ll);
    CHECK(time_on(plan, 1073741824.0, nccl, TimeKind::asynchronous).protocol == Protocol::simple);
    // a run given a time it cannot end below stops (+inf) once an event is later, and only then: at its own time it runs
    // to the end, bit for bit (time_on and the constructions pass the best protocol's time so far)
    for (double m : {1024.0, 1048576.0, 1073741824.0})
        for (Protocol p : nccl.protocols()) {
            const TimeOptions o = nccl.at(m, p);
            const double whole = plan.asynchronous(o);
            CHECK(plan.asynchronous(o, whole) == whole);
            CHECK(plan.asynchronous(o, std::numeric_limits<double>::infinity()) == whole);
            CHECK(std::isinf(plan.asynchronous(o, std::nextafter(whole, 0.0))));
            CHECK(std::isinf(plan.asynchronous(o, whole / 2)));
            const TimeOptions none{m, std::nullopt};
            CHECK(plan.asynchronous(none, plan.asynchronous(none)) == plan.asynchronous(none));
            CHECK(std::isinf(plan.asynchronous(none, std::nextafter(plan.asynchronous(none), 0.0))));
        }
}

TEST_CASE("executor objective: the times and protocols the constructions hand over are time_on's of a fresh plan (on mscclpp, of the plan written)") {
    // on an executor gather_candidates takes the constructions' times with their protocols (not run again in every
    // protocol): every kept table's time, other time and protocol equal time_on's on a plan of its table, bit for bit
    auto topo = Topology::parse("graph:" + test::source("schedules/machines/h100rail2x8.json"));
    const SynthInstance in{topo, topo->default_model(), Collective::parse("allreduce", *topo)};
    NamedProvider constructions;
    for (const NamedProvider& p : construction_providers())
        if (p.name == "constructions for time") constructions = p;
    REQUIRE(constructions.provide);
    // (on nccl the constructions' tables are not NCCL graphs: none is run, none kept or left unchecked)
    std::size_t compared = 0;
    for (ExecutorKind kind : {ExecutorKind::msccl, ExecutorKind::mscclpp}) {
        CAPTURE(to_string(kind));
        CandidateQuery q{in, {65536, 16777216, 1073741824}};
        q.executor = builtin_executor(kind);
        q.deadline = Clock::now() + std::chrono::seconds(120);
        // the tables as the provider builds them (gather_candidates frees those it leaves unchecked)
        std::vector<TimeCandidate> built;
        std::vector<std::string> notes;
        constructions.provide(q, built, notes);
        std::vector<TimeCandidate> timed;
        const std::vector<TimeCandidate> kept = gather_candidates(q, {constructions}, notes, &timed);
        timed.insert(timed.end(), kept.begin(), kept.end());
        for (const TimeCandidate& c : timed) {
            CAPTURE(c.name);
            // on mscclpp a table comes twice: its plan with one chain a thread block at a time and with 4 (with_rows)
            const std::string base = c.mscclpp_chains_a_block == 1 ? c.name : c.name.substr(0, c.name.rfind(", "));
            const auto b = std::ranges::find_if(built, [&](const TimeCandidate& x) { return x.name == base; });
            if (b == built.end()) continue;
            ++compared;
            const TimingPlan plan(*b->table);
            REQUIRE(c.protocols.size() == q.sizes.size());
            // on mscclpp a table checked by the walk is timed as its written plan in the protocol given (time_as_written: the
            // plan read back as a table, timed in that protocol alone); one never checked keeps its table's times
            const auto table_at = [&](std::size_t i) { return time_on(plan, q.sizes[i], q.basis_of(*b), TimeKind::asynchronous); };
            const bool written = kind == ExecutorKind::mscclpp && (c.seconds[0] != table_at(0).seconds || c.other[0] != table_at(0).other);
            for (std::size_t i = 0; written && i < q.sizes.size(); ++i) {
                MscclppOptions o;
                o.proto = std::string(to_string(c.protocols[i]));
                o.chains_a_block = c.mscclpp_chains_a_block;
                std::optional<SendTable> read_back;
                o.read_back = &read_back;
                (void)table_to_mscclpp(*b->table, o);
                REQUIRE(read_back);
                TimeBasis basis = q.basis_of(*b);
                std::erase_if(basis.executor->protocols, [&](const ProtocolRow& r) { return r.protocol != c.protocols[i]; });
                const BasisTime t = time_on(TimingPlan(*read_back), q.sizes[i], basis, TimeKind::asynchronous);
                CHECK(c.seconds[i] == t.seconds);
                CHECK(c.other[i] == t.other);
            }
            for (std::size_t i = 0; !written && i < q.sizes.size(); ++i) {
                const BasisTime t = table_at(i);
                CHECK(c.seconds[i] == t.seconds);
                CHECK(c.other[i] == t.other);
                CHECK(c.protocols[i] == t.protocol);
            }
        }
    }
    CHECK(compared >= 4);
}

TEST_CASE("executor objective: on MSCCL++ a table whose switch sums is timed in Simple only, the protocol its plan is written in") {
    auto topo = Topology::parse("graph:" + test::source("schedules/machines/dgx_h100_nvls.json"));
    TimeCandidate nvls;
    nvls.table = std::make_shared<const SendTable>(compose::nvls_allreduce(topo, {}));
    TimeCandidate ring;
    ring.table = std::make_shared<const SendTable>(on_executor_ring());
    CandidateQuery q;
    q.executor = builtin_executor(ExecutorKind::mscclpp);
    REQUIRE(q.basis().protocols() == std::vector<Protocol>{Protocol::simple, Protocol::ll});
    CHECK(q.basis_of(nvls).protocols() == std::vector<Protocol>{Protocol::simple});
    CHECK(q.basis_of(ring).protocols() == q.basis().protocols());
    // LL would be its fastest at 1 KiB (the plan cannot be written so: the export refuses LL with switch channels)
    const TimingPlan plan(*nvls.table);
    CHECK(time_on(plan, 1024, q.basis(), TimeKind::asynchronous).protocol == Protocol::ll);
    CHECK(time_on(plan, 1024, q.basis_of(nvls), TimeKind::asynchronous).protocol == Protocol::simple);
}

TEST_CASE("executor objective: a candidate is written in every protocol it runs in, not only its first size's") {
    // runs_on_executor checked the export in the protocol of the first size only: on h100rail16x8 (--sizes 1K,1M,64M
    // --executor mscclpp) "hierarchical rsag+direct-ar, 1 piece" was checked in LL (1 KiB) and won 1 MiB in Simple,
    // whose plan needs 67 ops a thread block, and `--format mscclpp` refused the whole run (exit 2). A switch table's
    // plan has no LL form: run in Simple, then LL, it is refused at LL's size and named with the protocol.
    auto topo = Topology::parse("graph:" + test::source("schedules/machines/dgx_h100_nvls.json"));
    TimeCandidate c;
    c.name = "nvls, 1 piece", c.provider = "nvls";
    c.table = std::make_shared<const SendTable>(compose::nvls_allreduce(topo, {}));
    CandidateQuery q;
    q.executor = builtin_executor(ExecutorKind::mscclpp);
    std::vector<std::string> notes;
    c.protocols = {Protocol::simple, Protocol::simple};
    CHECK(runs_on_executor(c, q, notes));
    CHECK(notes.empty());
    c.protocols = {Protocol::simple, Protocol::ll};
    CHECK_FALSE(runs_on_executor(c, q, notes));
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("not run by executor mscclpp (mscclpp) in LL: ") != std::string::npos);
}

namespace {

/// `hierarchical rsag+direct` with `pieces` pieces on 4 x 8 H100 GPUs (1,984 transfers a piece), a candidate run in Simple.
TimeCandidate rail_rsag(std::uint32_t pieces) {
    auto topo = Topology::parse("graph:" + test::source("schedules/machines/h100rail4x8.json"));
    const SynthInstance in{topo, topo->default_model(), Collective::parse("allreduce", *topo), RouteSpace::any};
    std::optional<SendTable> t = compose::build_shape(in, compose::find_boxes(*topo).boxes, {compose::InBox::rsag, compose::Across::direct_rsag}, pieces, nullptr);
    REQUIRE(t.has_value());
    TimeCandidate c;
    c.name = fmt::format("hierarchical rsag+direct, {} pieces", pieces), c.provider = "constructions for time";
    c.table = std::make_shared<const SendTable>(std::move(*t));
    c.protocols = {Protocol::simple};
    return c;
}

}  // namespace

TEST_CASE("executor objective: on MSCCL++ a table above 4,096 transfers is offered to the plan writer and kept when it runs") {
    // runs_on_executor offered no table above 4,096 transfers to the MSCCL++ writer (its search over thread-block counts
    // built a whole JSON plan per count: 31 s for 15,360 transfers), so on the fault machines only 1-piece tables were
    // candidates. Three pieces (5,952 transfers) are written within 108 thread blocks, 64 ops a block, in a second.
    const TimeCandidate c = rail_rsag(3);
    REQUIRE(c.table->transfers.size() > 4096);
    CandidateQuery q;
    q.executor = builtin_executor(ExecutorKind::mscclpp);
    q.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::vector<std::string> notes;
    CHECK(runs_on_executor(c, q, notes));
    CHECK(notes.empty());
}

TEST_CASE("executor objective: on MSCCL++ a table is offered again with 4 chains a thread block, a block putting them in the table's order") {
    // With one chain a block, every block of a GPU puts its first chain in the plan's first step: the direct in-box
    // reduce-scatter's chunks to all 7 box-mates go at once, taken channel after channel, where the table spreads them over
    // 4 steps and each owner's share is summed early. 4 consecutive chains a block put them one after another: the
    // table's order, its time (1 GiB on h100rail 4 x 8: 5.62 ms, against 9.44 ms with one chain a block).
    // (a table its provider timed, as the constructions for time do: the copy takes its times)
    TimeCandidate c = rail_rsag(1);
    const auto topo = c.table->topology;
    CandidateQuery q{{topo, topo->default_model(), Collective::parse("allreduce", *topo)}, {1073741824}};
    q.executor = builtin_executor(ExecutorKind::mscclpp);
    q.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    const BasisTime table = time_on(TimingPlan(*c.table), q.sizes[0], q.basis_of(c), TimeKind::asynchronous);
    c.seconds = {table.seconds}, c.other = {table.other}, c.protocols = {table.protocol};
    NamedProvider given{"constructions for time", [&](const CandidateQuery&, std::vector<TimeCandidate>& out, std::vector<std::string>&) {
                            out.push_back(c);
                        }};
    std::vector<std::string> notes;
    std::vector<TimeCandidate> unchecked;
    std::vector<TimeCandidate> kept = gather_candidates(q, {given}, notes, &unchecked);
    kept.insert(kept.end(), unchecked.begin(), unchecked.end());
    REQUIRE(kept.size() == 2);
    std::ranges::sort(kept, {}, &TimeCandidate::mscclpp_chains_a_block);
    CHECK(kept[0].name == c.name);
    CHECK(kept[1].name == c.name + ", 4 chains a thread block");
    CHECK(kept[1].mscclpp_chains_a_block == 4);
    CHECK(kept[1].seconds[0] == doctest::Approx(table.seconds).epsilon(1e-9));
    // the plans themselves (the walk checks the second no more: its table is no faster than the first's plan)
    std::vector<double> plan;
    for (int row : {1, 4}) {
        MscclppOptions o;
        o.chains_a_block = row;
        std::optional<SendTable> read_back;
        o.read_back = &read_back;
        (void)table_to_mscclpp(*c.table, o);
        REQUIRE(read_back);
        plan.push_back(time_on(TimingPlan(*read_back), q.sizes[0], q.basis_of(c), TimeKind::asynchronous).seconds);
    }
    CHECK(plan[1] == doctest::Approx(table.seconds).epsilon(1e-9));
    CHECK(plan[0] > 1.5 * plan[1]);
}

TEST_CASE("executor objective: the MSCCL++ check stops at the query's time limit and the candidate is left out with a note") {
    // the check wrote, read back and verified the plan whatever --timeout said
    const TimeCandidate c = rail_rsag(1);
    CandidateQuery q;
    q.executor = builtin_executor(ExecutorKind::mscclpp);
    q.deadline = std::chrono::steady_clock::now();
    std::vector<std::string> notes;
    CHECK_FALSE(runs_on_executor(c, q, notes));
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("hierarchical rsag+direct, 1 pieces (constructions for time): not checked for executor mscclpp (mscclpp) within the time "
                        "limit (time limit (the MSCCL++ plan's writer") == 0);
    CHECK(notes[0].ends_with("left out"));
}

TEST_CASE("executor objective: on nccl a table its graph files cannot hold is left out before it is timed") {
    // the constructions NCCL cannot run were timed in NCCL's three protocols and refused only at their check: on 4 x 8
    // H100 with NIC 0 at half under load, NCCL's own ring was then not checked within --timeout 60
    TimeCandidate c = rail_rsag(1), ours = c;
    ours.nccl = true;
    CandidateQuery q;
    q.instance = SynthInstance{c.table->topology, c.table->model, c.table->collective, RouteSpace::any};
    q.executor = builtin_executor(ExecutorKind::nccl);
    std::vector<TimeCandidate> raw{c, ours};
    std::vector<std::string> notes;
    leave_out_unrun(raw, q, notes);
    CHECK(raw[0].unrun);
    CHECK_FALSE(raw[1].unrun);  // NCCL's own algorithms run as they are
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("hierarchical rsag+direct, 1 pieces (constructions for time): not run by executor nccl (nccl-graph): ") == 0);
    q.executor = builtin_executor(ExecutorKind::mscclpp);  // an MSCCL++ plan's check waits for the protocols the timing picks
    raw[0].unrun = false;
    leave_out_unrun(raw, q, notes);
    CHECK_FALSE(raw[0].unrun);
}

TEST_CASE("executor objective: NCCL's NVLS, NVLS_TREE, CollNet and PAT are timed in Simple only, as NCCL's tuner runs them") {
    // tuning.cc skips LL and LL128 for NVLS and NVLS_TREE and gives CollNet none: `nccl nvls, 2 pieces` won 64 KiB on
    // a DGX H100 in LL (8.9 us), a time stock NCCL cannot run, and stood as NCCL's best
    auto candidate = [](const char* name, bool nccl) {
        TimeCandidate c;
        c.name = name, c.nccl = nccl;
        return c;
    };
    const std::vector<Protocol> simple{Protocol::simple};
    for (ExecutorKind k : {ExecutorKind::nccl, ExecutorKind::mscclpp, ExecutorKind::msccl}) {
        CandidateQuery q;
        q.executor = builtin_executor(k);
        for (const char* n : {"nccl nvls, 2 pieces", "nccl nvls_tree, 32 pieces", "nccl collnet_direct", "nccl nvls + collnet", "nccl pat"}) {
            CAPTURE(n);
            CHECK(q.basis_of(candidate(n, true)).protocols() == simple);
            CHECK(q.basis_of(candidate(n, true)).executor_name() == "nccl");
        }
        CHECK(q.basis_of(candidate("nccl ring", true)).protocols().size() == 3);
        CHECK(q.basis_of(candidate("nvls, 1 piece", false)).protocols() == q.basis().protocols());
    }
    const auto r = test::run("optimize --topology graph:" + test::source("schedules/machines/dgx_h100_nvls.json") +
                             " --collective allreduce --sizes 64K,16M --executor nccl --jobs 1 --json");
    INFO(r.out, r.err);
    REQUIRE((r.code == 0 || r.code == 3));
    const nlohmann::json out = nlohmann::json::parse(r.out);  // held: a range-for over a temporary's member reads freed memory
    REQUIRE(out["sizes"].size() == 2);
    for (const auto& s : out["sizes"])
        if (s["winner"].get<std::string>().starts_with("nccl nvls")) CHECK(s["protocol"] == "Simple");
}

TEST_CASE("executor objective: NCCL's own algorithm winning is the answer, not a tie with itself") {
    // bench/time_vs_nccl.sh printed `tie` (1.00x) where NCCL's tree was the fastest on the executor: the
    // JSON's tie_with_nccl compared the winner with itself
    const auto r = test::run("optimize --topology graph:" + test::source("schedules/machines/h100rail2x8.json") +
                             " --collective allreduce --sizes 64K,1G --executor nccl --jobs 1 --json");
    INFO(r.out, r.err);
    REQUIRE((r.code == 0 || r.code == 3));
    const nlohmann::json out = nlohmann::json::parse(r.out);
    REQUIRE(out["sizes"].size() == 2);
    int own = 0;
    for (const auto& s : out["sizes"]) {
        const bool same = s["winner"] == s["nccl_best"];
        CHECK(s["nccl_wins"] == same);
        if (same) CHECK(s["tie_with_nccl"] == false);
        own += same;
    }
    CHECK(own >= 1);  // NCCL's tree wins here (the case this test is for)
}

TEST_CASE("executor objective: below the grain a transfer holds its channel as the grain's bytes") {
    // the ring moves M/8 a transfer: at M = 8 and M = 8,000 bytes every transfer is below LL128's 1,920-byte
    // grain (a warp's slice) and both take the grain's time; at 8 x 4,096 bytes the transfers are above it and slower
    const SendTable t = on_executor_ring();
    ExecutorCosts ll = executor_costs(builtin_executor(ExecutorKind::nccl), Protocol::ll128);
    REQUIRE(ll.grain == 1920);
    auto at = [&](double m, const ExecutorCosts& c) {
        TimeOptions o{m, std::nullopt};
        o.executor = c;
        return predict_time(t, o);
    };
    CHECK(at(8, ll).asynchronous == test::rel(at(8000, ll).asynchronous));
    CHECK(at(8, ll).synchronous == test::rel(at(8000, ll).synchronous));
    CHECK(at(8 * 4096, ll).asynchronous > at(8000, ll).asynchronous);
    ExecutorCosts no_grain = ll;
    no_grain.grain = 0;
    CHECK(at(8, no_grain).asynchronous < at(8, ll).asynchronous);
}

TEST_CASE("executor objective: the grains are NCCL's, a line of LL and a warp's slice of LL128") {
    // the one-channel ring allgather on a DGX A100 (7 steps of M/8, 300 GB/s NVLink, alpha 0.6 us): at M = 32 bytes
    // a transfer of 4 bytes holds its channel as one LL line's 8 data bytes; at 512 bytes, 64 bytes hold it as LL128's
    // 1,920 (a warp's 2,048 bytes on the wire). Each step waits for the one before.
    const SendTable t = on_executor_ring();
    for (const auto& [p, size, held] : {std::tuple{Protocol::ll, 32.0, 8.0}, std::tuple{Protocol::ll128, 512.0, 1920.0}}) {
        const ExecutorCosts c = executor_costs(builtin_executor(ExecutorKind::nccl), p);
        const std::size_t box = idx_of(LinkClass::box);
        const double expect = c.launch + 7 * (0.6e-6 + c.hop[box] + c.message[box] + held / (300e9 * c.efficiency[box] / c.wire));
        TimeOptions o{size, std::nullopt};
        o.executor = c;
        INFO(to_string(p));
        CHECK(predict_time(t, o).asynchronous == test::rel(expect));
    }
}

TEST_CASE("executor objective: ties inside the model error, a calibration carries its own") {
    const TimeBasis nccl{std::nullopt, builtin_executor(ExecutorKind::nccl)};
    const double e = builtin_executor(ExecutorKind::nccl).error.value;
    REQUIRE(e > 0);
    CHECK(!builtin_executor(ExecutorKind::nccl).error.source.empty());
    CHECK(nccl.tie(1.0, 1.0 + e * 0.99));
    CHECK(!nccl.tie(1.0, 1.0 + e * 1.01));
    CHECK(!TimeBasis{}.tie(1.0, 1.0 + 1e-9));  // ideal: exact
    Calibration c;
    c.executor = ExecutorKind::nccl;
    c.heldout_median = 0.05;
    const Calibration back = read_calibration(write_calibration(c), "c.json");
    REQUIRE(back.heldout_median.has_value());
    const ExecutorModel m = calibrated(builtin_executor(ExecutorKind::nccl), back);
    CHECK(m.error.value == test::rel(0.05));
    CHECK(m.error.source.find("held-out") != std::string::npos);
}

TEST_CASE("executor objective: optimize --size --executor nccl picks what NCCL runs, per protocol, and says so") {
    const auto r = test::run("optimize " + on_executor_machine + " --collective allreduce --size 64K,1G --executor nccl --json --timeout 60");
    REQUIRE(r.code == 3);  // no bound is proved on an executor
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["executor"] == "nccl");
    CHECK(j["bound_executor"] == "ideal");
    std::vector<std::string> runnable;
    for (const auto& c : j["candidates"]) runnable.push_back(c["name"]);
    for (const auto& s : j["sizes"]) {
        CHECK(s["executor"] == "nccl");
        CHECK(s["protocol"].is_string());
        // NCCL runs its own algorithms and rings from a graph file: the hierarchical shapes are not among them
        CHECK(s["winner"].get<std::string>().find("hierarchical") == std::string::npos);
        CHECK(s["predicted_time_s"].get<double>() >= s["time_lower_bound_s"].get<double>());
    }
    bool refused = false;
    for (const auto& n : j["notes"]) refused = refused || n.get<std::string>().find("not run by executor nccl (nccl-graph)") != std::string::npos;
    CHECK(refused);
    // the ideal run of the same instance is unchanged by the executor's existence: its JSON says ideal
    const auto i = test::run("optimize " + on_executor_machine + " --collective allreduce --size 64K --json --timeout 60");
    CHECK(nlohmann::json::parse(i.out)["executor"] == "ideal");
    CHECK(nlohmann::json::parse(i.out)["sizes"][0]["protocol"].is_null());
}

TEST_CASE("executor objective: --format writes each size's winner in the executor's format and protocol") {
    const test::Scratch scratch("on_executor_format");
    const std::string plan = scratch.file("plan.json");
    const auto r = test::run("optimize " + on_executor_machine + " --collective allgather --size 64K,1G --executor mscclpp --format mscclpp -o " +
                             plan + " --json --timeout 60");
    REQUIRE(r.code == 3);
    const auto j = nlohmann::json::parse(r.out);
    std::size_t written = 0;
    for (std::size_t i = 0; i < 2; ++i) {
        if (j["sizes"][i]["witness"][0].is_null()) {  // stock NCCL's algorithm won there, as NCCL runs it: no plan
            CHECK(j["sizes"][i]["winner"].get<std::string>().starts_with("nccl "));
            continue;
        }
        ++written;
        const std::string path = j["sizes"][i]["witness"][0];
        REQUIRE(std::filesystem::exists(path));
        const auto p = nlohmann::json::parse(on_executor_text(path));
        const std::uint64_t size = j["sizes"][i]["size_bytes"].get<std::uint64_t>();
        CHECK(p["min_message_size"].get<std::uint64_t>() <= size);
        CHECK(p["max_message_size"].get<std::uint64_t>() >= size);
        CHECK(p["protocol"] == j["sizes"][i]["protocol"]);
        // the plan verifies and times on the machine, and the time printed and ranked is that plan's (docs/time.md,
        // "Optimizing on an executor"): the table's ran 3 to 20 % below its plan
        const auto v = test::run("verify " + path + " " + on_executor_machine + " --executor mscclpp --json --size " + std::to_string(size));
        REQUIRE(v.code == 0);
        const double plan_s = nlohmann::json::parse(v.out)["time"]["sizes"][0]["asynchronous_s"].get<double>();
        CHECK(j["sizes"][i]["predicted_time_s"].get<double>() == doctest::Approx(plan_s).epsilon(1e-9));
    }
    CHECK(written >= 1);
}

TEST_CASE("executor objective: usage rules") {
    auto refused = [](const std::string& args, const std::string& what) {
        const auto r = test::run(args);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(what) != std::string::npos);
    };
    refused("optimize --topology ring:4 --collective allgather --executor nccl", "give --size");
    refused("optimize --topology ring:4 --collective allgather --format mscclpp -o x.json", "give --size");
    refused("optimize --topology ring:4 --collective allgather --size 1M --format mscclpp", "give -o FILE");
    refused("optimize --topology ring:4 --collective allgather --size 1M --executor ncl", "did you mean \"nccl\"");
    refused("compare " + test::source("schedules/nccl/ring_allgather_dgx_a100.sched") + " --size 1M --executor mscclp", "did you mean \"mscclpp\"");
}

TEST_CASE("executor objective: compare --executor names the executor and each table's protocol") {
    const auto r = test::run("compare " + test::source("schedules/nccl/ring_allgather_dgx_a100.sched") + " --size 1K,1G --executor nccl --json");
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["executor"] == "nccl");
    CHECK(j["schedules"][0]["protocols"].size() == 2);
    CHECK(j["schedules"][0]["protocols"][0] == "LL");
    CHECK(j["schedules"][0]["protocols"][1] == "Simple");
    const auto t = test::run("compare " + test::source("schedules/nccl/ring_allgather_dgx_a100.sched") + " --size 1K");
    CHECK(t.out.find("the network's share (executor ideal") != std::string::npos);
}
