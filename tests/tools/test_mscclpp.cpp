// MSCCL++ execution plans (compiler/interop/mscclpp_plan.hpp, mscclpp_check.hpp, export_mscclpp.hpp): the
// reader's positions and refusals, the plans of tests/data/mscclpp (written in the shapes of
// MSCCL++'s DSL by tests/data/mscclpp/make_plans.py) and their broken copies, `verify` on them,
// and the round trip export -> import -> verify over the catalog and 1,000 seeded random tables.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/core/json_tree.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/interop/mscclpp_check.hpp"
#include "compiler/table/partials.hpp"
#include "dsl/diagnostics.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/tools/catalog_rows.hpp"
#include "tests/tools/cli_run.hpp"
#include "bench/reproduce.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/constructions/compose/nvls.hpp"

using namespace collsched;
using collsched::test::run;
using collsched::test::source;
using namespace collsched::bench;

namespace {

std::string plan_file(const std::string& name) { return source("tests/data/mscclpp/" + name); }

mscclpp::PlanReport check_text(const std::string& text, const std::string& name = "p.json") {
    return mscclpp::check_plan(mscclpp::read_plan(text, name));
}

/// The findings of a report with the rule, as "path [rule]".
std::vector<std::string> findings(const mscclpp::PlanReport& r) {
    std::vector<std::string> out;
    for (const auto& f : r.findings) out.push_back(fmt::format("{} [{}]", f.path, f.rule));
    return out;
}

bool any_finding(const mscclpp::PlanReport& r, std::string_view rule, std::string_view path_prefix, std::string_view text = "") {
    return std::any_of(r.findings.begin(), r.findings.end(), [&](const mscclpp::Finding& f) {
        return f.rule == rule && f.path.starts_with(path_prefix) && f.what.find(text) != std::string::npos;
    });
}

std::vector<std::tuple<int, int, std::vector<std::pair<int, int>>>> movement(const mscclpp::PlanReport& r) {
    std::vector<std::tuple<int, int, std::vector<std::pair<int, int>>>> out;
    for (const auto& m : r.movement) out.emplace_back(m.from, m.to, m.value);
    std::sort(out.begin(), out.end());
    return out;
}

/// Export, read back, verify, and compare the data movement with the table's endpoint transfers.
void mscclpp_round_trip(const SendTable& t, const MscclppOptions& opt = {}) {
    std::string text = table_to_mscclpp(t, opt);
    mscclpp::ReadResult read = mscclpp::read_plan(text, "export.json");
    mscclpp::PlanReport r = mscclpp::check_plan(read);
    CAPTURE(findings(r));
    REQUIRE(r.holds());
    CHECK(r.result_checked);
    if (opt.instances == 1) CHECK(movement(r) == table_movement(t));
    for (const auto& gpu : read.plan.gpus)
        for (const auto& tb : gpu.tbs) {
            std::size_t ops = 0;
            for (const auto& op : tb.ops) ops += 1 + op.inner.size();
            CHECK(ops <= 64);
        }
}

}  // namespace

TEST_CASE("json tree: values keep their line and column, and malformed text is refused with its place") {
    json_tree::Value v = json_tree::parse("{\"a\": [1, 2.5],\n  \"b\": {\"c\": \"x\\u00e9\"}}", "t.json");
    REQUIRE(v.kind == json_tree::Kind::object);
    const json_tree::Value* a = v.find("a");
    REQUIRE(a);
    CHECK(a->line == 1);
    CHECK(a->col == 7);
    CHECK(a->items[0].integer() == 1);
    CHECK_FALSE(a->items[1].integer());
    const json_tree::Value* c = v.find("b")->find("c");
    CHECK(c->line == 2);
    CHECK(c->col == 14);
    CHECK(c->text == "x\xc3\xa9");
    CHECK_THROWS_WITH_AS(json_tree::parse("{\"a\": 1,\n \"b\" 2}", "t.json"), "t.json:2:6: malformed JSON: expected ':' after a member name",
                         InputError);
    CHECK_THROWS_WITH_AS(json_tree::parse("[01]", "t.json"), "t.json:1:3: malformed JSON: a number may not have a leading zero", InputError);
}

TEST_CASE("mscclpp reader: a file that is not a plan is refused (exit 2 material), with its place") {
    CHECK_THROWS_WITH_AS(mscclpp::read_plan("[1]", "p.json"), "p.json:1:1: not an MSCCL++ execution plan: the document is an array, not an object",
                         InputError);
    CHECK_THROWS_WITH_AS(mscclpp::read_plan("{\"name\": \"x\", \"collective\": \"allgather\", \"protocol\": \"Simple\", \"inplace\": true}", "p.json"),
                         doctest::Contains("p.json:1:1: not an MSCCL++ execution plan: no \"gpus\" at the top level"), InputError);
    CHECK_THROWS_WITH_AS(
        mscclpp::read_plan("{\"name\": \"x\", \"collective\": \"allgather\", \"protocol\": \"Simple\",\n \"inplace\": 1, \"gpus\": []}", "p.json"),
        "p.json:2:13: \"inplace\" is a number, but the executor reads it as a boolean", InputError);
    CHECK(mscclpp::looks_like_mscclpp_plan(test::read_file(plan_file("ring_allgather_8.json"))));
    CHECK_FALSE(mscclpp::looks_like_mscclpp_plan(test::read_file(source("tests/data/ring8_allgather.json"))));
}

TEST_CASE("mscclpp plans in the DSL's shapes verify: ring allgather, all-pairs LL allreduce, 2-node allreduce with port channels") {
    for (const char* name : {"ring_allgather_8.json", "allpairs_allreduce_8_ll.json", "allreduce_2node_8.json"}) {
        CAPTURE(name);
        mscclpp::PlanReport r = check_text(test::read_file(plan_file(name)), name);
        CAPTURE(findings(r));
        CHECK(r.holds());
        CHECK(r.finishes);
        CHECK(r.race_free);
        CHECK(r.result_checked);
    }
}

