// The executor formats under hostile input (issue 41, section 4): MSCCL++ plans and MSCCL-IR
// programs under one rule for exit codes (docs/errors.md, "Executor formats: one rule"): bad
// input, judged from one value alone, is exit 2 at file:line:col; what the executor's reader
// refuses in a well-formed file, and what would deadlock, race or compute the wrong result, is a
// finding (exit 1).
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/core/json_tree.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/tools/cli_run.hpp"

using namespace collsched;
using collsched::test::run;
using collsched::test::source;

namespace {

nlohmann::ordered_json ring_plan() {
    return nlohmann::ordered_json::parse(test::read_file(source("tests/data/mscclpp/ring_allgather_8.json")));
}

/// `file:line:col: ` of the JSON value that `pick` selects in `text` (json_tree keeps positions).
template <class Pick>
std::string at(const std::string& file, const std::string& text, Pick pick) {
    const json_tree::Value root = json_tree::parse(text, file);
    const json_tree::Value& v = pick(root);
    return fmt::format("{}:{}:{}: ", file, v.line, v.col);
}

const json_tree::Value& gpu(const json_tree::Value& root, int g) { return root.find("gpus")->items[std::size_t(g)]; }
const json_tree::Value& tb(const json_tree::Value& root, int g, int t) { return gpu(root, g).find("threadblocks")->items[std::size_t(t)]; }
const json_tree::Value& op(const json_tree::Value& root, int g, int t, int k) { return tb(root, g, t).find("ops")->items[std::size_t(k)]; }

/// A plan edited by `edit`, verified on the command line.
template <class Edit>
std::pair<test::Run, std::string> verify_edited(test::Scratch& dir, const std::string& name, Edit edit, const std::string& flags = "") {
    nlohmann::ordered_json j = ring_plan();
    edit(j);
    const std::string text = j.dump(1);
    return {run("verify " + flags + " " + dir.file(name, text)), text};
}

}  // namespace

TEST_CASE("hostile mscclpp: a missing key is bad input (exit 2) at its object's line and column") {
    test::Scratch dir("hostile_mscclpp_keys");
    struct Key {
        std::string what, path;
        void (*edit)(nlohmann::ordered_json&);
        const json_tree::Value& (*where)(const json_tree::Value&);
    };
    const Key keys[] = {
        {"\"input_chunks\"", "gpus[3]", [](auto& j) { j["gpus"][3].erase("input_chunks"); }, [](const json_tree::Value& r) -> const json_tree::Value& { return gpu(r, 3); }},
        {"\"channels\"", "gpus[2].threadblocks[0]", [](auto& j) { j["gpus"][2]["threadblocks"][0].erase("channels"); },
         [](const json_tree::Value& r) -> const json_tree::Value& { return tb(r, 2, 0); }},
        {"\"index\"", "gpus[1].threadblocks[0].ops[0].src_buff[0]", [](auto& j) { j["gpus"][1]["threadblocks"][0]["ops"][0]["src_buff"][0].erase("index"); },
         [](const json_tree::Value& r) -> const json_tree::Value& { return op(r, 1, 0, 0).find("src_buff")->items[0]; }},
        {"\"name\"", "gpus[0].threadblocks[0].ops[1]", [](auto& j) { j["gpus"][0]["threadblocks"][0]["ops"][1].erase("name"); },
         [](const json_tree::Value& r) -> const json_tree::Value& { return op(r, 0, 0, 1); }},
    };
    for (const Key& k : keys) {
        CAPTURE(k.path);
        auto [r, text] = verify_edited(dir, "p.json", k.edit);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(at(dir.file("p.json"), text, k.where) + k.path + ": has no " + k.what) != std::string::npos);
    }
    // a wrong type, an index outside its field's range and an unknown buffer name are bad input too
    auto [r, text] = verify_edited(dir, "t.json", [](auto& j) {
        j["gpus"][1]["threadblocks"][0]["ops"][0]["src_buff"][0]["index"] = -1;
        j["gpus"][1]["threadblocks"][0]["ops"][0]["src_buff"][0]["type"] = "q";
    });
    CHECK(r.code == 2);
    CHECK(r.err.find("gpus[1].threadblocks[0].ops[0].src_buff[0]: \"index\" is -1, outside 0..4294967295") != std::string::npos);
    CHECK(r.err.find("gpus[1].threadblocks[0].ops[0].src_buff[0]: \"type\" is \"q\"; the executor knows") != std::string::npos);
    // how values fit together stays a finding: a GPU id that is not its rank
    auto [f, unused] = verify_edited(dir, "f.json", [](auto& j) { j["gpus"][2]["id"] = 3; });
    CHECK(f.code == 1);
    CHECK(f.out.find("gpus[2]: has id 3 at position 2: the executor takes gpus[rank] and throws \"GPU rank does not match\"") != std::string::npos);
}

