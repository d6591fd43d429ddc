// What the fuzzers found (docs/fuzzing.md): every saved input under tests/data/fuzz/<harness>/
// replayed through the harness body it broke (fuzz/targets.hpp), and one test per finding that
// pins the clear error the input gets now. Inputs too large to keep as files (nesting a hundred
// thousand levels deep) are generated here.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/core/json_error.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/io/ranks_import.hpp"
#include "compiler/io/table_read.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/topology/topology.hpp"
#include "fuzz/targets.hpp"

using namespace collsched;

namespace {

std::string read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::filesystem::path> saved_inputs(const std::string& harness) {
    std::vector<std::filesystem::path> files;
    std::filesystem::path dir = std::filesystem::path(COLLSCHED_SOURCE_DIR) / "tests/data/fuzz" / harness;
    if (std::filesystem::exists(dir))
        for (const auto& e : std::filesystem::directory_iterator(dir))
            if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

/// The harnesses read graph files relative to fuzz/data, as fuzz/run.sh does.
struct InFuzzData {
    std::filesystem::path old = std::filesystem::current_path();
    InFuzzData() { std::filesystem::current_path(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "fuzz/data"); }
    ~InFuzzData() { std::filesystem::current_path(old); }
};

std::string spec_error(std::string_view spec) {
    try {
        Topology::parse(spec);
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

std::string table_error(const std::string& text) {
    try {
        parse_table_json(text, "t.json");
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

struct Compiled {
    bool ok = false;
    std::vector<std::string> codes;
    std::string text;
};

Compiled compile(const std::string& program) {
    Diagnostics diags;
    Compiled c;
    c.ok = compile_text(program, "deep.sched", {}, diags).has_value();
    for (const auto& d : diags.all())
        if (d.severity == Severity::error) c.codes.push_back(d.code);
    c.text = diags.render();
    return c;
}

std::string repeat(std::string_view s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

}  // namespace

TEST_CASE("fuzz regressions: every saved input ends in a result or a clear error") {
    InFuzzData here;
    std::size_t replayed = 0;
    for (const auto& f : saved_inputs("dsl")) {
        CAPTURE(f.string());
        fuzz::run_dsl(read_bytes(f));
        ++replayed;
    }
    for (const auto& f : saved_inputs("table")) {
        CAPTURE(f.string());
        fuzz::run_table(read_bytes(f));
        ++replayed;
    }
    for (const auto& f : saved_inputs("topology")) {
        CAPTURE(f.string());
        fuzz::run_topology(read_bytes(f));
        ++replayed;
    }
    CHECK(replayed >= 1);
}

TEST_CASE("fuzz regressions: the harness bodies accept the golden inputs") {
    InFuzzData here;
    fuzz::run_dsl(read_bytes(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "tests/golden/ok/ebft_alltoall_n4.sched"));
    fuzz::run_table(read_bytes(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "tests/data/ebft4_alltoall.json"));
    fuzz::run_table(read_bytes(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "tests/golden/export/ebft4_alltoall.ranks.json"));
    fuzz::run_topology("graph:net.json\nbroadcast:0\nr1.0\nm(0,1)\n");
    fuzz::run_topology("torus:3x5\nmulticast:0:1,2\n(1,2)\nb(3)\n");
}

// Finding 1 (fuzz_topology): a spec with a NUL byte and invalid UTF-8 after "graph:net.json"
// opened net.json (the C library stops at the NUL) and then Topology::to_json threw
// nlohmann's type_error 316 on the invalid UTF-8, which nothing caught: std::terminate.
TEST_CASE("fuzz regressions: specs must be printable UTF-8 text") {
    InFuzzData here;
    CHECK(spec_error(std::string("graph:net.json\0x", 16)) ==
          "topology spec: byte 15 is a control character or not UTF-8 text (specs are printable text, such as \"ebft:8\" or "
          "\"graph:net.json\")");
    CHECK(spec_error("ring:4\xff").starts_with("topology spec: byte 7 is a control character or not UTF-8 text"));
    CHECK(spec_error("ring:\t4").starts_with("topology spec: byte 6 is a control character"));
    CHECK(spec_error("ring:4\xc3").starts_with("topology spec: byte 7 "));         // truncated sequence
    CHECK(spec_error("ring:4\xc0\x80").starts_with("topology spec: byte 7 "));     // overlong NUL
    CHECK(spec_error("ring:4\xed\xa0\x80").starts_with("topology spec: byte 7 ")); // a surrogate
    // UTF-8 text itself is fine (an unknown family here, not a byte error), and written back intact.
    CHECK(spec_error("r\xc3\xa9seau:4").starts_with("topology 'r\xc3\xa9seau:4': unknown family"));
}

// Found while auditing the same parser: the ideal fat tree's w= evaluator multiplied before
// checking its bound (signed overflow, undefined behaviour) and recursed once per parenthesis,
// so w=((((...)))) a hundred thousand deep overflowed the stack.
TEST_CASE("fuzz regressions: w= expressions are bounded in value and depth") {
    CHECK(spec_error("ideal:4:w=1099511627776*1099511627776").find("value too large") != std::string::npos);
    CHECK(spec_error("ideal:4:w=(1099511627776+1099511627776)*2").find("value too large") != std::string::npos);
    CHECK(spec_error("ideal:4:w=" + repeat("(", 100000) + "1" + repeat(")", 100000)).find("nested too deeply") !=
          std::string::npos);
    CHECK(spec_error("ideal:4:w=" + repeat("-", 100000) + "1").find("nested too deeply") != std::string::npos);
    CHECK(spec_error("ideal:4:w=" + repeat("log2 ", 100000) + "n").find("nested too deeply") != std::string::npos);
    CHECK(Topology::parse("ideal:16:w=" + repeat("(", 150) + "n" + repeat(")", 150))->level_caps() ==
          std::vector<std::uint32_t>{1, 2, 4, 8});
    CHECK(Topology::parse("ideal:16:w=log2 log2 (4*n)")->level_caps() == std::vector<std::uint32_t>{1, 1, 2, 2});
}

// Found while auditing the JSON readers: unknown fields are kept and written back, and
// nlohmann's writer recurses once per level, so [[[[...]]]] a hundred thousand deep in a table,
// a per-rank file or a graph file overflowed the stack (in `verify`, when the error message
// quoted it, or in `convert`).
TEST_CASE("fuzz regressions: JSON input nests at most 100 levels") {
    std::string deep = repeat("[", 100000) + repeat("]", 100000);
    CHECK(table_error(R"({"format": "collsched.table/1", "topology": "ring:4", "collective": "custom", "x": )" + deep +
                      R"(, "transfers": []})") == "t.json:1:183: JSON nested more than 100 levels deep");
    try {
        parse_ranks_json(R"({"format": "collsched.ranks/1", "x": )" + deep + "}", "r.json");
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == "r.json:1:137: JSON nested more than 100 levels deep");
    }
    // 100 levels are fine, and a bracket inside a string does not count.
    std::string ok = R"({"format": "collsched.table/1", "topology": "ring:4", "collective": "custom", "x": )" + repeat("[", 99) +
                     "\"[[[[\"" + repeat("]", 99) + R"(, "transfers": []})";
    SendTable t = parse_table_json(ok, "ok.json");
    CHECK(t.extra_fields.size() == 1);
    CHECK(parse_table_json(table_to_json(t), "again.json").extra_fields == t.extra_fields);
    CHECK(json_too_deep(R"(["\"[[[[[["])") == std::nullopt);

    std::string graph = "/tmp/collsched_fuzz_deep_graph.json";
    std::ofstream(graph) << R"({"processors": 2, "edges": [[0, 1], )" << deep << "]}";
    CHECK(spec_error("graph:" + graph) == graph + ":1:135: JSON graph nested more than 100 levels deep");
    std::filesystem::remove(graph);
}

// Found while auditing the DSL: the parser, the resolver, the evaluator, the printer and the AST's
// destructor recurse once per level, so each of these shapes, a few thousand to thirty thousand
// deep, crashed `collsched compile` with a stack overflow (SIGSEGV).
TEST_CASE("fuzz regressions: deeply nested programs are refused with E052, not a stack overflow") {
    const std::string head = "topology ring(4)\nlet k = 3\n";
    const int n = 100000;
    std::vector<std::string> deep = {
        head + "let x = " + repeat("(", n) + "1" + repeat(")", n),
        head + "let x = " + repeat("-", n) + "1",
        head + "let x = " + repeat("! ", n) + "k == 1",
        head + "let x = 1" + repeat(" + 1", n),
        head + "let x = 1" + repeat(" ** 1", n),
        head + "let x = " + repeat("min(1, ", n) + "1" + repeat(")", n),
        head + repeat("if k == 1 {", n) + repeat("}", n),
        head + "if k == 0 {}" + repeat(" else if k == 1 {}", n),
        head + repeat("for i in 0 .. 0 {", n) + repeat("}", n),
        // the chains are split by brackets, but still one tree: ((1 + 1 + ...) + 1 + ...) + ...
        head + "let x = " + repeat("(", 120) + "1" + repeat(repeat(" + 1", 20) + ")", 120),
    };
    for (const std::string& program : deep) {
        CAPTURE(program.substr(0, 80));
        Compiled c = compile(program);
        CHECK_FALSE(c.ok);
        CHECK(c.codes == std::vector<std::string>{"E052"});
    }
    Compiled parens = compile(deep[0]);
    CHECK(parens.text.find("deep.sched:3:137: error[E052]: more than 128 brackets and blocks are open here; nest less deeply") == 0);
    Compiled chain = compile(deep[3]);
    CHECK(chain.text.find("error[E052]: the program nests more than 1000 levels deep here") != std::string::npos);

    // Up to the bounds, programs compile (and these run under the sanitizers in CI, so the bounds
    // leave room on the stack).
    std::vector<std::string> fine = {
        head + "let x = " + repeat("(", 127) + "1" + repeat(")", 127),
        head + "let x = 1" + repeat(" + 1", 999),
        head + "let x = " + repeat("-", 999) + "1",
        head + "let x = 1" + repeat(" ** 1", 999),
        head + "if k == 0 {}" + repeat(" else if k == 1 {}", 450),
        head + repeat("for i" + std::string("_") + " in 0 .. 0 {", 1) + "}",
        head + "let a = 1" + repeat(" + 1", 900) + "\nlet b = 1" + repeat(" + 1", 900),  // separate statements
    };
    for (const std::string& program : fine) {
        CAPTURE(program.substr(0, 80));
        Compiled c = compile(program);
        INFO(c.text);
        CHECK(c.ok);
    }
    // Brackets inside strings and comments do not count.
    CHECK(compile(head + "# " + repeat("(", 500) + "\nlet y = 1").ok);
    CHECK(compile("topology \"ring:4" + repeat("(", 200) + "\"").codes == std::vector<std::string>{"E031"});
}

// Finding 2 (fuzz_table): a CSV table whose `# topology=` line came again after the header row
// switched the topology under the transfers already read (complete:5, then complete:2): their
// channel ids pointed past the new topology's channels, and the verifier read out of bounds
// (AddressSanitizer: heap-buffer-overflow in Checker::by_step). Header lines after the header
// row are refused now.
TEST_CASE("fuzz regressions: CSV header lines after the header row are refused") {
    std::string text = read_bytes(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "tests/data/fuzz/table/csv_topology_line_after_header");
    try {
        parse_table_csv(text, "t.csv");
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) ==
              "t.csv:22: '# format=' after the header row: the '# key=value' lines come before 'step,from,to,message'");
    }
    std::string ok = "# format=collsched.table/1\n# topology=ring:4\n# collective=custom\nstep,from,to,message\n1,0,1,b(0)\n"
                     "# a comment is fine\n# note: so is this=that\n2,1,2,b(0)\n";
    CHECK(parse_table_csv(ok, "t.csv").transfers.size() == 2);  // other '#' lines stay comments anywhere
}

// The whole committed table corpus through the table harness: the two JSON readers must agree on
// every file (fuzz/targets.cpp, parse_json_both), and what they accept goes through check_table.
TEST_CASE("fuzz corpus: the committed table corpus passes the table harness") {
    InFuzzData here;
    std::size_t replayed = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "fuzz/corpus/table")) {
        CAPTURE(e.path().string());
        fuzz::run_table(read_bytes(e.path()));
        ++replayed;
    }
    CHECK(replayed > 1000);
}

// The committed MSCCL-IR and Chakra corpora through their harnesses (fuzz/target_readers.cpp): no
// crash, and for MSCCL-IR every program the checker says holds levels into a table the direct
// verifier finds causal and complete (the two witnesses agree).
TEST_CASE("fuzz corpus: the committed msccl and chakra corpora pass their harnesses") {
    InFuzzData here;
    for (const char* harness : {"msccl", "chakra"}) {
        std::size_t replayed = 0;
        for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "fuzz/corpus" / harness)) {
            CAPTURE(e.path().string());
            const std::string input = read_bytes(e.path());
            if (std::string(harness) == "msccl") fuzz::run_msccl(input);
            else fuzz::run_chakra(input);
            ++replayed;
        }
        CAPTURE(harness);
        CHECK(replayed > 400);
    }
}