TEST_CASE("mscclpp broken plans are violated, naming the op (a missing signal, a swapped channel, a race, a wrong chunk)") {
    auto check = [](const char* name) {
        mscclpp::PlanReport r = check_text(test::read_file(plan_file(name)), name);
        CHECK_FALSE(r.holds());
        return r;
    };
    // GPU 0's second signal is gone: GPU 1's 7th wait on its channel from GPU 0 is never released
    auto r = check("broken_missing_signal.json");
    CHECK(any_finding(r, "deadlock", "gpus[1].threadblocks[0].ops[33] (wait)", "has 6 sends and this is receive 7"));
    // GPU 3 waits on its channel to GPU 4, which never signals back; GPU 2's signals pile up
    r = check("broken_swapped_channel.json");
    CHECK(any_finding(r, "deadlock", "gpus[3].threadblocks[0].ops[3] (wait)"));
    CHECK(any_finding(r, "blind spot", "gpus[2].channels", "persists across launches"));
    // no nop after GPU 2's first wait: its forwarding put reads the chunk GPU 1's put writes
    r = check("broken_put_races_read.json");
    CHECK(findings(r) == std::vector<std::string>{"gpus[2].threadblocks[0].ops[4] (put) [data race]"});
    CHECK(r.findings[0].what.find("gpus[1].threadblocks[0].ops[0] (put) writes it") != std::string::npos);
    // GPU 5 forwards its output chunk 3 instead of 7 in its last step
    r = check("broken_wrong_chunk.json");
    CHECK(findings(r) == std::vector<std::string>{"gpus[5].threadblocks[0].ops[30] (put) [result]"});
    CHECK(r.findings[0].what == "GPU 6's output chunk 7 holds in(3,0), written by gpus[5].threadblocks[0].ops[30] (put), but it must hold in(7,0)");
    // put-with-signal (no flush) through a port channel: the proxy reads the chunk the next reduce writes
    r = check("broken_port_pws.json");
    CHECK(r.counts_race == 8);
    CHECK(any_finding(r, "data race", "gpus[0].threadblocks[0].ops[12] (re)", "proxy of port channel 0 reads it"));
    // the executor's limits and blind spots
    r = check("broken_limits.json");
    CHECK(any_finding(r, "limit", "gpus[1].threadblocks[0].ops[4]", "has 9 channel ids"));
    CHECK(any_finding(r, "limit", "gpus[1].threadblocks[0].ops[0]", "barrier_id 16"));
    CHECK(any_finding(r, "blind spot", "gpus[2].threadblocks[0].ops[3]", "does nothing"));
    // input_chunks 0 is outside the field's range (the executor divides by it): bad input, exit 2
    CHECK_THROWS_WITH_AS(check("broken_zero_chunks.json"),
                         doctest::Contains("broken_zero_chunks.json:2026:23: gpus[6]: \"input_chunks\" is 0: checkMessageSize"), InputError);
}

TEST_CASE("mscclpp reader: the executor's silent misreadings are findings with their JSON path and place") {
    nlohmann::ordered_json base = nlohmann::ordered_json::parse(test::read_file(plan_file("ring_allgather_8.json")));
    auto with = [&](auto edit) {
        nlohmann::ordered_json j = base;
        edit(j);
        return check_text(j.dump(1));
    };
    // thread blocks out of order: ops by position, channels by id
    auto r = with([](auto& j) { j["gpus"][0]["threadblocks"][0]["id"] = 5; });
    CHECK(any_finding(r, "structure", "gpus[0].threadblocks[0]", "thread block id 5 with 1 thread blocks"));
    // a GPU id that is not its rank
    r = with([](auto& j) { j["gpus"][2]["id"] = 3; });
    CHECK(any_finding(r, "structure", "gpus[2]", "GPU rank does not match"));
    // a channel to itself and to a rank that does not exist
    r = with([](auto& j) { j["gpus"][1]["channels"][0]["connected_to"].push_back(1); });
    CHECK(any_finding(r, "blind spot", "gpus[1].channels[0]", "to itself"));
    r = with([](auto& j) { j["gpus"][1]["channels"][0]["connected_to"].push_back(9); });
    CHECK(any_finding(r, "structure", "gpus[1].channels[0]", "rank 9, which does not exist"));
    // a channel id past the thread block's channels
    r = with([](auto& j) { j["gpus"][4]["threadblocks"][0]["ops"][2]["channel_ids"] = {7}; });
    CHECK(any_finding(r, "structure", "gpus[4].threadblocks[0].ops[2]", "channel id 7 but its thread block has 2 memory channels"));
    // a chunk index past the end of the output
    r = with([](auto& j) { j["gpus"][4]["threadblocks"][0]["ops"][0]["dst_buff"][0]["index"] = 8; });
    CHECK(any_finding(r, "limit", "gpus[4].threadblocks[0].ops[0]", "chunks 8..8 of GPU 5's output buffer, which has 8"));
    // a missing key inside an op, and an unknown op: bad input (exit 2), tested in test_hostile_mscclpp.cpp
    // more than 64 ops in a thread block
    r = with([](auto& j) {
        for (int k = 0; k < 30; ++k) j["gpus"][0]["threadblocks"][0]["ops"].push_back({{"name", "nop"}});
    });
    CHECK(any_finding(r, "limit", "gpus[0].threadblocks[0]", "65 ops"));
    // reduce_op other than sum
    r = with([](auto& j) { j["gpus"][0]["threadblocks"][0]["ops"][1]["reduce_op"] = "max"; });
    CHECK(any_finding(r, "blind spot", "gpus[0].threadblocks[0].ops[1]", "always sums"));
    // unequal channel counts between two ranks
    r = with([](auto& j) { j["gpus"][0]["channels"][0]["connected_to"].push_back(1); });
    CHECK(any_finding(r, "blind spot", "gpus[0].channels", "GPU 0 has 2 memory channels to GPU 1, GPU 1 has 1 back"));
}