TEST_CASE("hostile mscclpp: an unknown op name of 100,000 characters is named in part") {
    test::Scratch dir("hostile_mscclpp_name");
    auto [r, text] = verify_edited(dir, "p.json", [](auto& j) { j["gpus"][0]["threadblocks"][0]["ops"][1]["name"] = std::string(100000, 'x'); });
    CHECK(r.code == 2);
    CHECK(r.err.find("gpus[0].threadblocks[0].ops[1]: unknown op \"xxxx") != std::string::npos);
    CHECK(r.err.size() < 1000);
    // a reduce_op of 100,000 characters (a finding, printed on standard output) likewise
    auto [f, t2] = verify_edited(dir, "q.json", [](auto& j) { j["gpus"][0]["threadblocks"][0]["ops"][0]["reduce_op"] = std::string(100000, 'y'); });
    CHECK(f.code == 1);
    CHECK(f.out.size() < 3000);
    CHECK(f.out.find("reduce_op \"yyyy") != std::string::npos);
}

TEST_CASE("hostile mscclpp: a barrier over 0 thread blocks deadlocks (the count passes 0 at the first arrival)") {
    test::Scratch dir("hostile_mscclpp_barrier");
    auto [r, text] = verify_edited(dir, "p.json", [](auto& j) {
        auto& ops = j["gpus"][0]["threadblocks"][0]["ops"];
        ops.insert(ops.begin(), nlohmann::ordered_json::object({{"name", "barrier"}, {"barrier_id", 0}, {"num_threadblocks", 0}}));
    });
    CHECK(r.code == 1);
    CHECK(r.out.find("deadlock        violated") != std::string::npos);
    CHECK(r.out.find(": barrier 0 of GPU 0, round 1: waits for 0 thread blocks, but 1 arrive (the count passes its target "
                     "and never equals it again) [deadlock]\n") != std::string::npos);
    // over 1 thread block it is __syncthreads: the plan holds
    auto [one, t1] = verify_edited(dir, "q.json", [](auto& j) {
        auto& ops = j["gpus"][0]["threadblocks"][0]["ops"];
        ops.insert(ops.begin(), nlohmann::ordered_json::object({{"name", "barrier"}, {"barrier_id", 0}, {"num_threadblocks", 1}}));
    });
    CHECK(one.code == 0);
}

TEST_CASE("hostile mscclpp: thread-block group sizes whose least common multiple passes 64 are refused exactly, at the op") {
    test::Scratch dir("hostile_mscclpp_lcm");
    auto sizes = [&](std::int64_t a, std::int64_t b) {
        return verify_edited(dir, "p.json", [&](auto& j) {
            auto& ops = j["gpus"][1]["threadblocks"][0]["ops"];
            ops[0]["tbg_info"] = {{"tb_id", 0}, {"tbg_size", a}};
            ops[5]["tbg_info"] = {{"tb_id", 0}, {"tbg_size", b}};
        });
    };
    // 5 * 1717986919 = 2^33 + 3 was computed modulo 2^32 (3) and checked as "part 3 of 3"
    auto [r, text] = sizes(5, 1717986919);
    CHECK(r.code == 2);
    CHECK(r.err.find(at(dir.file("p.json"), text, [](const json_tree::Value& v) -> const json_tree::Value& { return op(v, 1, 0, 5); }) +
                     "gpus[1].threadblocks[0].ops[5].tbg_info: tbg_size 1717986919 with thread-block groups of sizes dividing 5 "
                     "elsewhere: the least common multiple of the group sizes is 8589934595") != std::string::npos);
    // two primes near 10^9: exact in 64 bits (it was printed as 1952339321)
    auto [p, t2] = sizes(999999937, 1000000007);
    CHECK(p.code == 2);
    CHECK(p.err.find("tbg_size 999999937 with thread-block groups of size 1 elsewhere: the least common multiple of the group sizes is 999999937") !=
          std::string::npos);
}