// Finding 6 (fuzz_table, issue 19's run): a per-rank file with the number 9999999e9999999 made
// nlohmann's parser throw out_of_range 406 (number overflow), which parse_json_document did not
// catch (only parse_error): std::terminate in `verify r.json`, and the same for graph files and
// MPI plans. The overflow is now a malformed-JSON error at the number, as in tables.
TEST_CASE("fuzz regressions: a number too large for a double is a clear error in every JSON document") {
    std::string text = read_bytes(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "tests/data/fuzz/table/ranks_number_overflow");
    try {
        parse_ranks_json(text, "r.json");
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == "r.json:3:15: malformed JSON: [json.exception.out_of_range.406] number overflow parsing '9999999e9999999'");
    }
    try {
        parse_ranks_json(R"({"format": "collsched.ranks/1", "topology": "ring:4", "x": -1e999})", "r.json");
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == "r.json:1:65: malformed JSON: [json.exception.out_of_range.406] number overflow parsing '-1e999'");
    }
    // Tables (the reference reader's SAX) say the same.
    CHECK(table_error(R"({"format": "collsched.table/1", "topology": "ring:4", "collective": "custom", "x": 1e999, "transfers": []})") ==
          "t.json:1:88: malformed JSON: [json.exception.out_of_range.406] number overflow parsing '1e999'");
    // Syntax errors keep their message, and large numbers that fit a double are read.
    CHECK(parse_json_document("d.json", "[1e308, 18446744073709551616]") == nlohmann::json::parse("[1e308, 18446744073709551616]"));
    try {
        parse_json_document("d.json", "{\"a\": 1,\n \"b\": }");
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == "d.json:2:7: malformed JSON: syntax error while parsing value - unexpected '}'; expected '[', '{', or a literal");
    }
    std::string graph = "/tmp/collsched_fuzz_overflow_graph.json";
    std::ofstream(graph) << R"({"processors": 2, "edges": [[0, 1e400]]})";
    CHECK(spec_error("graph:" + graph) == graph + ":1:37: malformed JSON graph: [json.exception.out_of_range.406] number overflow parsing '1e400'");
    std::filesystem::remove(graph);
}