TEST_CASE("mscclpp verify on the command line: 0 holds, 1 a finding, 2 not a plan") {
    auto r = run("verify " + plan_file("ring_allgather_8.json"));
    CHECK(r.code == 0);
    CHECK(r.out.starts_with("verdict: holds (MSCCL++ plan \"ring_allgather\": allgather on 8 GPUs, in place, Simple"));
    r = run("verify " + plan_file("broken_put_races_read.json"));
    CHECK(r.code == 1);
    CHECK(r.out.find(plan_file("broken_put_races_read.json") + ":727:13: gpus[2].threadblocks[0].ops[4] (put): reads GPU 2's output chunk 1") !=
          std::string::npos);
    r = run("verify --json " + plan_file("broken_missing_signal.json"));
    CHECK(r.code == 1);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["verdict"] == "violated");
    CHECK(j["properties"]["deadlock"] == "violated");
    CHECK(j["violations"][0]["path"] == "gpus[1].threadblocks[0].ops[33] (wait), channel 1");
    test::Scratch dir("mscclpp_cli");
    r = run("verify " + dir.file("p.json", "{\"gpus\": [], \"collective\": \"allgather\", \"name\": \"x\"}"));
    CHECK(r.code == 2);
    CHECK(r.err.find("no \"protocol\" at the top level") != std::string::npos);
    r = run("verify " + dir.file("q.json", "{\"gpus\": [, \"collective\": 1}"));
    CHECK(r.code == 2);
    CHECK(r.err.find("q.json:1:11: malformed JSON") != std::string::npos);
    // --expect for a collective collsched does not know
    std::string sendrecv = test::read_file(plan_file("ring_allgather_8.json"));
    sendrecv.replace(sendrecv.find("\"collective\": \"allgather\""), 25, "\"collective\": \"custom\"");
    std::string plan = dir.file("custom.json", sendrecv);
    r = run("verify " + plan);
    CHECK(r.code == 0);
    CHECK(r.out.find("result          not checked (the result is not checked: collective \"custom\"") != std::string::npos);
    std::string expect = dir.file("e.json", "{\"outputs\": [{\"rank\": 1, \"chunk\": 0, \"holds\": [[0, 0]]}, {\"rank\": 1, \"chunk\": 2, \"holds\": [[3, 0]]}]}");
    r = run("verify " + plan + " --expect " + expect);
    CHECK(r.code == 1);
    CHECK(r.out.find("GPU 1's output chunk 2 holds no data, written by gpus[0].threadblocks[0].ops[30] (put), but it must hold in(3,0)") !=
          std::string::npos);
    // the same file format and reader as MSCCL-IR's --expect (compiler/interop/expect_file.hpp): a chunk
    // the plan does not have is bad input, exit 2 at the entry's line and column
    r = run("verify " + plan + " --expect " + dir.file("bad.json", "{\"outputs\": [\n  {\"rank\": 1, \"chunk\": 8, \"holds\": [[0, 0]]}]}"));
    CHECK(r.code == 2);
    CHECK(r.err.find("bad.json:2:3: outputs[0]: chunk 8 is outside buffer o of rank 1 (8 chunks)\n") != std::string::npos);
    r = run("verify " + plan + " --expect " + dir.file("shape.json", "{\"outputs\": [{\"rank\": 1, \"chunk\": 0, \"holds\": [[0]]}]}"));
    CHECK(r.code == 2);
    CHECK(r.err.find("shape.json:1:48: outputs[0]: each entry of \"holds\" is [rank, input chunk]\n") != std::string::npos);
}

TEST_CASE("mscclpp export: the library's allgathers, alltoalls and reductions round-trip (export, import, verify, same data movement)") {
    int written = 0, refused = 0;
    test::for_each_catalog_table(64, [&](const SendTable& t, const std::string&) {
        if (t.topology->processors() > 16) return;
        std::string text;
        try {
            text = table_to_mscclpp(t, {});
        } catch (const InputError& err) {
            std::string why = err.what();
            CAPTURE(why);
            CHECK(why.find("a bug in collsched") == std::string::npos);
            ++refused;
            return;
        }
        mscclpp_round_trip(t);
        ++written;
    });
    MESSAGE(fmt::format("catalog rows up to 16 processors: {} exported and verified, {} refused", written, refused));
    CHECK(written > 20);
}

TEST_CASE("mscclpp export: LL, out of place, instances and port channels (the 2 x 8 multibox) round-trip") {
    for (const char* sched : {"schedules/chunks/ring_allgather.sched", "schedules/reduce/allreduce_ring.sched",
                              "schedules/reduce/reduce_scatter_ring.sched", "schedules/reduce/allreduce_recursive_doubling.sched"}) {
        CAPTURE(sched);
        Diagnostics diags;
        auto t = compile_file(source(sched), {}, {}, diags);
        REQUIRE(t.has_value());
        for (const char* proto : {"Simple", "LL"})
            for (bool oop : {false, true}) {
                CAPTURE(proto);
                CAPTURE(oop);
                MscclppOptions opt;
                opt.proto = proto;
                opt.out_of_place = oop;
                mscclpp_round_trip(*t, opt);
                opt.instances = 2;
                mscclpp_round_trip(*t, opt);
            }
    }
}

