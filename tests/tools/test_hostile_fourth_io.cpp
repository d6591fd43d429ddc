// Hostile input, fourth generation (issue 57), the categories past the machine readers: NCCL
// graph files in and out, long paths in messages, --size/--sizes strings, MSCCL++ --size-range,
// `collsched compose`, --library and --memory, NVLS and SHARP machines, reduce_scatter's bound with
// reduction in the network (item 7), and the Python module. The runner, the contract it checks and
// the seed are tests/tools/test_hostile_fourth.cpp's (tests/tools/hostile_probe.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"
#include "tests/tools/hostile_case.hpp"
#include "tests/tools/hostile_probe.hpp"

using namespace collsched;
using collsched::test::slurp;
using collsched::test::source;
using namespace collsched::test::hostile;
using namespace collsched::test::hostile4;

namespace {

// ------------------------------------------------------------------------------------------------
// NCCL graph files in and out: PCIe boxes read from NCCL XML with the graph NCCL runs on them
// (issue 57 item 2, in new sizes), the writer's files read back, malformed files at their place,
// and paths longer than 120 characters (the place kept, item 6).

std::string graph_file(const std::vector<std::vector<int>>& rings, const std::string& intra = "SYS", const std::string& inter = "LOC") {
    std::string s = "<graphs version=\"1\">\n";
    s += fmt::format("  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"{}\" speedintra=\"12\" speedinter=\"12\" latencyinter=\"0\" "
                     "typeintra=\"{}\" typeinter=\"{}\" samechannels=\"0\">\n",
                     rings.size(), intra, inter);
    for (const auto& r : rings) {
        s += "    <channel>\n";
        for (int g : r) s += fmt::format("      <gpu dev=\"{}\"/>\n", g);
        s += "    </channel>\n";
    }
    return s + "  </graph>\n</graphs>\n";
}

std::vector<Probe> nccl_graph_cases() {
    std::vector<Probe> out;
    // a PCIe box of G GPUs (no NVLink), its rings as NCCL writes them: the box is what the machine file says
    for (int g : {2, 3, 4, 8}) {
        Box b;
        b.gpus = g;
        b.links = Links::none;
        b.sm = 80;
        std::vector<int> fwd, back;
        for (int i = 0; i < g; ++i) fwd.push_back(i), back.push_back(g - 1 - i);
        for (int variant = 0; variant < 3; ++variant) {
            std::vector<std::vector<int>> rings = variant == 0 ? std::vector<std::vector<int>>{fwd}
                                                : variant == 1 ? std::vector<std::vector<int>>{fwd, back}
                                                               : std::vector<std::vector<int>>{back, fwd, back, fwd};
            Case c = make(fmt::format("PCIe box of {} GPUs, {} rings", g, rings.size()), "verify g.xml --topology graph:m.json",
                          {{"x.xml", nccl_box(b)}, {"g.xml", graph_file(rings)}}, "{C} machine --nccl-topo x.xml -o m.json", 0, "", "", {}, "holds");
            out.push_back(probe(c));
        }
    }
    // the writer's files: convert to nccl-graph, then verify on the machine the table names (or another of as many GPUs)
    for (const auto& [table, machine] : std::vector<std::pair<std::string, std::string>>{
             {"tests/data/ring8_allgather.json", "dgx-h100"}, {"tests/data/ring8_allgather.json", "dgx1"}, {"tests/data/ring8_allgather.json", "pcie"},
             {"tests/data/ring8_allgather.json", "ndv2"}, {"tests/data/ring8_allgather.json", "amd8"}}) {
        Case c = make("convert " + table + " to nccl-graph, verify on " + machine, "verify g.xml --topology graph:m.json", {},
                      fmt::format("{{C}} convert {} --format nccl-graph -o g.xml && {{C}} machine {} -o m.json", source(table), machine), 0, "");
        Probe p = probe(c);
        p.c.or_code = 1;  // a ring hop the box lacks is a finding, never bad input
        out.push_back(p);
    }
    // what the writer cannot hold: nothing written
    for (std::string table : {"tests/data/ebft4_alltoall.json", "tests/data/cbft8_flood_allgather.json"})
        out.push_back(probe(make("convert " + table + " --format nccl-graph", "convert " + source(table) + " --format nccl-graph -o g.xml", {}, "", 2, "", "",
                                 {"g.xml"})));
    out.push_back(probe(make("convert --format nccl-graph -o ''", "convert " + source("tests/data/ring8_allgather.json") + " --format nccl-graph -o ''", {}, "",
                             2, "")));
    // malformed graph files, each at its element's place, on a machine read from NCCL XML
    const std::string good = graph_file({{0, 1, 2, 3}});
    struct Bad {
        std::string name, from, to, element;
    };
    const std::vector<Bad> bad = {
        {"typeinter nonsense", "typeinter=\"LOC\"", "typeinter=\"IB\"", "<graph "},
        {"speedintra text", "speedintra=\"12\"", "speedintra=\"fast\"", "<graph "},
        {"nchannels 64", "nchannels=\"1\"", "nchannels=\"64\"", "<graph "},
        {"pattern missing", " pattern=\"4\"", "", "<graph "},
        {"crossnic 7", "crossnic=\"0\"", "crossnic=\"7\"", "<graph "},
        {"dev in decimal text", "<gpu dev=\"2\"/>", "<gpu dev=\"two\"/>", "<gpu dev=\"two\""},
        {"dev missing", "<gpu dev=\"3\"/>", "<gpu/>", "<gpu/>"},
        {"version 0", "version=\"1\"", "version=\"0\"", "<graphs "},
    };
    Box pcie;
    pcie.gpus = 4;
    pcie.links = Links::none;
    for (const Bad& x : bad)
        for (bool long_path : {false, true}) {
            std::string text = good;
            const std::size_t at = text.find(x.from);
            REQUIRE(at != std::string::npos);
            text.replace(at, x.from.size(), x.to);
            const std::string dir = long_path ? std::string(60, 'd') + "/" + std::string(70, 'e') + "/" : std::string();
            const std::size_t el = text.find(x.element);
            REQUIRE(el != std::string::npos);
            Case c = make(x.name + (long_path ? " (a 135-character path)" : ""), "verify " + dir + "g.xml --topology graph:m.json",
                          {{"x.xml", nccl_box(pcie)}, {dir + "g.xml", text}}, "{C} machine --nccl-topo x.xml -o m.json", 2, "",
                          (long_path ? "/" : "") + place("g.xml", text, el) + ": ");  // a long path may be elided in its middle, never its place
            out.push_back(probe(c));
        }
    return out;
}

// ------------------------------------------------------------------------------------------------
// Messages with long paths: NCCL XML, MSCCL++ plans and graph files keep file:line:col (item 6),
// and MSCCL++'s numbers past 2^63 are called what they are.

std::vector<Probe> long_path_cases() {
    std::vector<Probe> out;
    for (std::size_t len : {100, 121, 160, 240}) {
        const std::string dir = std::string(len / 2, 'p') + "/" + std::string(len - len / 2 - 1, 'q') + "/";
        out.push_back(probe(make(fmt::format("NCCL XML left open, a {}-character directory", len), "machine --nccl-topo " + dir + "x.xml -o m.json",
                                 {{dir + "x.xml", "<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"0\" class=\"0x030200\">\n"}}, "", 2,
                                 "malformed NCCL topology XML", "/x.xml:4:1: ", {"m.json"})));
        nlohmann::ordered_json plan = nlohmann::ordered_json::parse(slurp(source("tests/data/mscclpp/ring_allgather_8.json")));
        plan["gpus"][5].erase("input_chunks");
        out.push_back(probe(make(fmt::format("MSCCL++ plan without input_chunks, a {}-character directory", len), "verify " + dir + "p.json",
                                 {{dir + "p.json", plan.dump(1)}}, "", 2, "has no \"input_chunks\"", "/p.json:")));
        out.push_back(probe(make(fmt::format("graph file with a bad edge, a {}-character directory", len), "topo graph:" + dir + "g.json",
                                 {{dir + "g.json", "{\"processors\": 3,\n \"edges\": [[0,1],\n   [1,7]]}"}}, "", 2, "node 7 does not exist",
                                 "/g.json:3:4: ")));
    }
    // integers MSCCL++'s reader holds in 64 bits or not: never "a fraction or exponent", never get<int> throwing
    for (std::string v : {"9223372036854775808", "18446744073709551615", "18446744073709551616", "-9223372036854775809"}) {
        nlohmann::ordered_json plan = nlohmann::ordered_json::parse(slurp(source("tests/data/mscclpp/ring_allgather_8.json")));
        plan["gpus"][1]["threadblocks"][0]["ops"][0]["src_buff"][0]["index"] = 1;
        std::string text = plan.dump(1);
        const std::string key = "\"index\": 1";
        const std::size_t at = text.find(key);
        REQUIRE(at != std::string::npos);
        text.replace(at, key.size(), "\"index\": " + v);
        Probe p = probe(make("MSCCL++ index " + v, "verify p.json", {{"p.json", text}}, "", 2, "", "p.json:"));
        p.not_message = "fraction or exponent";
        out.push_back(p);
    }
    for (std::string v : {"2.0", "-0.0", "1e0"}) {
        nlohmann::ordered_json plan = nlohmann::ordered_json::parse(slurp(source("tests/data/mscclpp/ring_allgather_8.json")));
        std::string text = plan.dump(1);
        const std::size_t at = text.find("\"input_chunks\": ");
        REQUIRE(at != std::string::npos);
        const std::size_t end = text.find_first_of(",\n}", at + 16);
        text.replace(at, end - at, "\"input_chunks\": " + v);
        Probe p = probe(make("MSCCL++ input_chunks " + v, "verify p.json", {{"p.json", text}}, "", 2, "", "p.json:"));
        p.not_message = "throws type_error";
        p.either = true;  // nlohmann converts a float without throwing: read as the executor reads it, or refused at its place
        out.push_back(p);
    }
    return out;
}

// ------------------------------------------------------------------------------------------------
// --size / --sizes strings, verify, simulate, compare and bandwidth alike.

std::vector<Probe> size_cases() {
    std::vector<Probe> out;
    const std::string table = source("tests/data/ring8_allgather.json");
    const std::vector<std::string> good = {"7", "7B", "3KiB", "2 MiB", "1e4", "16K..16M:8", "1M..1M", "4K,64K,1G", "1.25K", "8192TiB..8192TiB",
                                           "1..2", "9007199254740992B"};
    const std::vector<std::string> bad = {"0B", "-4K", "1Kb", "1kB..", "..4M", "4M..1M", "1K..1M:0.5", "1K..1M:-2", "1K..1M:nan", "1K..1M:inf", "NaN",
                                          "Infinity", "1e-1", "1e309", "0x1p10", "1K,,", "1K;1M", "1K 1M", "\t", "1K..1M:1.000001", "9007199254740993B",
                                          "8193TiB", "1K..1M:2:2", "+", "1K..1M..1G"};
    const std::vector<std::string> fractions = {"1.5", "2.5B", "0.75K", "1000.1", "1K..1G:3.3"};
    for (std::string cmd : {"verify", "simulate", "compare"}) {
        const std::string flag = cmd == std::string("compare") ? "--sizes" : "--size";
        const std::string args = cmd == std::string("compare") ? table + " " + table : table;
        for (const std::string& s : good) out.push_back(probe(make(fmt::format("{} {} '{}'", cmd, flag, s), fmt::format("{} {} {} '{}'", cmd, args, flag, s), {}, "", 0, "")));
        for (const std::string& s : bad)
            out.push_back(probe(make(fmt::format("{} {} '{}'", cmd, flag, s), fmt::format("{} {} {} '{}'", cmd, args, flag, s), {}, "", 2, "bad size")));
        // a size that is not a whole number of bytes (item 8): refused, or said
        for (const std::string& s : fractions) {
            Probe p = probe(make(fmt::format("{} {} '{}' (not whole bytes)", cmd, flag, s), fmt::format("{} {} {} '{}'", cmd, args, flag, s), {}, "", 0, ""));
            if (s == "0.75K" || s == "1K..1G:3.3") {  // 768 bytes; sizes of a grid rounded as the grid says
                out.push_back(p);
                continue;
            }
            p.either = true;
            p.said = true;
            out.push_back(p);
        }
    }
    for (std::string s : {"1G", "'64K..1G:16'", "0", "1.5K.."})
        out.push_back(probe(make("bandwidth --size " + s, "bandwidth --topology ring:8 --collective allgather --size " + s, {}, "",
                                 s == "0" || s == "1.5K.." ? 2 : 0, s == "0" || s == "1.5K.." ? "bad size" : "")));
    return out;
}

// ------------------------------------------------------------------------------------------------
// MSCCL++ --size-range (compile and convert): 2^64 - 1 is the documented default maximum.

std::vector<Probe> size_range_cases() {
    std::vector<Probe> out;
    const std::string sched = source("schedules/nccl/ring_allgather.sched");
    struct R {
        std::string range;
        int code;
    };
    const std::vector<R> ranges = {{"1M..18446744073709551615", 0}, {"18446744073709551360..", 0}, {"..18446744073709551615", 0},
                                   {"16EiB..", 2},                  {"0..18446744073709551616", 2}, {"1M..64M", 0},
                                   {"64M..1M", 2},                  {"..1K", 0},                   {"1K..", 0},
                                   {"1K...2K", 2},                  {"1K..2K,4K", 2},              {"1.25K..2K", 0},
                                   {"0.3..1K", 2},                  {"-0..1K", 2},                 {"1e3..1e6", 0},
                                   {"inf..", 2},                    {"1K..1K", 0},                 {"1 K..2 K", 0}};
    for (const R& r : ranges)
        for (std::string how : {"compile", "convert"}) {
            const std::string args = how == std::string("compile")
                                         ? fmt::format("compile {} --format mscclpp --size-range '{}' -o p.json", sched, r.range)
                                         : fmt::format("convert t.json --format mscclpp --size-range '{}' -o p.json", r.range);
            const std::string setup = how == std::string("compile") ? "" : fmt::format("{{C}} compile {} -o t.json", sched);
            Case c = make(fmt::format("{} --size-range '{}'", how, r.range), args, {}, setup, r.code, r.code == 2 ? "--size-range" : "", "", {"p.json"});
            if (r.code == 0) c.absent.clear();
            out.push_back(probe(c));
        }
    return out;
}

// ------------------------------------------------------------------------------------------------
// `collsched compose` (folded into collsched, issue 57 item 5): the contract of every command.

std::vector<Probe> compose_cases() {
    std::vector<Probe> out;
    const std::string m = " --topology " + collsched::test::machine("h100rail2x8") + " --size 64M";
    const std::vector<std::string> usage = {m + " --timeout -0.5", m + " --timeout inf", m + " --timeout ''", m + " --timeout 1e400",
                                            m + " --pieces -1", m + " --pieces 1025", m + " --pieces 2.5", m + " --pieces ''",
                                            m + " --shape ''", m + " --pieces 2 --shape ''", m + " --pieces 2 --shape 'flat ring'",
                                            m + " --pieces 2 --shape 'hierarchical rsag+direct' --shape x", m + " --dir ''",
                                            m + " --collective broadcast:0", m + " --collective allgatherx", m + " --model colour=red",
                                            " --topology ring:4 --size 0", " --topology ring:4 --size 1.5K..", " --topology ring:4 --sizes 1M,1G",
                                            " --topology nosuch:4 --size 1M", " --size 1M", m + " --output", m + " -o " + std::string("nodir/t.json"),
                                            m + " --dir f.txt"};
    for (const std::string& args : usage) {
        Case c = make("compose" + args, "compose" + args, {{"f.txt", "a file, not a folder"}}, "", 2, "", "", {"t.json", "nodir"});
        out.push_back(probe(c));
    }
    // what it writes, it writes before printing, and each table is read back by verify --size
    out.push_back(probe(make("compose -o then verify", "verify t.json --size 64M", {}, "{C} compose" + m + " -o t.json --timeout 30", 0, "", "", {}, "holds")));
    Probe late = probe(make("compose --timeout 0.0001", "compose" + m + " --timeout 0.0001 -o t.json", {}, "", 3, ""));
    late.c.or_code = 0;  // a fast machine may finish one shape
    late.not_message = "no construction applies";
    out.push_back(late);
    out.push_back(probe(make("compose --pieces 1 on ring:4", "compose --topology ring:4 --size 1M --pieces 1", {}, "", 0, "")));
    Probe none = probe(make("compose on linear:2 with inject=once", "compose --topology linear:2 --model inject=once --size 1M -o t.json", {}, "", 3,
                            "", "", {"t.json"}));
    out.push_back(none);
    return out;
}

// ------------------------------------------------------------------------------------------------
// --library (not a catalog, not a file) and --memory.

std::vector<Probe> library_memory_cases() {
    std::vector<Probe> out;
    const std::string opt = "optimize --topology ring:4 --collective allgather --size 1M --timeout 20 --library ";
    struct L {
        std::string name, text;
    };
    const std::vector<L> libs = {{"an empty file", ""},
                                 {"an empty object", "{}"},
                                 {"a list", "[1, 2, 3]"},
                                 {"a string", "\"catalog\""},
                                 {"JSON left open", "{\"schedules\": [\n  {\"name\": \"x\""},
                                 {"NUL bytes", std::string("{\"a\":\0\0}", 8)},
                                 {"a graph file", "{\"processors\": 4, \"edges\": [[0,1],[1,2],[2,3],[3,0]]}"},
                                 {"deeply nested", std::string(300, '[') + std::string(300, ']')},
                                 {"a table", slurp(source("tests/data/ring8_allgather.json"))}};
    // a file that is not a catalog (item 8): exit 2 before the run (docs/errors.md; it was a note and exit 0)
    for (const L& l : libs) out.push_back(probe(make("--library " + l.name, opt + "lib.json", {{"lib.json", l.text}}, "", 2, "", "lib.json")));
    for (const auto& [file, message] : std::vector<std::pair<std::string, std::string>>{
             {".", ".: is a directory"}, {"nosuch.json", "nosuch.json: cannot open"}, {"''", "cannot open"}, {"/dev/zero", "/dev/zero: is a character device"}})
        out.push_back(probe(make("--library " + file, opt + file, {}, "", 2, message)));
    out.push_back(probe(make("--library the shipped catalog", opt + source("schedules/catalog.json"), {}, "", 0, "")));
    const std::string base = "optimize --topology ring:4 --collective allgather --memory ";
    for (std::string m : {"''", "' '", "-1G", "100.5%", "1e20T", "4GG", "0x100", "1 2", "4G,", "%"}) {
        Probe p = probe(make("--memory " + m, base + m, {}, "", 2, ""));
        out.push_back(p);
    }
    for (std::string m : {"3G", "3 GiB", "10%", "0", "2048MB"}) out.push_back(probe(make("--memory " + m, base + "'" + m + "'", {}, "", 0, "")));
    out.push_back(probe(make("--memory 1K: a budget nothing fits", base + "1K", {}, "", 3, "")));
    for (std::string env : {"COLLSCHED_MAX_MEMORY_MB= ", "COLLSCHED_MAX_MEMORY_MB=1e3 ", "COLLSCHED_MAX_MEMORY_MB=1099511627777 "}) {
        Case c = make("optimize with " + env, "optimize --topology ring:4 --collective allgather", {}, "", 2, "COLLSCHED_MAX_MEMORY_MB");
        c.env = env;
        out.push_back(probe(c));
    }
    return out;
}

// ------------------------------------------------------------------------------------------------
// NVLS and SHARP machines: written, read back, and used by the commands that time them.

std::vector<Probe> nvls_sharp_cases() {
    std::vector<Probe> out;
    for (std::string args : {"dgx-h200 --nvls", "dgx-b200 --nvls --boxes 2 --network rail --switches routers", "gb200-nvl72 --nvls",
                                    "dgx-h100 --sharp --boxes 2 --network switch", "dgx-h100 --sharp --nvls --boxes 4 --network fat-tree:2 --boxes-per-leaf 2",
                                    "dgx-b200 --sharp --boxes 2 --network rail --switches groups", "dgx-h100 --nvls --sharp --boxes 2 --network rail --nic-down 3",
                                    "dgx-h100 --nvls --boxes 2 --network rail --slow-link 0-1:0.5"}) {
        Probe p = probe(make("machine " + args, "machine " + args + " -o m.json", {}, "", 0, ""));
        p.machine_file = "m.json";
        if (args.find("--nic-down") != std::string::npos || args.find("--slow-link") != std::string::npos) p.either = true;
        out.push_back(p);
    }
    for (std::string coll : {"broadcast:0", "reduce_scatter", "allgather"})
        for (std::string machine : {"dgx-h100 --nvls", "dgx-h100 --sharp --nvls --boxes 2 --network rail"}) {
            Case c = make("bandwidth " + coll + " on " + machine, "bandwidth --topology graph:m.json --collective " + coll + " --timeout 20", {},
                          "{C} machine " + machine + " -o m.json", 0, "");
            c.or_code = 3;  // a schedule above the bound is exit 3, never bad input
            out.push_back(probe(c));
        }
    return out;
}

#ifdef COLLSCHED_PYTHON_MODULE
// ------------------------------------------------------------------------------------------------
// The Python module: hostile values are collsched.InputError with the reason (a machine, its
// links, groups and routers, compare's names, sizes), never silently truncated or "null".

struct Snippet {
    std::string name, code;
};

std::vector<Snippet> python_snippets() {
    return {
        {"Machine(3.7)", "collsched.Machine(3.7).link(0, 1).link(1, 2).save(p)"},
        {"Machine(False)", "collsched.Machine(False).save(p)"},
        {"Machine(None)", "collsched.Machine(None).save(p)"},
        {"Machine(-3)", "collsched.Machine(-3).save(p)"},
        {"Machine(2**65)", "collsched.Machine(2**65).save(p)"},
        {"Machine(float('nan'))", "collsched.Machine(float('nan')).save(p)"},
        {"link(0, None)", "collsched.Machine(2).link(0, None).save(p)"},
        {"link(None, None)", "collsched.Machine(2).link(None, None).save(p)"},
        {"link(0.0, 1)", "collsched.Machine(2).link(0.0, 1).save(p)"},
        {"link(True, 1)", "collsched.Machine(2).link(True, 1).save(p)"},
        {"link cap=2.5", "collsched.Machine(2).link(0, 1, cap=2.5).save(p)"},
        {"link cap=0", "collsched.Machine(2).link(0, 1, cap=0).save(p)"},
        {"link type=None name", "m = collsched.Machine(2); m.link(0, 1, type=m.link_type(None, bandwidth='1 GB/s')); m.save(p)"},
        {"link_type(3)", "m = collsched.Machine(2); m.link(0, 1, type=m.link_type(3, bandwidth='1 GB/s')); m.save(p)"},
        {"link_type('a b')", "m = collsched.Machine(2); m.link(0, 1, type=m.link_type('a b', bandwidth='1 GB/s')); m.save(p)"},
        {"router(None) as an end", "collsched.Machine(2).link(0, collsched.Machine(2).router(None)).save(p)"},
        {"router(None)", "m = collsched.Machine(2); m.router(None); m.link(0, 1).save(p)"},
        {"link to a router None", "collsched.Machine(2).link(0, None).link(1, None).save(p)"},
        {"group(None, 1)", "collsched.Machine(2).link(0, 1).group(None, 1, out_of=0).save(p)"},
        {"group cap 1.5", "collsched.Machine(2).link(0, 1).group('g', 1.5, out_of=0).save(p)"},
        {"compare({None: t})", "t = collsched.compile(RING); collsched.compare({None: t, 'b': t}, sizes='1K')"},
        {"compare({'a': t, None: t})", "t = collsched.compile(RING); collsched.compare({'a': t, None: t}, sizes='1K')"},
        {"verify size=-1", "collsched.verify(collsched.compile(RING), size=-1)"},
        {"verify size=None in a list", "collsched.verify(collsched.compile(RING), size=[1024, None])"},
        {"verify size=2**53+1", "collsched.verify(collsched.compile(RING), size=2**53 + 1)"},
    };
}

constexpr const char* python_ring = "param n = 4\\ntopology ring(n)\\ncollective allgather\\nfor t in 1 .. n - 1 {\\n  step t {\\n"
                                    "    for p in 0 .. n - 1 { send p -> (p + 1) % n msg b((p - t + 1 + n) % n) }\\n  }\\n}\\n";
#endif

}  // namespace

