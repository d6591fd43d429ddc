// The user's hand (issue 14): standard input, input kinds told by content, output formats from
// -o's extension, report wording. Each friction a newcomer met has its test here.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"

using collsched::test::run;
using collsched::test::source;

namespace {

struct Dir {
    std::string path;
    Dir() {
        char tmpl[] = "/tmp/collsched_hand_XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~Dir() { std::filesystem::remove_all(path); }
    std::string file(const std::string& name, const std::string& text) const {
        std::string p = path + "/" + name;
        std::ofstream(p) << text;
        return p;
    }
    std::string read(const std::string& name) const {
        std::ifstream in(path + "/" + name);
        std::ostringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
};

const std::string bcast = "topology ring(4)\ncollective broadcast(0)\nstep 1 { send 0 -> 1 }\nstep 2 { send 1 -> 2\n send 0 -> 3 }\n";

}  // namespace

TEST_CASE("hand: compile - and verify - read standard input") {
    Dir d;
    std::string sched = d.file("b.sched", bcast);
    auto c = run("compile - < " + sched);
    REQUIRE(c.code == 0);
    auto j = nlohmann::json::parse(c.out);
    CHECK(j["topology"] == "ring:4");
    CHECK(j["transfers"].size() == 3);
    auto v = run("verify - < " + sched);
    CHECK(v.code == 0);
    CHECK(v.out.starts_with("verdict: holds (2 steps, 3 transfers;"));
    // A table on standard input is a table.
    std::string table = d.file("t.json", c.out);
    auto vt = run("verify - < " + table);
    CHECK(vt.code == 0);
    CHECK(vt.out.starts_with("verdict: holds (2 steps, 3 transfers;"));
    // Errors name <stdin>.
    auto bad = run("compile - < " + d.file("bad.sched", "topology ring(4)\nstep 1 { send 0 -> 9 }\n"));
    CHECK(bad.code == 2);
    CHECK(bad.err.find("<stdin>:2:") != std::string::npos);
    CHECK(bad.err.find("1 error in <stdin>; nothing written") != std::string::npos);
}

TEST_CASE("hand: a schedule saved as .txt is a schedule, a CSV table as .txt is a table") {
    Dir d;
    auto v = run("verify " + d.file("b.txt", bcast));
    CHECK(v.code == 0);
    CHECK(v.out.starts_with("verdict: holds (2 steps, 3 transfers;"));
    auto csv = run("convert " + d.file("b2.sched", bcast) + " --format csv");
    REQUIRE(csv.code == 0);
    auto vc = run("verify " + d.file("t.txt", csv.out));
    CHECK(vc.code == 0);
    CHECK(vc.out.starts_with("verdict: holds (2 steps, 3 transfers;"));
}

TEST_CASE("hand: the output format follows -o's extension unless --format says otherwise") {
    Dir d;
    std::string sched = d.file("b.sched", bcast);
    REQUIRE(run("compile " + sched + " -o " + d.path + "/t.csv").code == 0);
    CHECK(d.read("t.csv").starts_with("# format=collsched.table/1"));
    REQUIRE(run("compile " + sched + " -o " + d.path + "/t.svg").code == 0);
    CHECK(d.read("t.svg").find("<svg") != std::string::npos);
    REQUIRE(run("compile " + sched + " -o " + d.path + "/t2.sched").code == 0);
    CHECK(d.read("t2.sched").find("hop ") != std::string::npos);
    REQUIRE(run("compile " + sched + " -o " + d.path + "/t.json").code == 0);
    CHECK(d.read("t.json").starts_with("{\"format\": \"collsched.table/1\""));
    REQUIRE(run("compile " + sched + " --format json -o " + d.path + "/forced.csv").code == 0);
    CHECK(d.read("forced.csv").starts_with("{\"format\": \"collsched.table/1\""));
    REQUIRE(run("convert " + d.path + "/t.json -o " + d.path + "/c.html").code == 0);
    CHECK(d.read("c.html").find("<html") != std::string::npos);
    // Unknown extensions keep the default, JSON.
    REQUIRE(run("compile " + sched + " -o " + d.path + "/t.out").code == 0);
    CHECK(d.read("t.out").starts_with("{\"format\": \"collsched.table/1\""));
}

TEST_CASE("hand: verify says why a property does not apply, and counts in the singular") {
    Dir d;
    auto v = run("verify " + d.file("one.sched", "topology ring(4)\ncollective custom\nstep 1 { send 0 -> 1 msg b(0) }\n"));
    CHECK(v.code == 0);
    CHECK(v.out.starts_with("verdict: holds (1 step, 1 transfer;"));
    CHECK(v.out.find("  ports         not applicable (multi-port)\n") != std::string::npos);
    CHECK(v.out.find("  queues        not applicable (queues unbounded)\n") != std::string::npos);
    CHECK(v.out.find("skipped") == std::string::npos);
    // JSON keeps the machine word.
    auto j = nlohmann::json::parse(run("verify --json " + d.path + "/one.sched").out);
    CHECK(j["properties"]["ports"] == "skipped");
}

TEST_CASE("hand: demo shows the paper's 22 steps, then the 21-step optimum and its proof, --json") {
    auto r = run("demo");
    CHECK(r.code == 0);
    CHECK(r.out.find("1. The paper's schedule: schedules/bft/ebft_alltoall.sched -D n=16") != std::string::npos);
    CHECK(r.out.find("verify (direct checker): holds in 22 steps; simulate: completed in 22 steps") != std::string::npos);
    CHECK(r.out.find("2. What collsched found: schedules/found/ebft16-alltoall-queues-unbounded.sched") != std::string::npos);
    CHECK(r.out.find("verify (direct checker): holds in 21 steps; simulate: completed in 21 steps") != std::string::npos);
    CHECK(r.out.find("optimal: no schedule takes fewer than 21 steps") != std::string::npos);
    CHECK(r.out.find("1 step fewer than the paper's schedule") != std::string::npos);
    auto js = run("demo --json -n 8");
    REQUIRE(js.code == 0);
    auto j = nlohmann::json::parse(js.out);
    CHECK(j["paper"]["steps"] == 12);
    CHECK(j["paper"]["equal_to_reference"] == true);
    CHECK(j["found"]["steps"] == 11);
    CHECK(j["found"]["lower_bound"]["steps"] == 11);
    CHECK(j["found"]["proved_optimal"] == true);
    CHECK(j["ok"] == true);
    // n = 4: the paper's schedule is the optimum.
    auto four = run("demo -n 4");
    CHECK(four.code == 0);
    CHECK(four.out.find("the paper's schedule is already optimal here") != std::string::npos);
}

TEST_CASE("hand: under --json errors are JSON on standard output") {
    Dir d;
    auto r = run("verify --json " + d.file("bad.sched", "topology ring(4)\nstep 1 { send 0 -> 9 }\n"));
    CHECK(r.code == 2);
    CHECK(r.err.empty());
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["error"] == "1 error in " + d.path + "/bad.sched");
    CHECK(j["exit_code"] == 2);
    REQUIRE(j["diagnostics"].size() == 1);
    CHECK(j["diagnostics"][0]["code"] == "E040");
    CHECK(j["diagnostics"][0]["line"] == 2);
    CHECK(j["diagnostics"][0]["severity"] == "error");
    CHECK(j["diagnostics"][0]["file"] == d.path + "/bad.sched");
    // Errors without diagnostics, and command-line errors.
    auto missing = run("verify --json " + d.path + "/none.json");
    CHECK(missing.code == 2);
    auto jm = nlohmann::json::parse(missing.out);
    CHECK(jm["diagnostics"].empty());
    CHECK(jm["error"].get<std::string>().find("none.json") != std::string::npos);
    auto usage = run("verify --json --engine nope " + d.path + "/x.json");
    CHECK(usage.code == 2);
    CHECK(nlohmann::json::parse(usage.out)["error"].get<std::string>().find("nope") != std::string::npos);
    // Without --json, still text on stderr.
    auto text = run("verify " + d.path + "/bad.sched");
    CHECK(text.out.empty());
    CHECK(text.err.find("error[E040]") != std::string::npos);
}

TEST_CASE("hand: --help shows defaults") {
    auto h = run("verify --help");
    CHECK(h.out.find("--engine TEXT:{direct,z3,both}=direct") != std::string::npos);
    CHECK(h.out.find("--max-violations UINT=20") != std::string::npos);
    auto c = run("compile --help");
    CHECK(c.out.find("=500000000") != std::string::npos);
    auto dm = run("demo --help");
    CHECK(dm.out.find("-n UINT=16") != std::string::npos);
}

TEST_CASE("hand: compile --locations round-trips \"at\" through a table file") {
    Dir d;
    std::string sched = d.file("b.sched", bcast);
    REQUIRE(run("compile --locations " + sched + " -o " + d.path + "/t.json").code == 0);
    REQUIRE(run("convert " + d.path + "/t.json -o " + d.path + "/u.json").code == 0);
    auto j = nlohmann::json::parse(d.read("u.json"));
    REQUIRE(j["transfers"].size() == 3);
    CHECK(j["transfers"][0]["at"] == sched + ":3:10");
    // A schedule converted to JSON carries no "at" (only compile --locations writes it).
    CHECK(run("convert " + sched).out.find("\"at\"") == std::string::npos);
}

TEST_CASE("hand: a send whose destination already holds its data is a warning, an error with --strict") {
    Dir d;
    // The ring allgather without `msg`: every processor sends its own b(p) n - 1 times.
    std::string sched = d.file("ag.sched", "param n = 4\ntopology ring(n)\ncollective allgather\nfor s in 1 .. n - 1 {\n  step s {\n"
                                           "    for k in 0 .. n - 1 { send k -> (k + 1) % n }\n  }\n}\n");
    auto c = run("compile " + sched + " -o " + d.path + "/t.json");
    CHECK(c.code == 0);
    CHECK(c.err.find(sched + ":6:27: warning[W001]: this send brings b(0) to processor 1, which a send in step 1 already brings it "
                     "to (when s = 2, k = 0)") != std::string::npos);
    auto strict = run("compile --strict " + sched);
    CHECK(strict.code == 2);
    CHECK(strict.out.empty());
    CHECK(strict.err.find("error[W001]") != std::string::npos);
    auto v = run("verify " + sched);
    CHECK(v.code == 1);  // incomplete, as before, and now with the reason on stderr
    CHECK(v.err.find("warning[W001]") != std::string::npos);
    // Sending a processor its own initial data.
    auto own = run("compile " + d.file("own.sched", "topology ring(4)\ncollective allgather\nstep 1 { send 0 -> 1 msg b(0) }\n"
                                                    "step 2 { send 1 -> 0 msg b(0) }\n"));
    CHECK(own.code == 0);
    CHECK(own.err.find("warning[W001]: this send brings b(0) to processor 0, which holds it from the start") != std::string::npos);
    // A correct schedule has no warning.
    auto ok = run("compile " + source("schedules/bft/ebft_alltoall.sched") + " -D n=8");
    CHECK(ok.code == 0);
    CHECK(ok.err.empty());
}

// W001 on the catalog's ideal-tree broadcast is right: the schedule (the paper's Algorithm 2 as
// written) does deliver b(0) to processor 1 four times. Phase 1 of Sparse-Broadcast(first, n)
// makes its a copies in the first m1 leaves; phase 2 then makes b copies in every block of n/a
// leaves, block 0 included, where some of them already are. The table shows it, not only the
// warning: every delivery to processor 1 is r1.0 -> 1 of b(0).
TEST_CASE("hand: W001 on schedules/ideal/broadcast.sched names real repeated deliveries") {
    Dir d;
    const std::string sched = source("schedules/ideal/broadcast.sched");
    auto c = run("compile " + sched + " -o " + d.path + "/t.json");
    REQUIRE(c.code == 0);
    CHECK(c.err.find(sched + ":186:71: warning[W001]: this send brings b(0) to processor 1, which a send in step 1 already brings "
                     "it to (when u = 0, c1 = 0, c2 = 1, x = 0)") != std::string::npos);
    CHECK(c.err.find(sched + ":176:97: warning[W001]: this send brings b(0) to processor 2, which a send in step 3 already brings "
                     "it to (when u = 0, c1 = 1, x = 0, j = 1)") != std::string::npos);
    auto j = nlohmann::json::parse(d.read("t.json"));
    std::vector<int> into_1, into_2;
    for (const auto& x : j["transfers"]) {
        if (x["to"] == "1") into_1.push_back(x["step"].get<int>());
        if (x["to"] == "2") into_2.push_back(x["step"].get<int>());
        if (x["to"] == "1" || x["to"] == "2") CHECK(x["msg"] == "b(0)");
    }
    CHECK(into_1 == std::vector<int>{2, 8, 18, 24});
    CHECK(into_2 == std::vector<int>{6, 22});
    // Still a correct broadcast: the repeats waste channel time, not correctness.
    CHECK(run("verify " + sched).code == 0);
}

TEST_CASE("hand: SVG cells carry hover titles with the messages, fat trees at 64 show their router links") {
    Dir d;
    auto svg = run("convert " + source("tests/data/ebft4_alltoall.json") + " --format svg");
    REQUIRE(svg.code == 0);
    CHECK(svg.out.find("<title>") != std::string::npos);
    CHECK(svg.out.find("m(0,") != std::string::npos);
    REQUIRE(run("compile " + source("schedules/bft/ebft_alltoall.sched") + " -D n=64 -o " + d.path + "/t64.json").code == 0);
    auto big = run("convert " + d.path + "/t64.json --format svg");
    REQUIRE(big.code == 0);
    CHECK(big.out.find("r1.0\u2192r2.0") != std::string::npos);  // a router link has its row
    CHECK(big.out.find(">P0<") == std::string::npos);            // not the processor view
    auto procs = run("convert " + d.path + "/t64.json --format svg --rows processors");
    CHECK(procs.out.find(">P0<") != std::string::npos);
    auto ring = run("convert " + source("tests/data/ring8_allgather.json") + " --format svg --rows routers");
    CHECK(ring.code == 2);
    CHECK(ring.err.find("draws the router links of a fat tree") != std::string::npos);
}

TEST_CASE("hand: shell completion from the command line's own definition, the man page from --help") {
    auto b = run("completion bash");
    REQUIRE(b.code == 0);
    CHECK(b.out.find("complete -o filenames -F _collsched collsched") != std::string::npos);
    CHECK(b.out.find("verify) opts=\"") != std::string::npos);
    CHECK(b.out.find("--strict") != std::string::npos);
    Dir d;
    std::string script = d.file("c.bash", b.out);
    CHECK(std::system(("bash -n " + script).c_str()) == 0);  // it parses
    // Completing `collsched ver` and `collsched verify --ma` in bash itself.
    std::string probe = d.file("probe.bash", "source " + script +
                                                 "\nCOMP_WORDS=(collsched ver); COMP_CWORD=1; _collsched; echo \"${COMPREPLY[@]}\"\n"
                                                 "COMP_WORDS=(collsched verify --ma); COMP_CWORD=2; _collsched; echo \"${COMPREPLY[@]}\"\n");
    FILE* p = ::popen(("bash " + probe).c_str(), "r");
    REQUIRE(p);
    char buf[256];
    std::string got;
    while (std::fgets(buf, sizeof buf, p)) got += buf;
    ::pclose(p);
    CHECK(got == "verify\n--max-steps --max-violations\n");  // verify reads MSCCL-IR too (--max-steps)
    auto z = run("completion zsh");
    REQUIRE(z.code == 0);
    CHECK(z.out.starts_with("#compdef collsched\n"));
    CHECK(z.out.find("'--json[") != std::string::npos);
    // The man page (the `man` target, scripts/man.sh with help2man, which setup installs).
    std::filesystem::path man = std::filesystem::path(COLLSCHED_BINARY).parent_path().parent_path() / "collsched.1";
    REQUIRE(std::filesystem::exists(man));
    std::ifstream in(man);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str().find(".SH COMMANDS") != std::string::npos);
    CHECK(text.str().find("collsched verify") != std::string::npos);
}