TEST_CASE("hostile mscclpp: a switch channel's empty rank group is bad input, a member that does not exist is a finding") {
    test::Scratch dir("hostile_mscclpp_switch");
    auto with_group = [&](nlohmann::ordered_json ranks) {
        return verify_edited(dir, "p.json", [&](auto& j) {
            j["gpus"][0]["channels"].push_back({{"channel_type", "switch"}, {"buffer_type", "o"}, {"rank_groups", {{{"size", ranks.size()}, {"ranks", ranks}}}}});
        });
    };
    auto [r, text] = with_group(nlohmann::ordered_json::array());
    CHECK(r.code == 2);
    CHECK(r.err.find("gpus[0].channels[1].rank_groups[0]: \"ranks\" is empty") != std::string::npos);
    auto [f, t2] = with_group({0, 9});
    CHECK(f.code == 1);
    CHECK(f.out.find("gpus[0].channels[1].rank_groups[0]: a multicast group with rank 9, which does not exist") != std::string::npos);
}

TEST_CASE("hostile mscclpp: an in-place reducescatter is judged by mscclpp's convention and NCCL's is stated beside it") {
    const std::string plan = source("tests/data/mscclpp/reducescatter_inplace_4.json");
    auto r = run("verify " + plan);
    CHECK(r.code == 1);  // mscclpp's selector: recvbuff == sendbuff, output chunk 0 is input chunk 0
    // an output no op writes is placed at its GPU, with the path (it had neither)
    const std::string text = test::read_file(plan);
    CHECK(r.out.find(at(plan, text, [](const json_tree::Value& v) -> const json_tree::Value& { return gpu(v, 1); }) +
                     "gpus[1]: GPU 1's output chunk 0 holds in(1,0), never written, but it must hold in({0..3},1) [result]") != std::string::npos);
    CHECK(r.out.find("as mscclpp's selector defines it (recvbuff == sendbuff") != std::string::npos);
    CHECK(r.out.find("the verdict above is by this convention") != std::string::npos);
    CHECK(r.out.find("NCCL's in-place convention (recvbuff = sendbuff + rank * recvcount: output chunk j is input chunk rank * "
                     "output_chunks + j): holds") != std::string::npos);
    auto j = run("verify --json " + plan);
    const auto doc = nlohmann::json::parse(j.out);
    CHECK(doc["verdict"] == "violated");
    CHECK(doc["nccl_inplace_convention"] == "holds");
    CHECK(doc["inplace_convention"].get<std::string>().starts_with("mscclpp: recvbuff == sendbuff"));
}