TEST_CASE("mscclpp export: 1000 seeded random tables round-trip (copies with relays and chunks, reductions by random trees)") {
    std::mt19937 rng(33);
    int n_tables = 0;
    for (int trial = 0; trial < 1000; ++trial) {
        CAPTURE(trial);
        const std::uint32_t P = 2 + rng() % 5;
        const bool reduction = trial % 3 == 2;
        const std::string spec = (trial % 2 == 0 || reduction) ? fmt::format("complete:{}", P) : fmt::format("ring:{}", std::max(P, 3u));
        auto topo = Topology::parse(spec);
        const std::uint32_t N = topo->processors();
        SendTable t;
        t.topology = topo;
        t.model = topo->default_model();
        Collective coll;
        coll.kind = reduction ? CollectiveKind::allreduce : trial % 4 == 1 ? CollectiveKind::alltoall : CollectiveKind::allgather;
        const std::uint32_t C = 1 + rng() % 2;
        coll.set_chunks(C, *topo);
        t.collective = coll;
        const Messages ms = t.messages();
        auto send = [&](Step s, std::uint32_t a, std::uint32_t b, MessageId m) {
            auto ch = topo->find_channel(Node{a}, Node{b});
            REQUIRE(ch);
            t.transfers.push_back({s, *ch, m});
        };
        if (!reduction) {
            // every message floods from its source along random neighbours until every GPU that needs it has it
            std::vector<MessageId> msgs;
            for (std::uint32_t s = 0; s < N; ++s)
                for (std::uint32_t c = 0; c < C; ++c) {
                    if (coll.kind == CollectiveKind::allgather) msgs.push_back(ms.broadcast(s, c));
                    else
                        for (std::uint32_t d = 0; d < N; ++d)
                            if (d != s) msgs.push_back(ms.personal(s, d, c));
                }
            for (MessageId m : msgs) {
                MessageKey k = ms.key(m);
                std::vector<Step> has(N, 0);  // step at which the GPU holds m (0: from the start; big: not yet)
                const Step never = 1'000'000;
                std::fill(has.begin(), has.end(), never);
                has[k.src] = 0;
                auto needed = [&](std::uint32_t g) { return coll.kind == CollectiveKind::allgather ? true : g == k.dst; };
                for (Step s = 1; s < 40; ++s) {
                    bool done = true;
                    for (std::uint32_t g = 0; g < N; ++g) done = done && (!needed(g) || has[g] < never);
                    if (done) break;
                    for (std::uint32_t g = 0; g < N; ++g) {
                        if (has[g] >= s || rng() % 2) continue;
                        auto outs = topo->out_channels(Node{g});
                        const Channel& ch = topo->channel(outs[rng() % outs.size()]);
                        const std::uint32_t to = idx(ch.to);
                        if (has[to] < never && rng() % 4) continue;  // mostly new holders, sometimes a second copy
                        send(s, g, to, m);
                        has[to] = std::min(has[to], s);
                    }
                }
            }
        } else {
            // per chunk: a random tree reduces to a random root (children first), which then sends the
            // full partial down the same tree
            Composites& reg = t.composite_registry();
            for (std::uint32_t c = 0; c < C; ++c) {
                std::vector<std::uint32_t> order(N);
                for (std::uint32_t g = 0; g < N; ++g) order[g] = g;
                std::shuffle(order.begin(), order.end(), rng);
                std::vector<std::uint32_t> parent(N, N);
                for (std::uint32_t i = 1; i < N; ++i) parent[order[i]] = order[rng() % i];
                std::vector<std::uint32_t> depth(N, 0);
                std::uint32_t max_depth = 0;
                for (std::uint32_t i = 1; i < N; ++i) max_depth = std::max(max_depth, depth[order[i]] = depth[parent[order[i]]] + 1);
                std::vector<std::vector<std::uint32_t>> below(N);
                for (std::uint32_t g = 0; g < N; ++g) below[g] = {g};
                for (std::uint32_t d = max_depth; d >= 1; --d)
                    for (std::uint32_t i = 1; i < N; ++i) {
                        const std::uint32_t g = order[i];
                        if (depth[g] != d) continue;
                        std::sort(below[g].begin(), below[g].end());
                        send(Step(max_depth - d + 1), g, parent[g], partial_message(reg, ms, SourceSet(below[g]), c));
                        below[parent[g]].insert(below[parent[g]].end(), below[g].begin(), below[g].end());
                    }
                std::vector<std::uint32_t> all(N);
                for (std::uint32_t g = 0; g < N; ++g) all[g] = g;
                const MessageId full = partial_message(reg, ms, SourceSet(all), c);
                for (std::uint32_t d = 1; d <= max_depth; ++d)
                    for (std::uint32_t i = 1; i < N; ++i)
                        if (depth[order[i]] == d) send(Step(max_depth + d), parent[order[i]], order[i], full);
            }
            t.canonicalize_composites();
        }
        std::sort(t.transfers.begin(), t.transfers.end());
        if (t.transfers.empty()) continue;
        MscclppOptions opt;
        opt.proto = trial % 5 == 0 ? "LL" : "Simple";
        mscclpp_round_trip(t, opt);
        ++n_tables;
    }
    CHECK(n_tables >= 990);
}

TEST_CASE("mscclpp export: the hierarchical allreduce on 2 x 8 GPUs talks through memory channels in a box and port channels across") {
    Diagnostics diags;
    auto t = compile_file(source("tests/data/mscclpp/allreduce_hierarchical_2x8.sched"), {}, {}, diags);
    REQUIRE(t.has_value());
    std::string text = table_to_mscclpp(*t, {});
    mscclpp::ReadResult read = mscclpp::read_plan(text, "ar2x8.json");
    CHECK(mscclpp::check_plan(read).holds());
    for (const auto& gpu : read.plan.gpus) {
        CAPTURE(gpu.id);
        for (int p : gpu.memory_peers) CHECK(p / 8 == gpu.id / 8);
        REQUIRE(gpu.port_peers.size() == 1);
        CHECK(gpu.port_peers[0] == (gpu.id + 8) % 16);
    }
    mscclpp_round_trip(*t);
}