TEST_CASE("hostile fourth: NCCL graph files in and out") { run_probes("nccl graph", nccl_graph_cases()); }

TEST_CASE("hostile fourth: long paths keep file:line:col, and MSCCL++ numbers are named for what they are") {
    run_probes("messages", long_path_cases());
}

TEST_CASE("hostile fourth: --size and --sizes strings") { run_probes("sizes", size_cases()); }

TEST_CASE("hostile fourth: MSCCL++ --size-range") { run_probes("size ranges", size_range_cases()); }

TEST_CASE("hostile fourth: collsched compose under the command-line contract") { run_probes("compose", compose_cases()); }

TEST_CASE("hostile fourth: --library and --memory") { run_probes("library and memory", library_memory_cases()); }

TEST_CASE("hostile fourth: NVLS and SHARP machines written, read back and timed") { run_probes("nvls and sharp", nvls_sharp_cases()); }

TEST_CASE("hostile fourth: reduce_scatter's bound with reduction in the network is at least the bound without it (item 7)") {
    // h100nvls and h100sharp 8 x 8 are h100rail 8 x 8 with switches that add (the boxes' NVSwitch; and the rails'):
    // reduce_scatter's bound there was 0.80 to 0.90 of the rail machine's (the per-GPU cut only), then on SHARP 1.35 us
    // below it (a set cut charged the rail switch's first hop, not the second to a processor); neither is weaker now,
    // and each is at or below the fastest schedule verified on its machine
    collsched::test::Scratch s("hostile_fourth_bounds");
    const std::string sizes = "64K,1M,16M,96M,256M,1G,3G";
    auto bounds = [&](const std::string& machine) {
        const auto r = collsched::test::run_shell(fmt::format("cd '{}' && timeout -s KILL 120 '{}' optimize --topology {} --collective reduce_scatter --sizes {} "
                                                              "--json --timeout 60 > b.json",
                                                              s.dir.string(), COLLSCHED_BINARY, collsched::test::machine(machine), sizes));
        INFO(machine << ": " << r.err.substr(0, 1000));
        CHECK((r.code == 0 || r.code == 3));
        std::vector<std::pair<double, double>> out;  // bound, fastest verified
        const nlohmann::json j = nlohmann::json::parse(slurp((s.dir / "b.json").string()));
        for (const auto& x : j["sizes"])
            out.emplace_back(x["time_lower_bound_s"].get<double>(), x["predicted_time_s"].is_number() ? x["predicted_time_s"].get<double>() : 1e300);
        return out;
    };
    const auto rail = bounds("h100rail8x8");
    REQUIRE(rail.size() == 7);
    std::size_t cases = 0;
    for (const std::string machine : {"h100nvls8x8", "h100sharp8x8"}) {
        const auto b = bounds(machine);
        REQUIRE(b.size() == rail.size());
        for (std::size_t i = 0; i < b.size(); ++i, ++cases) {
            INFO("case: [bounds] " << machine << " at size " << i << " of " << sizes << ": " << b[i].first << " s against h100rail8x8's " << rail[i].first);
            CHECK(b[i].first >= rail[i].first * (1 - 1e-12));
            CHECK(b[i].first <= b[i].second * (1 + 1e-12));
        }
    }
    MESSAGE("hostile campaign: [bounds] " << cases << " cases");
}