TEST_CASE("hostile mscclpp: verifying grows linearly with thread blocks (it was quadratic), and 16,000 blocks a GPU are decided") {
    test::Scratch dir("hostile_mscclpp_scale");
    // T thread blocks per GPU on 2 GPUs, each copying one chunk (no channels): the pairing of
    // channels and the search for each block's id were quadratic
    auto plan = [&](int T) {
        nlohmann::json gpus = nlohmann::json::array();
        for (int g = 0; g < 2; ++g) {
            nlohmann::json tbs = nlohmann::json::array();
            for (int t = 0; t < T; ++t)
                tbs.push_back({{"id", t},
                               {"ops", {{{"name", "copy"}, {"src_buff", {{{"type", "i"}, {"index", t}, {"size", 1}}}}, {"dst_buff", {{{"type", "o"}, {"index", t}, {"size", 1}}}}}}},
                               {"channels", nlohmann::json::array()}});
            gpus.push_back({{"id", g}, {"input_chunks", T}, {"output_chunks", T}, {"scratch_chunks", 0}, {"threadblocks", tbs},
                            {"channels", nlohmann::json::array()}, {"remote_buffers", nlohmann::json::array()}});
        }
        return dir.file(fmt::format("p{}.json", T), nlohmann::json{{"name", "copies"}, {"collective", "custom"}, {"protocol", "Simple"},
                                                                   {"inplace", false}, {"gpus", gpus}}
                                                         .dump());
    };
    auto seconds = [&](const std::string& file, test::Run& out) {
        const auto start = std::chrono::steady_clock::now();
        out = run("verify " + file);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    test::Run small, large;
    const std::string p4 = plan(4000), p16 = plan(16000);
    const double t4 = seconds(p4, small), t16 = seconds(p16, large);
    CAPTURE(t4);
    CAPTURE(t16);
    CHECK(small.code == 0);
    // 4 times the blocks: about 4 times the time (quadratic was 16 and more); a margin for a loaded machine
    CHECK(t16 < 9 * t4 + 0.5);
    // 16,000 blocks per GPU: the race check decides it (its vector clocks over every block of a rank
    // would have needed 2^28.9 entries: it was unknown, exit 3)
    CHECK(large.code == 0);
    CHECK(large.out.starts_with("verdict: holds"));
}

TEST_CASE("hostile msccl-ir: what the executor's reader refuses in a well-formed file is a finding (exit 1), its loaded steps are judged as the kernel runs them") {
    test::Scratch dir("hostile_msccl_rule");
    const std::string ring = test::read_file(source("tests/data/msccl/allgather_ring.xml"));
    auto with = [&](const std::string& from, const std::string& to) {
        std::string x = ring;
        const auto pos = x.find(from);
        REQUIRE(pos != std::string::npos);
        x.replace(pos, from.size(), to);
        return run("verify " + dir.file("x.xml", x));
    };
    // refusals: a send in a thread block without a send peer, a thread block listed twice
    auto r = with(R"(<tb id="0" send="1" recv="3" chan="0">)", R"(<tb id="0" send="-1" recv="3" chan="0">)");
    CHECK(r.code == 1);
    CHECK(r.out.find("x.xml:4:7: gpu 0, thread block 0, step 0 sends, but the thread block has no send peer [refused]") != std::string::npos);
    // a value outside the format's range stays bad input
    r = with(R"(<tb id="0" send="1" recv="3" chan="0">)", R"(<tb id="0" send="-5" recv="3" chan="0">)");
    CHECK(r.code == 2);
    CHECK(r.err.find("x.xml:3:5: gpu 0, thread block 0: peers send=\"-5\" recv=\"3\" must be -1 or a gpu") != std::string::npos);
    // cnt="0" is loaded (0..71) and runs no primitive: a send of no chunk is no send on the connection
    const std::string last_receive = R"(<step s="3" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0" />)";
    r = with(last_receive, last_receive + "\n      " +
                               R"(<step s="4" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="0" depid="-1" deps="-1" hasdep="0" />)");
    CHECK(r.code == 0);
    // a depid naming a thread block that does not exist: loaded, and it waits forever
    r = with(R"(depid="-1" deps="-1" hasdep="0" />)", R"(depid="5" deps="0" hasdep="0" />)");
    CHECK(r.code == 1);
    CHECK(r.out.find("x.xml:4:7: rank 0, thread block 0, step 0 (send to 1, channel 0): waits for thread block 5 (depid), which rank 0 does "
                     "not have [deadlock]") != std::string::npos);
    // steps whose s is out of order: the executor ignores s (a note), the program holds
    r = with(R"(<step s="0" type="s" srcbuf="o" srcoff="0")", R"(<step s="3" type="s" srcbuf="o" srcoff="0")");
    CHECK(r.code == 0);
    // the note names the file, as every other line does (it began "note: 4:7:")
    CHECK(r.out.find("note: " + dir.file("x.xml") + ":4:7: gpu 0, thread block 0: s=\"3\" on step 0 of the thread block; the executor ignores s") !=
          std::string::npos);
}