TEST_CASE("mscclpp export: --size-range is written as min and max_message_size, a range that serves no size is refused") {
    Diagnostics diags;
    auto t = compile_file(source("schedules/chunks/ring_allgather.sched"), {}, {}, diags);
    REQUIRE(t.has_value());
    auto j = nlohmann::json::parse(table_to_mscclpp(*t, {}));
    CHECK(j["min_message_size"] == 0);
    CHECK(j["max_message_size"] == ~std::uint64_t(0));
    MscclppOptions opt;
    parse_size_range("1MiB..1GiB", opt);
    CHECK(opt.min_message_size == 1048576);
    CHECK(opt.max_message_size == 1073741824);
    j = nlohmann::json::parse(table_to_mscclpp(*t, opt));
    CHECK(j["min_message_size"] == 1048576);
    CHECK(j["max_message_size"] == 1073741824);
    parse_size_range("..64KiB", opt);
    CHECK((opt.min_message_size == 0 && opt.max_message_size == 65536));
    parse_size_range("4K..", opt);
    CHECK((opt.min_message_size == 4096 && opt.max_message_size == ~std::uint64_t(0)));
    for (const char* bad : {"1MiB", "2..1", "x..1", "1.5..2"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_size_range(bad, opt), InputError);
    }
    // an allgather's size is its output: the unit is 16 bytes x input chunks x GPUs (ring:6, 2 chunks: 192)
    const std::uint64_t unit = 16 * j["gpus"][0]["input_chunks"].get<std::uint64_t>() * t->topology->processors();
    CHECK(unit == 192);
    opt.min_message_size = 1;
    opt.max_message_size = unit - 1;
    CHECK_THROWS_WITH_AS(table_to_mscclpp(*t, opt), doctest::Contains("holds no size the plan can serve"), InputError);
    opt.max_message_size = unit;
    CHECK_NOTHROW(table_to_mscclpp(*t, opt));
    // on the command line: exit 2, nothing written
    test::Scratch dir("mscclpp_range");
    const std::string out = dir.file("p.json");
    auto r = run("compile " + source("schedules/chunks/ring_allgather.sched") + " --format mscclpp --size-range 1GiB..1MiB -o " + out);
    CHECK(r.code == 2);
    CHECK(r.err.find("bad --size-range '1GiB..1MiB': the low end is above the high end") != std::string::npos);
    CHECK(!std::filesystem::exists(out));
    r = run("compile " + source("schedules/chunks/ring_allgather.sched") + " --format mscclpp --size-range 64KiB..1GiB -o " + out);
    CHECK(r.code == 0);
    CHECK(nlohmann::json::parse(test::read_file(out))["min_message_size"] == 65536);
}

TEST_CASE("mscclpp export: a low end the executor reads as written (its int min_message_size), up to 2^64 - 256") {
    Diagnostics diags;
    auto t = compile_file(source("schedules/chunks/ring_allgather.sched"), {}, {}, diags);
    REQUIRE(t.has_value());
    MscclppOptions opt;
    // 2^64 - 256 (a multiple of the plan's 192-byte unit's 16) is read back above 2^63: the self-check refused it as
    // "not an unsigned integer" at an internal place (<export>:L:C)
    parse_size_range("18446744073709551360..", opt);
    CHECK(opt.min_message_size == 18446744073709551360ull);
    parse_size_range("18446744073709551232..", opt);  // a multiple of 192 too: the plan serves it
    CHECK_NOTHROW(table_to_mscclpp(*t, opt));
    parse_size_range("2147483647..", opt);
    CHECK(opt.min_message_size == 2147483647u);
    // the executor keeps the low 32 bits of min_message_size, as an int: 4 GiB reads as 0, 3 GiB as 2^64 - 2^30
    CHECK_THROWS_WITH_AS(parse_size_range("4G..", opt), doctest::Contains("would take 4294967296 as 0"), InputError);
    CHECK_THROWS_WITH_AS(parse_size_range("3GiB..", opt), doctest::Contains("would take 3221225472 as 18446744072635809792"), InputError);
    CHECK_THROWS_AS(parse_size_range("2147483648..", opt), InputError);
    CHECK_THROWS_AS(parse_size_range("18446744071562067967..", opt), InputError);
    parse_size_range("18446744071562067968..", opt);
    CHECK(opt.min_message_size == 18446744071562067968ull);
    // on the command line: one line, no internal place
    test::Scratch dir("mscclpp_range_high");
    const std::string out = dir.file("p.json");
    auto r = run("compile " + source("schedules/nccl/ring_allgather.sched") + " --format mscclpp --size-range 18446744073709551360.. -o " + out);
    CHECK(r.code == 0);
    CHECK(nlohmann::json::parse(test::read_file(out))["min_message_size"] == 18446744073709551360ull);
    r = run("verify " + out);
    CHECK(r.code == 0);
    r = run("compile " + source("schedules/nccl/ring_allgather.sched") + " --format mscclpp --size-range 8G..16G -o " + out + "2");
    CHECK(r.code == 2);
    CHECK(r.err.find("bad --size-range '8G..16G': the MSCCL++ executor reads min_message_size as a 32-bit int") != std::string::npos);
    CHECK(r.err.find("<export>") == std::string::npos);
}