TEST_CASE("hand: probe --witness-dir creates the directory, or says why it cannot") {
    Dir d;
    auto r = run("probe ideal-broadcast --n 4 --w 1 --witness-dir " + d.path + "/new/dir");
    CHECK(r.code == 0);
    CHECK(std::filesystem::exists(d.path + "/new/dir/ideal4-w1-broadcast.json"));
    CHECK(std::filesystem::exists(d.path + "/new/dir/ideal4-w1-broadcast.sched"));
    std::string file = d.file("plain", "x");
    auto bad = run("probe ideal-broadcast --n 4 --w 1 --witness-dir " + file + "/sub");
    CHECK(bad.code == 2);
    CHECK(bad.err.find("--witness-dir " + file + "/sub: cannot create the directory") != std::string::npos);
}

TEST_CASE("hand: counterexamples on a torus name processors by their coordinates too") {
    Dir d;
    auto v = run("verify " + d.file("t.sched", "topology torus(3, 3)\ncollective custom\nstep 1 {\n  send (0, 0) -> (0, 1) msg b(0)\n"
                                                "  send (1, 0) -> (1, 1) msg b(3)\n  send (0, 0) -> (0, 1) msg b(0)\n}\n"));
    CHECK(v.code == 1);
    CHECK(v.out.find("capacity: step 1, channel 0->1 (0, 0)->(0, 1): ") != std::string::npos);
    CHECK(v.err.find("warning[W001]") != std::string::npos);  // the second send brings b(0) to (0, 1) again
}