// About 4 s (a 36 MB program): in the slow suite (ctest hostile_surfaces_slow).
TEST_CASE("hostile msccl-ir: 92 ranks of 999 thread blocks are decided (the race check's clocks were past the engine's limit: unknown)" *
          doctest::test_suite("hostile_slow") * doctest::skip()) {
    // 92 ranks of 999 thread blocks of 3 local copies each (4089 elements a rank, under MAX_NODES):
    // vector clocks over every thread block of a rank would need 92 * 2997 * 999 > 2^28 entries
    const int P = 92, T = 999, S = 3;
    std::string x = fmt::format("<algo name=\"big\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"{}\" ngpus=\"{}\" coll=\"custom\" "
                                "inplace=\"0\" outofplace=\"1\" minBytes=\"0\" maxBytes=\"0\">\n",
                                S * T, P);
    for (int g = 0; g < P; ++g) {
        x += fmt::format("<gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"0\">\n", g, S * T, S * T);
        for (int t = 0; t < T; ++t) {
            x += fmt::format("<tb id=\"{}\" send=\"-1\" recv=\"-1\" chan=\"0\">\n", t);
            for (int k = 0; k < S; ++k)
                x += fmt::format("<step s=\"{0}\" type=\"cpy\" srcbuf=\"i\" srcoff=\"{1}\" dstbuf=\"o\" dstoff=\"{1}\" cnt=\"1\" depid=\"-1\" "
                                 "deps=\"-1\" hasdep=\"0\"/>\n",
                                 k, S * t + k);
            x += "</tb>\n";
        }
        x += "</gpu>\n";
    }
    x += "</algo>\n";
    test::Scratch dir("hostile_msccl_unknown");
    auto r = run("verify " + dir.file("big.xml", x));
    CHECK(r.code == 0);  // it was 3, unknown: the engine's limit on its clocks
    CHECK(r.out.find("data races not checked") == std::string::npos);
}

TEST_CASE("hostile mscclpp: a size range that holds no size is a finding, and a header integer below its least value says so") {
    test::Scratch dir("hostile_mscclpp_header");
    // min above max: the executor's checkMessageSize throws for every call (it held, exit 0)
    auto [r, text] = verify_edited(dir, "p.json", [](auto& j) {
        j["min_message_size"] = 100;
        j["max_message_size"] = 10;
    });
    CHECK(r.code == 1);
    CHECK(r.out.find("max_message_size: min_message_size 100 is above max_message_size 10: no message size lies between them") !=
          std::string::npos);
    CHECK(r.out.find("[structure]") != std::string::npos);
    // 0 threads per block: refused as outside 1.., not as "not an unsigned integer" (0 is one)
    auto [z, t2] = verify_edited(dir, "q.json", [](auto& j) { j["num_threads_per_block"] = 0; });
    CHECK(z.code == 2);
    CHECK(z.err.find("\"num_threads_per_block\" is 0, outside 1..2^64-1") != std::string::npos);
    // the default range (2^64 - 1 as the DSL writes it) serves every size
    auto [d, t3] = verify_edited(dir, "d.json", [](auto& j) {
        j["min_message_size"] = 0;
        j["max_message_size"] = 18446744073709551615ull;
    });
    CHECK(d.code == 0);
}

TEST_CASE("hostile mscclpp: min_message_size is read as the executor reads it (an int), and above 2^63 as an integer") {
    test::Scratch dir("hostile_mscclpp_min_size");
    // 2^63 and more: nlohmann holds it (number_unsigned); it was "not an unsigned integer", exit 2
    auto [high, t1] = verify_edited(dir, "h.json", [](auto& j) { j["min_message_size"] = 18446744073709551360ull; });
    CHECK(high.code == 0);
    CHECK(high.err.empty());
    // 4 GiB: the executor's value("min_message_size", 0) is an int and reads 0; the plan serves every size
    auto [mid, t2] = verify_edited(dir, "m.json", [](auto& j) { j["min_message_size"] = 4294967296ull; });
    CHECK(mid.code == 1);
    CHECK(mid.out.find("min_message_size: min_message_size 4294967296 is read by the executor as 0") != std::string::npos);
    CHECK(mid.out.find("[blind spot]") != std::string::npos);
    auto [low, t3] = verify_edited(dir, "l.json", [](auto& j) { j["min_message_size"] = 2147483647; });
    CHECK(low.code == 0);
    // above 2^64 - 1: nlohmann holds a double; refused at its place
    auto [over, t4] = verify_edited(dir, "o.json", [](auto& j) { j["min_message_size"] = 7; });
    std::string text = t4;
    const std::string key = "\"min_message_size\": 7";
    REQUIRE(text.find(key) != std::string::npos);
    text.replace(text.find(key), key.size(), "\"min_message_size\": 18446744073709551616");
    auto r = run("verify " + dir.file("o2.json", text));
    CHECK(r.code == 2);
    CHECK(r.err.find("\"min_message_size\" is 18446744073709551616, outside 0..2^64-1") != std::string::npos);
}