TEST_CASE("mscclpp export: Simple plans open every thread block with a handshake on each of its channels, LL plans none") {
    Diagnostics diags;
    auto t = compile_file(source("tests/data/mscclpp/allreduce_hierarchical_2x8.sched"), {}, {}, diags);
    REQUIRE(t.has_value());
    for (const char* proto : {"Simple", "LL"}) {
        CAPTURE(proto);
        MscclppOptions opt;
        opt.proto = proto;
        auto j = nlohmann::json::parse(table_to_mscclpp(*t, opt));
        int blocks = 0;
        for (const auto& gpu : j["gpus"])
            for (const auto& tb : gpu["threadblocks"]) {
                ++blocks;
                std::map<std::string, std::size_t> channels, signalled, waited;
                for (const auto& c : tb["channels"]) channels[c["channel_type"].get<std::string>()] = c["channel_ids"].size();
                std::size_t k = 0;
                for (; k < tb["ops"].size(); ++k) {  // the opening signals and waits, up to the first other op
                    const auto& op = tb["ops"][k];
                    const std::string name = op["name"].get<std::string>();
                    if (name != "rlxsignal" && name != "rlxwait" && name != "signal" && name != "wait") break;
                    const std::string type = op["channel_type"].get<std::string>();
                    (name.find("signal") != std::string::npos ? signalled : waited)[type] += op["channel_ids"].size();
                    CHECK((type == "port") == (name == "signal" || name == "wait"));
                }
                if (std::string(proto) == "LL") {
                    CHECK(signalled.empty());
                    CHECK(waited.empty());
                } else {
                    REQUIRE(k < tb["ops"].size());
                    CHECK(tb["ops"][k]["name"] == "nop");
                    CHECK(signalled == channels);
                    CHECK(waited == channels);
                }
            }
        CHECK(blocks > 16);
        mscclpp_round_trip(*t, opt);
    }
    // without the handshake the plan is one op shorter per signal and wait (MscclppOptions::handshake)
    MscclppOptions off;
    off.handshake = false;
    auto j = nlohmann::json::parse(table_to_mscclpp(*t, off));
    CHECK(j["gpus"][0]["threadblocks"][0]["ops"][0]["name"] != "rlxsignal");
}

/// `table` written as an MSCCL++ plan on the command line (in `dir`) and read back by `collsched verify` as holds;
/// the plan's path.
std::string written_and_holds(test::Scratch& dir, const SendTable& table) {
    const std::string t = dir.file("t.json", table_to_json(table)), plan = dir.file("p.json");
    auto r = run("convert " + t + " --format mscclpp --size-range 1MiB..1GiB -o " + plan);
    REQUIRE(r.code == 0);
    r = run("verify " + plan);
    CHECK(r.code == 0);
    CHECK(r.out.starts_with("verdict: holds (MSCCL++ plan"));
    return plan;
}

TEST_CASE("mscclpp export: NVLS allreduce and allgather on one DGX H100 box are written with switch channels and verify") {
    auto topo = Topology::parse("graph:" + source("schedules/machines/dgx_h100_nvls.json"));
    compose::NvlsPlan nccl;
    nccl.owner_through_switch = true;
    struct Case {
        SendTable t;
        const char* op;
    };
    for (const Case& c : {Case{compose::nvls_allreduce(topo, {1}), "glres"}, Case{compose::nvls_allreduce(topo, {3}), "glres"},
                          Case{compose::nvls_allreduce(topo, nccl), "glres"}, Case{compose::nvls_allgather(topo, {2}), "gstore"}}) {
        CAPTURE(c.op);
        const std::string text = table_to_mscclpp(c.t, {});  // read back and verified inside
        mscclpp::PlanReport r = check_text(text);
        CAPTURE(findings(r));
        CHECK(r.holds());
        CHECK(r.result_checked);
        auto j = nlohmann::json::parse(text);
        std::size_t ops = 0, puts = 0;
        for (const auto& gpu : j["gpus"]) {
            bool has_switch = false;
            for (const auto& ch : gpu["channels"])
                if (ch["channel_type"] == "switch") {
                    has_switch = true;
                    CHECK(ch["rank_groups"][0]["ranks"].size() == 8);
                    CHECK(ch["buffer_type"] == (std::string(c.op) == "glres" ? "i" : "o"));
                }
            CHECK(has_switch);
            for (const auto& tb : gpu["threadblocks"]) {
                CHECK(tb["ops"].size() <= 64);
                CHECK(tb["ops"][0]["name"] == "rlxsignal");
                for (const auto& op : tb["ops"]) {
                    ops += op["name"] == c.op;
                    puts += op["name"] == "put";
                }
            }
        }
        // one switch op per chunk (allreduce) or per datum's chunk (allgather), no puts
        CHECK(ops == (std::string(c.op) == "glres" ? table_chunks(c.t) : 8 * table_chunks(c.t)));
        CHECK(puts == 0);
    }
    // what a switch channel cannot say is refused, naming why
    CHECK_THROWS_WITH_AS(table_to_mscclpp(compose::nvls_reduce_scatter(topo, {1}), {}), doctest::Contains("load-reduce without the multicast"),
                         InputError);
    CHECK_THROWS_WITH_AS(table_to_mscclpp(compose::nvls_allreduce(topo, {1}), {.proto = "LL"}), doctest::Contains("written Simple"), InputError);
    compose::NvlsPlan mixed;
    mixed.pieces = 4;
    mixed.direct_period = 2;
    CHECK_THROWS_WITH_AS(table_to_mscclpp(compose::nvls_allreduce(topo, mixed), {}), doctest::Contains("mixing them with puts"), InputError);
    // on the command line, and read back by `collsched verify` as holds
    test::Scratch dir("mscclpp_nvls");
    written_and_holds(dir, compose::nvls_allreduce(topo, {2}));
}

