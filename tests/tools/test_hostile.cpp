// Hostile input (issue 13, docs/fuzzing.md): the resource policy for input files, output safety,
// validated numbers and short error messages. Every example of the issue that belongs to these
// parts is a case here, run through the real executable.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dsl/excerpt.hpp"
#include "fuzz/targets.hpp"
#include "tests/tools/cli_run.hpp"

using namespace collsched;
using collsched::test::run;
using collsched::test::slurp;
using collsched::test::source;

namespace {

/// This file's scratch directories.
struct HostileScratch : collsched::test::Scratch {
    HostileScratch() : collsched::test::Scratch("hostile") {}
};

/// Runs a shell command line (with the collsched binary as $C); stdout, stderr and the exit code.
test::Run shell(const std::string& line) {
    static int counter = 0;
    std::string err = "/tmp/collsched_hostile_err." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    std::string cmd = "C=" + std::string(COLLSCHED_BINARY) + "; (" + line + ") 2>" + err;
    test::Run r;
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = slurp(err);
    std::remove(err.c_str());
    return r;
}

void refused(const test::Run& r, const std::string& message) {
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(r.out.empty());
}

const std::string ebft4 = source("tests/data/ebft4_alltoall.json");

bool is_char_device(const char* path) {
    struct stat st {};
    return ::lstat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

}  // namespace

TEST_CASE("hostile input: devices and directories are refused by name, not read") {
    HostileScratch s;
    auto r = run("compile /dev/zero");
    refused(r, "/dev/zero: error[E005]: cannot read the schedule file: is a character device, not a schedule");
    refused(run("verify /dev/urandom"), "collsched: error: /dev/urandom: is a character device, not a table or schedule");
    refused(run("convert /dev/zero.json"), "/dev/zero.json: cannot open file (No such file or directory)");
    std::string dir = s.dir.string();
    refused(run("verify " + dir), dir + ": is a directory, not a table or schedule\n");
    refused(run("compile " + dir), dir + ": error[E005]: cannot read the schedule file: is a directory, not a schedule\n");
    refused(run("simulate --stream " + s.file("d.sched")), "d.sched: cannot open file (No such file or directory)");
    refused(run("topo graph:" + dir), "topology 'graph:" + dir + "': graph file '" + dir + "': is a directory, not a graph file");
    refused(run("topo graph:/dev/zero"), "graph file '/dev/zero': is a character device, not a graph file");
}

TEST_CASE("hostile input: files are read up to a size limit that COLLSCHED_MAX_INPUT_MB raises") {
    HostileScratch s;
    std::string big = s.file("big.json", slurp(ebft4) + std::string(1'200'000, ' '));
    refused(shell("COLLSCHED_MAX_INPUT_MB=1 $C verify " + big),
            big + ": the table is larger than 1 MiB; set COLLSCHED_MAX_INPUT_MB to read larger files");
    auto ok = shell("COLLSCHED_MAX_INPUT_MB=2 $C verify " + big);
    CHECK(ok.code == 0);
    CHECK(ok.out.starts_with("verdict: holds"));
    refused(shell("COLLSCHED_MAX_INPUT_MB=0 $C verify " + big), "COLLSCHED_MAX_INPUT_MB must be a whole number of MiB from 1 to 2^40, not '0'");
    refused(shell("COLLSCHED_MAX_INPUT_MB=nan $C verify " + big), "not 'nan'");
    // A schedule over the limit is E005 with the same reason.
    std::string sched = s.file("big.sched", "# " + std::string(1'100'000, 'x') + "\n");
    refused(shell("COLLSCHED_MAX_INPUT_MB=1 $C compile " + sched), "cannot read the schedule file: the schedule is larger than 1 MiB");
    // Pipes are read (so `verify <(gen)` works), under the same limit: /dev/zero through a pipe stops at it.
    auto piped = shell("cat " + ebft4 + " | $C verify /dev/stdin");
    CHECK(piped.code == 0);
    CHECK(piped.out.starts_with("verdict: holds"));
    refused(shell("head -c 3000000 /dev/zero | COLLSCHED_MAX_INPUT_MB=1 $C verify -"),
            "<stdin>: the table or schedule is larger than 1 MiB");
    // Graph files have their own limit, 256 MiB, which the variable does not change.
    refused(shell("head -c 270000000 /dev/zero | COLLSCHED_MAX_INPUT_MB=1024 $C topo graph:/dev/stdin"),
            "topology 'graph:/dev/stdin': graph file '/dev/stdin': the graph file is larger than 256 MiB; a graph has at most 4096 nodes\n");
}

TEST_CASE("hostile input: numbers on the command line are finite and in range") {
    for (std::string t : {"nan", "inf", "-inf", "0", "-1", "1e300", "0x10", "", "5s"}) {
        CAPTURE(t);
        auto r = run("verify " + ebft4 + " --engine z3 --timeout '" + t + "'");
        refused(r, "--timeout: expected a number of seconds above 0 and up to 10000000, not '" + t + "'");
        CHECK(r.err.size() < 200);  // no 300-digit bound
    }
    refused(run("optimize --topology ring:4 --collective alltoall --timeout nan"),
            "--timeout: expected 0 (no limit) or a number of seconds up to 10000000, not 'nan'");
    refused(run("probe ebft-alltoall --n 4 --timeout inf"), "not 'inf'");
    // 0.5 s is a valid limit: the run is accepted (it proves the table, or, on a loaded machine,
    // reaches the limit: exit 3), never refused as bad input
    auto half = run("verify " + ebft4 + " --engine z3 --timeout 0.5");
    CHECK((half.code == 0 || half.code == 3));
    CHECK(half.err.find("--timeout") == std::string::npos);
    std::string sched = source("schedules/bft/ebft_alltoall.sched");
    refused(run("compile " + sched + " --max-transfers -1"), "--max-transfers: expected a whole number from 1 to 4611686018427387904, not '-1'");
    refused(run("compile " + sched + " --max-iterations 0"), "--max-iterations: expected a whole number from 1");
    refused(run("compile " + sched + " --max-transfers 18446744073709551616"), "not '18446744073709551616'");
    refused(run("verify " + ebft4 + " --max-violations -1"), "--max-violations: expected a whole number from 0");
    refused(run("demo -n 70000"), "-n: expected a whole number from 2 to 65534, not '70000'");
}

TEST_CASE("hostile input: a model key given twice on the command line is an error, as E032 is in the DSL") {
    refused(run("optimize --topology ring:4 --collective alltoall --model queues=none,queues=unbounded"),
            "collsched: error: model: 'queues' is given twice");
}

TEST_CASE("hostile output: standard output that cannot be written is exit 2 with the reason") {
    std::string sched = source("schedules/bft/ebft_alltoall.sched");
    for (std::string cmd : std::vector<std::string>{"compile " + sched, "convert " + ebft4, "convert " + ebft4 + " --format svg", "topo ring:4",
                            "verify " + ebft4, "compile " + sched + " --format csv"}) {
        CAPTURE(cmd);
        auto r = shell("$C " + cmd + " > /dev/full");
        CHECK(r.code == 2);
        CHECK(r.err == "collsched: error: standard output: write failed (No space left on device)\n");
    }
    auto help = shell("$C compile --help > /dev/full");
    CHECK(help.code == 2);
    CHECK(help.err == "collsched: error: standard output: write failed\n");
    CHECK(shell("$C --version > /dev/full").code == 2);
    // Closed standard output.
    auto closed = shell("$C topo ring:4 >&-");
    CHECK(closed.code == 2);
    CHECK(closed.err.find("standard output: write failed") != std::string::npos);
}

TEST_CASE("hostile output: -o writes into devices, FIFOs and /dev/stdout without replacing them") {
    std::string expected = run("convert " + ebft4).out;
    REQUIRE(!expected.empty());
    // A device that fails is an error; the device stays (as root it was replaced by a file before).
    auto full = run("convert " + ebft4 + " -o /dev/full");
    CHECK(full.code == 2);
    CHECK(full.err == "collsched: error: /dev/full: write failed (No space left on device)\n");
    CHECK(is_char_device("/dev/full"));
    CHECK(run("convert " + ebft4 + " -o /dev/null").code == 0);
    CHECK(is_char_device("/dev/null"));
    // /dev/stdout (a symbolic link to the pipe run() reads) is written into.
    auto out = run("convert " + ebft4 + " -o /dev/stdout");
    CHECK(out.code == 0);
    CHECK(out.out == expected);
    // A FIFO: its reader gets the whole output and the FIFO stays a FIFO.
    HostileScratch s;
    std::string fifo = s.file("fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::string got;
    std::thread reader([&] { got = slurp(fifo); });
    auto r = run("convert " + ebft4 + " -o " + fifo);
    reader.join();
    CHECK(r.code == 0);
    CHECK(got == expected);
    struct stat st {};
    REQUIRE(::lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
    CHECK(s.entries() == 1);
}

TEST_CASE("hostile output: regular files are replaced atomically, links followed, directories refused") {
    HostileScratch s;
    std::string expected = run("convert " + ebft4).out;
    // An existing file keeps its mode and gets the new content; no temporary is left.
    std::string file = s.file("t.json", "old");
    ::chmod(file.c_str(), 0640);
    CHECK(run("convert " + ebft4 + " -o " + file).code == 0);
    CHECK(slurp(file) == expected);
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);
    // A symbolic link to a regular file: the target is replaced, the link stays a link.
    std::string link = s.file("link.json");
    std::filesystem::create_symlink(file, link);
    CHECK(run("convert " + ebft4 + " --format csv -o " + link).code == 0);
    CHECK(std::filesystem::is_symlink(link));
    CHECK(slurp(file) == run("convert " + ebft4 + " --format csv").out);
    CHECK(s.entries() == 2);
    // A dangling link, a directory: refused, nothing written.
    std::string dangling = s.file("dangling.json");
    std::filesystem::create_symlink(s.dir / "missing.json", dangling);
    refused(run("convert " + ebft4 + " -o " + dangling), dangling + ": is a symbolic link to a missing file; nothing written");
    refused(run("convert " + ebft4 + " -o " + s.dir.string()),
            s.dir.string() + ": is a directory; output goes to regular files, character devices and pipes; nothing written");
}

// A write that fails half way (here: the file size limit, EFBIG) is exit 2 with the reason, and
// leaves neither the output nor its temporary; the old file, if any, is kept as it was.
TEST_CASE("hostile output: a failed write leaves no partial file") {
    HostileScratch s;
    std::string big = source("tests/data/ebft16_alltoall.json");
    std::string out = s.file("out.json");
    auto r = shell("trap '' XFSZ; ulimit -f 8; $C convert " + big + " -o " + out);
    CHECK(r.code == 2);
    CHECK(r.err == "collsched: error: " + out + ": write failed (File too large)\n");
    CHECK(s.entries() == 0);
    std::string kept = s.file("kept.json", "old content");
    r = shell("trap '' XFSZ; ulimit -f 8; $C convert " + big + " -o " + kept);
    CHECK(r.code == 2);
    CHECK(slurp(kept) == "old content");
    CHECK(s.entries() == 1);
    // The same limit on standard output redirected to a file: exit 2, not 0.
    r = shell("trap '' XFSZ; ulimit -f 8; $C convert " + big + " > " + s.file("stdout.json"));
    CHECK(r.code == 2);
    CHECK(r.err == "collsched: error: standard output: write failed (File too large)\n");
}

TEST_CASE("hostile messages: an unknown subcommand is named, with the closest one") {
    refused(run("foo"), "collsched: error: unknown subcommand 'foo' (did you mean 'topo'?); run `collsched --help` for the list\n");
    refused(run("comple x.sched"), "unknown subcommand 'comple' (did you mean 'compile'?)");
    refused(run("xyzzyqw"), "collsched: error: unknown subcommand 'xyzzyqw'; run `collsched --help` for the list\n");
    CHECK(run("").code == 2);  // no subcommand: CLI11's own message
}

TEST_CASE("hostile messages: long inputs are quoted in part, about 80 characters with an ellipsis") {
    HostileScratch s;
    std::string x(100'000, 'x');
    std::string table = slurp(ebft4);
    auto with = [&](const std::string& from, const std::string& to) {
        std::string t = table;
        t.replace(t.find(from), from.size(), to);
        return t;
    };
    std::vector<std::pair<std::string, test::Run>> cases;
    cases.emplace_back("topo ring:x", run("topo ring:" + x));
    cases.emplace_back("topo x", run("topo " + x));
    cases.emplace_back("--collective", run("optimize --topology ring:4 --collective " + x));
    cases.emplace_back("--model", run("optimize --topology ring:4 --collective alltoall --model queues=" + x));
    cases.emplace_back("--engine", run("verify " + ebft4 + " --engine " + x));
    cases.emplace_back("node", run("verify " + s.file("node.json", with("\"from\": \"0\"", "\"from\": \"" + x + "\""))));
    cases.emplace_back("topology", run("verify " + s.file("topo.json", with("\"topology\": \"ebft:4\"", "\"topology\": \"" + x + "\""))));
    cases.emplace_back("csv", run("verify " + s.file("t.csv", "# topology=ring:4\nstep,from,to,message\n1,0,1," + x + "\n")));
    cases.emplace_back("sched name", run("compile " + s.file("a.sched", "topology ring(4)\ncollective alltoall\nstep 1 { send 0 -> 1 msg " + x + " }\n")));
    cases.emplace_back("sched line", run("compile " + s.file("b.sched", "topology ring(4) " + x + "\n")));
    for (const auto& [what, r] : cases) {
        CAPTURE(what);
        CAPTURE(r.err.substr(0, 400));
        CHECK(r.code == 2);
        CHECK(r.err.size() < 600);
        // a quotation keeps its first 77 characters, an unquoted run its first 38 and last 39 (so a path keeps its place)
        CHECK(r.err.find(std::string(38, 'x') + "...") != std::string::npos);
        CHECK(r.err.find(std::string(78, 'x')) == std::string::npos);
    }
}

TEST_CASE("hostile messages: the offending value is kept") {
    HostileScratch s;
    std::string table = slurp(ebft4);
    for (std::string step : {"-1", "-9223372036854775808"}) {
        std::string t = table;
        t.replace(t.find("\"step\": 1"), 9, "\"step\": " + step);
        refused(run("verify " + s.file("s.json", t)), "s.json: transfers[0]: step " + step + " is below 1 (steps are numbered from 1)");
    }
    // Errors of the stages a table reader calls name the table file too.
    std::string t = table;
    t.replace(t.find("\"topology\": \"ebft:4\""), 20, "\"topology\": \"ebft:6\"");
    std::string bad = s.file("topo.json", t);
    auto r = run("verify " + bad);
    CHECK(r.code == 2);
    CHECK(r.err.starts_with("collsched: error: " + bad + ": topology 'ebft:6': "));
    refused(run("topo torus:1000000x1000000"),
            "topology 'torus:1000000x1000000': 1000000000000 processors (1000000x1000000) is more than collsched supports (65534)");
    refused(run("topo mesh:4294967296x4294967296x2"), "more than 2^64 processors (4294967296x4294967296x2)");
}

TEST_CASE("hostile input: a NUL byte is refused where it is, and messages show control bytes as \\xNN") {
    // nlohmann's lexer takes a NUL for the end of the input: a valid table or graph file followed
    // by a NUL and junk was accepted (session 6; the reference reader reads such a file, since
    // the fast one refuses it). A message that quotes a NUL was cut there when printed.
    HostileScratch s;
    std::string table = slurp(ebft4);
    using namespace std::string_literals;  // "..."s keeps the NUL bytes
    refused(run("verify " + s.file("t.json", table + "\0junk"s)),
            "t.json:" + std::to_string(std::count(table.begin(), table.end(), '\n') + 1) + ":1: malformed JSON: a NUL byte");
    refused(run("topo graph:" + s.file("g.json", "{\"processors\": 2, \"edges\": [[0, 1, 1]]}\0junk"s)),
            "g.json:1:40: malformed JSON graph: a NUL byte (JSON has none; inside a string write \\u0000)");
    refused(run("verify " + s.file("t.csv", "# topology=ring:3\nstep,from,to,message\n1,0,1,b(0)\0junk\n"s)),
            "t.csv:3: transfers[0] (step 1): unknown message 'b(0)\\x00junk'");
    CHECK(InputError("a\rb\x1b[2Jc\td\ne\x7f").what() == std::string("a\\x0db\\x1b[2Jc\td\ne\\x7f"));
}

TEST_CASE("excerpt, shorten_quotes and source_window") {
    CHECK(excerpt("short") == "short");
    CHECK(excerpt(std::string(80, 'a')) == std::string(80, 'a'));
    CHECK(excerpt(std::string(81, 'a')) == std::string(77, 'a') + "...");
    // Never cut inside a UTF-8 character: "é" is two bytes.
    std::string e;
    for (int i = 0; i < 50; ++i) e += "\xc3\xa9";
    std::string cut = excerpt(e);
    CHECK(cut == e.substr(0, 76) + "...");
    CHECK(shorten_quotes("unknown name 'abc' here") == "unknown name 'abc' here");
    CHECK(shorten_quotes("name '" + std::string(200, 'q') + "' and 'b'") == "name '" + std::string(77, 'q') + "...' and 'b'");
    CHECK(shorten_quotes("--engine: " + std::string(500, 'z') + " not in {a,b}") ==
          "--engine: " + std::string(38, 'z') + "..." + std::string(39, 'z') + " not in {a,b}");
    // a long path keeps its place: the middle of the run goes, not its `:line:col:`
    const std::string path = "/tmp/" + std::string(200, 'd') + "/plan.json";
    const std::string m = shorten_quotes(path + ":12:34: gpus[0]: has no \"id\"");
    CHECK(m.size() < 120);
    CHECK(m.find("/plan.json:12:34: gpus[0]: has no \"id\"") != std::string::npos);
    CHECK(m.starts_with("/tmp/ddd"));
    CHECK(shorten_quotes("it's a lone quote") == "it's a lone quote");
    // Many short quotations in a row, with and without blanks: still a short message.
    std::string quotes;
    for (int i = 0; i < 20000; ++i) quotes += "a'b'";
    const std::string many = shorten_quotes("topology '" + quotes + "': bad");
    CHECK(many.size() < 100);
    CHECK(many.starts_with("topology 'a'b'"));
    CHECK(many.ends_with(" bad"));
    std::string spaced;
    for (int i = 0; i < 20000; ++i) spaced += "a' 'b ";
    std::string s = shorten_quotes("spec " + spaced + " end");
    CHECK(s.size() < max_message + 40);
    CHECK(s.starts_with("spec a' 'b a' 'b"));
    CHECK(s.ends_with(" end"));
    CHECK(s.find(" bytes left out ...] ") != std::string::npos);
    std::size_t caret = 0;
    CHECK(source_window("short line", 3, caret) == "short line");
    CHECK(caret == 2);
    std::string line = std::string(1000, 'a') + "X" + std::string(1000, 'b');
    std::string w = source_window(line, 1001, caret);
    CHECK(w.starts_with("..."));
    CHECK(w.ends_with("..."));
    CHECK(w[caret] == 'X');
    CHECK(w.size() <= max_quote + 6);
    w = source_window(line, 1, caret);
    CHECK(caret == 0);
    CHECK(w.front() == 'a');
}

// Seeded random messages and source lines (quotes, blanks, two-byte characters, long runs): the
// shortened text is never longer, never holds a run of more than 120 non-blank bytes nor more
// than about 1,000 bytes in all, and stays valid UTF-8; the source window shows the caret's byte.
TEST_CASE("shorten_quotes and source_window on 2,000 random inputs") {
    std::uint64_t state = 0x2545F4914F6CDD1Dull;
    auto next = [&] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    auto valid_utf8 = [](const std::string& s) {
        for (std::size_t i = 0; i < s.size(); ++i) {
            auto c = static_cast<unsigned char>(s[i]);
            if (c < 0x80) continue;
            if (c != 0xc3 || i + 1 >= s.size() || (static_cast<unsigned char>(s[i + 1]) & 0xc0) != 0x80) return false;
            ++i;
        }
        return true;
    };
    for (int seed = 0; seed < 2000; ++seed) {
        CAPTURE(seed);
        std::string m;
        std::size_t len = next() % 1500;
        while (m.size() < len) {
            std::uint64_t r = next() % 100;
            if (r < 3) m += '\'';
            else if (r < 6) m += ' ';
            else if (r < 7) m += '\t';
            else if (r < 15) m += "\xc3\xa9";
            else m.append(next() % 4 == 0 ? next() % 200 : 1, static_cast<char>('a' + r % 26));
        }
        std::string s = shorten_quotes(m);
        CHECK(s.size() <= m.size());
        CHECK(valid_utf8(s));
        CHECK(shorten_quotes(s).size() <= s.size());
        std::size_t run = 0, longest = 0;
        for (char c : s) {
            run = c == ' ' || c == '\t' ? 0 : run + 1;
            longest = std::max(longest, run);
        }
        CHECK(longest <= max_quote + 40);
        CHECK(s.size() <= max_message + 40);
        std::size_t column = m.empty() ? 1 : 1 + next() % m.size();
        std::size_t caret = 0;
        std::string w = source_window(m, column, caret);
        CHECK(valid_utf8(w));
        CHECK(w.size() <= std::max<std::size_t>(2 * max_quote, max_quote + 8));
        if (!m.empty()) {
            REQUIRE(caret < w.size());
            CHECK(w[caret] == m[column - 1]);
        }
    }
}

// The cli harness body (fuzz/target_cli.cpp) on its seeds, on long values, and on 3,000 seeded
// random argument lists drawn from its dictionary: option parsing never throws anything but a
// parse error, and every message stays short (run_cli aborts otherwise).
TEST_CASE("fuzz cli: seeds, long values and random argument lists parse or fail with a short message") {
    std::size_t seeds = 0;
    for (const auto& entry : std::filesystem::directory_iterator(source("fuzz/corpus/cli"))) {
        CAPTURE(entry.path().string());
        fuzz::run_cli(slurp(entry.path().string()));
        ++seeds;
    }
    CHECK(seeds >= 10);
    std::string x(100'000, 'x');
    for (std::string args : {"verify\nt.json\n--engine\n" + x, "optimize\n--timeout\n" + x, "compile\n" + x + "\n--max-transfers\n" + x,
                             x, "topo\n" + x + "\n" + x, "--" + x, "verify\n--" + x}) {
        fuzz::run_cli(args);
    }
    std::vector<std::string> words;
    {
        std::ifstream dict(source("fuzz/cli.dict"));
        for (std::string line; std::getline(dict, line);)
            if (line.size() >= 2 && line.front() == '"' && line.back() == '"') words.push_back(line.substr(1, line.size() - 2));
    }
    REQUIRE(words.size() > 20);
    words.push_back(std::string(300, 'q'));
    words.push_back(std::string(200, 'a').insert(0, 1, '\'').append(1, '\''));  // (not "'" + s: GCC 12's false -Wrestrict)
    std::uint64_t state = 88172645463325252ull;
    auto next = [&] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    for (int seed = 0; seed < 3000; ++seed) {
        std::string args;
        std::size_t n = next() % 8;
        for (std::size_t i = 0; i < n; ++i) args += (i ? "\n" : "") + words[next() % words.size()];
        CAPTURE(args);
        fuzz::run_cli(args);
    }
}