#ifdef COLLSCHED_PYTHON_MODULE
TEST_CASE("hostile fourth: the Python module refuses hostile values with collsched.InputError") {
    const std::filesystem::path module = std::filesystem::path(COLLSCHED_BINARY).parent_path().parent_path() / "python";
    REQUIRE_MESSAGE(std::filesystem::exists(module / "collsched"), "the Python module is not built: " << module);
    collsched::test::Scratch s("hostile_fourth_python");
    const auto snippets = python_snippets();
    for (const Snippet& sn : snippets) {
        const std::string script = fmt::format(
            "import os, sys\nimport collsched\nRING = \"{}\"\np = os.path.join(r'{}', 'm.json')\ntry:\n    {}\n"
            "except collsched.InputError as e:\n    print('input error:', e); sys.exit(0)\n"
            "except BaseException as e:\n    print('other:', type(e).__name__, e); sys.exit(5)\nprint('accepted'); sys.exit(4)\n",
            python_ring, s.dir.string(), sn.code);
        const std::string file = s.file("case.py", script);
        const auto r = collsched::test::run_shell(fmt::format("cd '{}' && PYTHONPATH='{}' timeout -s KILL 120 python3 '{}'", s.dir.string(), module.string(), file));
        INFO("case: [python] " << sn.name);
        INFO("code: " << sn.code);
        INFO("stdout: " << r.out.substr(0, 1000));
        INFO("stderr: " << r.err.substr(0, 2000));
        CHECK(r.code == 0);
    }
    MESSAGE("hostile campaign: [python] " << snippets.size() << " cases");
}
#endif