TEST_CASE("mscclpp export: NVLS allreduce across 2 and 4 H100 boxes: one switch channel per box, port channels between boxes, verified") {
    for (const char* machine : {"h100nvls2x8", "h100nvls4x8"}) {
        CAPTURE(machine);
        auto topo = Topology::parse("graph:" + source(std::string("schedules/machines/") + machine + ".json"));
        compose::NvlsPlan two;
        two.pieces = 2;
        for (const SendTable& t : {compose::nvls_tree_allreduce(topo, {}), compose::nvls_tree_allreduce(topo, two), compose::nvls_rail_allreduce(topo, two)}) {
            const std::string text = table_to_mscclpp(t, {});  // read back and verified inside
            mscclpp::PlanReport r = check_text(text);
            CAPTURE(findings(r));
            CHECK(r.holds());
            CHECK(r.result_checked);
            auto j = nlohmann::json::parse(text);
            std::size_t glres = 0, gstore = 0, pwsf = 0;
            for (const auto& gpu : j["gpus"]) {
                const int g = gpu["id"], box = g / 8;
                int switches = 0, ports = 0;
                for (const auto& ch : gpu["channels"]) {
                    if (ch["channel_type"] == "switch") {
                        ++switches;  // the group is the GPU's own box
                        std::vector<int> want(8);
                        for (int k = 0; k < 8; ++k) want[std::size_t(k)] = box * 8 + k;
                        CHECK(ch["rank_groups"][0]["ranks"].get<std::vector<int>>() == want);
                    }
                    if (ch["channel_type"] == "port")
                        for (int peer : ch["connected_to"]) {
                            CHECK(peer / 8 != box);
                            ++ports;
                        }
                }
                CHECK(switches == 1);
                CHECK(ports > 0);
                for (const auto& tb : gpu["threadblocks"]) {
                    CHECK(tb["ops"].size() <= 64);
                    for (const auto& op : tb["ops"]) {
                        glres += op["name"] == "glres";
                        gstore += op["name"] == "gstore";
                        pwsf += op["name"] == "pwsf";
                    }
                }
            }
            // per chunk and box: one load-reduce to its owner and one multicast of the sum
            const std::size_t boxes = topo->processors() / 8;
            CHECK(glres == table_chunks(t) * boxes);
            CHECK(gstore == table_chunks(t) * boxes);
            CHECK(pwsf > 0);
        }
    }
    // what the executor cannot run is refused, naming why: glres has no LL form; a box's sum that skips a GPU
    auto topo = Topology::parse("graph:" + source("schedules/machines/h100nvls2x8.json"));
    const SendTable tree = compose::nvls_tree_allreduce(topo, {});
    CHECK_THROWS_WITH_AS(table_to_mscclpp(tree, {.proto = "LL"}), doctest::Contains("written Simple"), InputError);
    SendTable broken = tree;
    for (std::size_t k = 0; k < broken.transfers.size(); ++k)
        if (broken.transfers[k].step == 1) {  // a GPU's value that never reaches its switch
            broken.transfers.erase(broken.transfers.begin() + std::ptrdiff_t(k));
            break;
        }
    CHECK_THROWS_WITH_AS(table_to_mscclpp(broken, {}), doctest::Contains("does not go values up, the box's sum down to one owner"), InputError);
    // on the command line: written, then read back by `collsched verify` as holds
    test::Scratch dir("mscclpp_nvls_boxes");
    const std::string plan = written_and_holds(dir, tree);
    // and timed on the machine, the switch's sums included (up to the switch, down in the next step)
    auto r = run("verify " + plan + " --topology graph:" + source("schedules/machines/h100nvls2x8.json") + " --size 1M --executor mscclpp");
    CHECK(r.code == 0);
    CAPTURE(r.out);
    CHECK(r.out.find("predicted time (docs/time.md), executor mscclpp") != std::string::npos);
    CHECK(r.out.find("  1 MiB ") != std::string::npos);
    mscclpp::ReadResult read = mscclpp::read_plan(test::read_file(plan), "p.json");
    const mscclpp::PlanReport rep = mscclpp::check_plan(read);
    const SendTable timed = mscclpp::plan_table(read.plan, rep, topo);
    // per chunk and box: 8 values up and 8 sums down (glres), 1 up and 7 down (gstore); the puts between boxes
    std::size_t through = 0;
    for (const Transfer& x : timed.transfers)
        through += !topo->is_processor(topo->channel(x.channel).from) || !topo->is_processor(topo->channel(x.channel).to);
    CHECK(through == table_chunks(tree) * 2 * (16 + 8));
    // the timed table is causal and complete: every hop sends what its sender holds, and the collective is done
    const VerifyReport v = verify_direct(timed, {});
    for (Property p : {Property::causality, Property::completeness}) {
        CAPTURE(to_string(p));
        CHECK(v.status[static_cast<std::size_t>(p)] == Status::holds);
    }
}

namespace {

/// NCCL's ring allreduce on a catalog machine, as `optimize --executor mscclpp` picks it at 1 GiB.
SendTable nccl_ring_allreduce(const std::string& machine) {
    auto topo = Topology::parse("graph:" + source("schedules/machines/" + machine + ".json"));
    return nccl::nccl_baseline(topo, Collective::parse("allreduce", *topo), topo->default_model(), "ring").table;
}

std::uint64_t fnv1a(std::string_view text) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    return h;
}

}  // namespace

TEST_CASE("mscclpp export: a table no thread-block count brings under 64 ops is refused at once (the writer's floor)") {
    // NCCL's ring allreduce on 8 x 8 H100s: each of 108 blocks a GPU still holds more than 64 ops.
    // Building every K from 32 to 108 took 2 min 12 s of CPU; the floor refuses without building one.
    const SendTable t = nccl_ring_allreduce("h100rail8x8");
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(table_to_mscclpp(t, {}),
                         doctest::Contains("108 thread blocks a GPU (108 of 1 instance) still leave a block at least 72 ops, above the "
                                           "executor's 64 (MAX_OPERATION, execution_common.hpp:17)"),
                         InputError);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 20);
}