TEST_CASE("hostile mscclpp: an integer field's message says what the executor's nlohmann does with the value") {
    test::Scratch dir("hostile_mscclpp_ints");
    struct Case {
        const char* value;
        const char* message;
    };
    const Case cases[] = {
        {"1.5", "\"input_chunks\" is 1.5, not an integer (the executor's nlohmann converts it without an error, truncating toward zero: "
                "1.0 reads as 1, -0.0 as 0, 1.5 as 1; write the integer)"},
        {"-0.0", "\"input_chunks\" is -0.0, not an integer (the executor's nlohmann converts it without an error"},
        {"true", "\"input_chunks\" is true, not an integer (the executor's nlohmann converts it without an error: true reads as 1"},
        {"\"1\"", "\"input_chunks\" is a string, not an integer (the executor's nlohmann throws type_error 302"},
        {"9223372036854775808", "\"input_chunks\" is 9223372036854775808, out of range"},
    };
    for (const Case& c : cases) {
        auto [r, text] = verify_edited(dir, "p.json", [&](auto& j) { j["gpus"][0]["input_chunks"] = nlohmann::ordered_json::parse(c.value); });
        INFO(c.value, "\n", r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find(c.message) != std::string::npos);
        CHECK(r.err.find("a number with a fraction or exponent") == std::string::npos);
    }
}

TEST_CASE("hostile mscclpp: more blocks than a GPU runs at once, some of them waiting, can deadlock on the GPU") {
    // One barrier over every block of a GPU: it releases only when all have arrived, so the blocks must all be resident
    // at once; an A100 holds 108 blocks of 1,024 threads (mscclpp_plan.hpp, resident_blocks). Blocks that never wait
    // (copies only, the scale test above: 4,000 a GPU) finish whatever the GPU holds, and hold.
    test::Scratch dir("hostile_mscclpp_resident");
    auto plan = [&](int T, int threads) {
        nlohmann::json gpus = nlohmann::json::array();
        for (int g = 0; g < 2; ++g) {
            nlohmann::json tbs = nlohmann::json::array();
            for (int t = 0; t < T; ++t)
                tbs.push_back({{"id", t},
                               {"ops", {{{"name", "barrier"}, {"barrier_id", 0}, {"num_threadblocks", T}},
                                        {{"name", "copy"}, {"src_buff", {{{"type", "i"}, {"index", t}, {"size", 1}}}}, {"dst_buff", {{{"type", "o"}, {"index", t}, {"size", 1}}}}}}},
                               {"channels", nlohmann::json::array()}});
            gpus.push_back({{"id", g}, {"input_chunks", T}, {"output_chunks", T}, {"scratch_chunks", 0}, {"threadblocks", tbs},
                            {"channels", nlohmann::json::array()}, {"remote_buffers", nlohmann::json::array()}});
        }
        return dir.file(fmt::format("b{}_{}.json", T, threads), nlohmann::json{{"name", "barrier"}, {"collective", "custom"}, {"protocol", "Simple"},
                                                                               {"inplace", false}, {"num_threads_per_block", threads}, {"gpus", gpus}}
                                                                     .dump());
    };
    const test::Run fits = run("verify " + plan(108, 1024));
    CHECK(fits.code == 0);
    const test::Run over = run("verify " + plan(109, 1024));
    CHECK(over.code == 1);
    CHECK(over.out.find("109 thread blocks of 1024 threads, some of which wait on others: an A100 runs at most 108 of them at once") != std::string::npos);
    CHECK(over.out.find("[blind spot]") != std::string::npos);
    // blocks of 512 threads: two to an SM
    CHECK(run("verify " + plan(216, 512)).code == 0);
    CHECK(run("verify " + plan(217, 512)).code == 1);
}