// Finding 7 (fuzz_table, found on issue 19's pieces reader 43da46d; main's reader had it too): NUL
// bytes after the value of a top-level field ("steps": 4 and 45 NULs). Both fast paths take the
// text of a scalar up to the next structural character or blank (simdjson's raw token, the pieces
// path's own scan) and hand it to parse_piece, and nlohmann's lexer reads a NUL as the end of the
// input: "4\0\0..." was read as 4, and the fast reader accepted a table the reference reader
// refuses. parse_piece now refuses any NUL byte; the same hole let the CSV reader take
// "# chunks=2\0junk" for 2 chunks.
TEST_CASE("fuzz regressions: a NUL byte never ends a JSON value early") {
    nlohmann::json j;
    CHECK_FALSE(table_read::parse_piece(std::string_view("4\0\0", 3), 99, j));
    CHECK_FALSE(table_read::parse_piece(std::string_view("{\"a\": 1}\0", 9), 99, j));
    CHECK(table_read::parse_piece("4", 99, j));
    CHECK(j == 4);
    CHECK(table_read::parse_piece("\"\\u0000\"", 99, j));  // an escaped NUL in a string is JSON
    CHECK(j == std::string(1, '\0'));
    std::string text = read_bytes(std::filesystem::path(COLLSCHED_SOURCE_DIR) / "tests/data/fuzz/table/head_value_with_nul_bytes");
    // (until session 6 the reference reader said "syntax error while parsing object - unexpected
    // end of input; expected '}'" here: nlohmann stopped at the NUL; now the NUL is named)
    CHECK(table_error(text) == "t.json:5:12: malformed JSON: a NUL byte (JSON has none; inside a string write \\u0000)");
    const std::string csv = "# format=collsched.table/2\n# topology=ring:4\n# collective=custom\n# chunks=2" + std::string("\0junk", 5) +
                            "\nstep,from,to,message\n1,0,1,\"b(0,0)\"\n";
    try {
        parse_table_csv(csv, "t.csv");
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()).starts_with("t.csv:4: '# chunks=2"));  // its own line (issue 34), not the header row's
    }
    CHECK(parse_table_csv(csv.substr(0, csv.find('\0')) + csv.substr(csv.find('\0') + 5), "t.csv").collective.chunks == 2);
}