TEST_CASE("mscclpp export: the plans the floor lets the writer reach sooner are byte for byte the plans it wrote before" *
          doctest::test_suite("mscclpp_slow") * doctest::skip()) {
    // NCCL's ring allreduce on 4 x 8 GPUs: the floor skips K = 32..61, the plan is K = 62's, as it was
    // when the writer built all 31 (the digest of the file the writer without the floor wrote). A 22 MB
    // plan read back and verified: label `slow` (tests/CMakeLists.txt).
    const std::string text = table_to_mscclpp(nccl_ring_allreduce("rail4x8"), {});
    CHECK(nlohmann::json::parse(text)["gpus"][0]["threadblocks"].size() == 62);
    CHECK(text.size() == 22446248);
    CHECK(fnv1a(text) == 16372932837588457297ull);
}

TEST_CASE("mscclpp export: convert --timeout stops the writer and the check of a large plan at the limit, with nothing written") {
    // NCCL's NVLS_TREE allreduce on 16 x 8 H100 GPUs in 16 pieces (77,312 transfers): its export and check take about a
    // second on an idle machine (a limit of 1 s was met now and then, exit 0: the limit is 0.2 s)
    auto topo = Topology::parse("graph:" + source("schedules/machines/h100nvls16x8.json"));
    compose::NvlsPlan pieces;
    pieces.pieces = 16;
    test::Scratch dir("mscclpp_timeout");
    const std::string t = dir.file("t.json", table_to_json(compose::nvls_tree_allreduce(topo, pieces))), plan = dir.file("p.json");
    const auto start = std::chrono::steady_clock::now();
    auto r = run("convert " + t + " --format mscclpp --timeout 0.2 -o " + plan);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string said = r.out + r.err;
    CAPTURE(said);
    CHECK(r.code == 3);
    // the limit falls in the writer or the check here, in reading the table on a slower runner (CI):
    // either way the message names the limit and nothing is written
    CHECK(said.find("time limit (") != std::string::npos);
    CHECK(said.find("--timeout 0.2") != std::string::npos);
    CHECK(said.find("nothing written") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(plan));
    CHECK(seconds < 2.5);  // the writer polls once a GPU, the check once a GPU and every 4,096 ops
}

TEST_CASE("mscclpp export: optimize --executor mscclpp --format mscclpp writes the plans that win and names the sizes stock NCCL wins") {
    // Where one of NCCL's own algorithms won (timed as stock NCCL runs it: NCCL's tree in LL128 at
    // 1 GiB on 2 x 8 H100), the one-command export refused the whole run (exit 2: "a plan with
    // switch channels is written Simple" or the LL128 tree's ops). It now writes a plan for the
    // sizes collsched's tables win and says at each other size that NCCL runs as it is.
    test::Scratch dir("mscclpp_one_command");
    const std::string plan = dir.file("plan.json"), m = test::machine("h100rail2x8");
    const auto r = run("optimize --topology " + m + " --collective allreduce --sizes 1M,1G --executor mscclpp --format mscclpp -o " + plan);
    INFO(r.out, r.err);
    CHECK((r.code == 0 || r.code == 3));
    CHECK(r.out.find("witness: " + plan + ": hierarchical") != std::string::npos);
    CHECK(r.out.find("no plan at 1 GiB: nccl tree as stock NCCL runs it wins there") != std::string::npos);
    CHECK(dir.entries() == 1);
    const auto v = run("verify " + plan);
    CHECK(v.code == 0);
    CHECK(v.out.starts_with("verdict: holds (MSCCL++ plan"));
    const auto j = nlohmann::json::parse(
        run("optimize --topology " + m + " --collective allreduce --sizes 1M,1G --executor mscclpp --format mscclpp --json -o " + plan).out);
    CHECK(j["sizes"][0]["witness"][0] == plan);
    CHECK(j["sizes"][1]["witness"][0].is_null());
}

TEST_CASE("mscclpp export: optimize --format mscclpp renders each plan it writes once") {
    // The plan was rendered (written, read back and checked) once to check it before any file was
    // written and again to write it; the writer's trace names the bytes of each rendering. The
    // search renders each candidate it checks once to ask whether the executor
    // runs it (verifier/time/executor_check.cpp): here the same bytes.
    test::Scratch dir("mscclpp_render_once");
    const std::string plan = dir.file("plan.json"), m = test::machine("h100rail2x8");
    const auto r = test::run_shell("COLLSCHED_TRACE=1 " + std::string(COLLSCHED_BINARY) + " optimize --topology " + m +
                             " --collective allreduce --sizes 1M --executor mscclpp --format mscclpp -o " + plan);
    INFO(r.out, r.err);
    REQUIRE(std::filesystem::exists(plan));
    const std::string mark = fmt::format("mscclpp plan: written, {} bytes", std::filesystem::file_size(plan));
    std::size_t renderings = 0;
    for (std::size_t at = r.err.find(mark); at != std::string::npos; at = r.err.find(mark, at + 1)) ++renderings;
    CHECK(renderings == 2);
}

TEST_CASE("mscclpp export: reading a plan's JSON back stops at the deadline, not after the whole text") {
    // json_tree::parse had no deadline: the read-back of the 128-piece NVLS_TREE plan of 16 x 8
    // GPUs (137 MB) ran a second past --timeout before the reader's first poll
    std::string text = "[";
    for (int k = 0; k < 200000; ++k) text += k ? ",{\"a\":[1,2]}" : "{\"a\":[1,2]}";
    text += "]";
    CHECK(json_tree::parse(text, "t.json").items.size() == 200000);
    const Deadline past = Deadline::at(Deadline::Clock::now());
    CHECK_THROWS_AS(json_tree::parse(text, "t.json", past), LimitReached);
    CHECK_THROWS_AS(mscclpp::read_plan(text, "t.json", past), LimitReached);
}
