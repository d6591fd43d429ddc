// Send tables on disk: JSON and CSV round trips, kept extra fields, and one clear line for every
// kind of bad input.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/io/table_read.hpp"
#include "dsl/diagnostics.hpp"

using namespace collsched;

namespace {

std::string data(const std::string& name) {
    std::ifstream in(std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/" + name);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string table_error(std::string_view text) {
    try {
        parse_table_json(text, "t.json");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

const char* head = R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "transfers": [)J";

std::string with(std::string_view transfers) { return std::string(head) + std::string(transfers) + "]}"; }

}  // namespace

TEST_CASE("table io: the hand-written EBFT n=4 table equals the built-in generator's") {
    SendTable hand = parse_table_json(data("ebft4_alltoall.json"), "ebft4_alltoall.json");
    SendTable gen = bft_phase_alltoall(Topology::parse("ebft:4"));
    CHECK(hand.transfers.size() == 40);
    CHECK(hand.steps() == 6);
    CHECK(hand.model.queues == QueueKind::none);
    CHECK(hand.collective.kind == CollectiveKind::alltoall);
    CHECK(hand.transfers == gen.transfers);
}

TEST_CASE("table io: JSON and CSV round trips keep every transfer and extra field") {
    std::string text = R"J({"format": "collsched.table/1", "topology": "ring:4", "note": {"by": "hand"},
      "model": {"ports": "single"}, "collective": "broadcast:0",
      "transfers": [{"step": 2, "from": "1", "to": "2", "msg": "b(0)", "color": "red"},
                    {"step": 1, "from": "0", "to": "1", "msg": "b(0)"},
                    {"step": 1, "from": "0", "to": "3", "msg": "b(0)"}]})J";
    SendTable t = parse_table_json(text, "t.json");
    REQUIRE(t.transfers.size() == 3);
    CHECK(t.transfers[0].step == 1);
    CHECK(t.model.ports == Ports::single);
    CHECK(t.extra_fields.size() == 1);
    CHECK(t.extra_fields[0] == std::pair<std::string, std::string>("note", R"J({"by":"hand"})J"));
    REQUIRE(t.transfer_extras.size() == 1);
    CHECK(t.transfer_extras[0].first == 2);  // moved with its transfer by the sort
    std::string out = table_to_json(t);
    CHECK(out.find(R"J({"step": 2, "from": "1", "to": "2", "msg": "b(0)", "color": "red"})J") != std::string::npos);
    SendTable back = parse_table_json(out, "out.json");
    CHECK(back.transfers == t.transfers);
    CHECK(back.model == t.model);
    CHECK(back.extra_fields == t.extra_fields);
    CHECK(back.transfer_extras == t.transfer_extras);

    std::string csv = table_to_csv(t);
    CHECK(csv.find("# topology=ring:4\n") != std::string::npos);
    CHECK(csv.find("step,from,to,message\n1,0,1,\"b(0)\"\n") != std::string::npos);
    SendTable c = parse_table_csv(csv, "t.csv");
    CHECK(c.transfers == t.transfers);
    CHECK(c.model == t.model);
    CHECK(c.collective == t.collective);
}

TEST_CASE("table io: the topology may come after the transfers") {
    SendTable t = parse_table_json(R"J({"transfers": [{"step": 1, "from": "0", "to": "1", "msg": "m(0,1)"}],
        "collective": "scatter:0", "format": "collsched.table/1", "topology": "linear:2"})J", "t.json");
    CHECK(t.transfers.size() == 1);
    CHECK(t.topology->spec() == "linear:2");
}

TEST_CASE("table io: bad input gets one clear line") {
    CHECK(table_error("{\"format\": \"collsched.table/1\",\n \"topology\": \"ebft:4\" \"x\": 1}")
              ==
          "t.json:2:25: malformed JSON: syntax error while parsing object - unexpected string literal; expected '}'");
    CHECK(table_error(R"J({"format": "collsched.table/3", "topology": "ebft:4", "collective": "alltoall", "transfers": []})J") ==
          "t.json: unknown format version 'collsched.table/3': this collsched reads collsched.table/1 and collsched.table/2");
    CHECK(table_error(R"J({"topology": "ebft:4", "collective": "alltoall", "transfers": []})J") ==
          "t.json: missing \"format\" (\"collsched.table/1\")");
    CHECK(table_error(R"J({"format": "collsched.table/1", "topology": "ebft:5", "collective": "alltoall", "transfers": []})J") ==
          "t.json: topology 'ebft:5': 5 leaves is not a power of 2 (at least 2)");
    CHECK(table_error(with(R"J({"step": 1, "from": "0", "to": "r1.7", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0] (step 1): node 'r1.7' does not exist in ebft:4 (processors 0..3, routers r1.0..r2.0)");
    CHECK(table_error(with(R"J({"step": 1, "from": "0", "to": "1", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0] (step 1): there is no channel 0 -> 1 in ebft:4");
    CHECK(table_error(with(R"J({"step": 0, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: step 0 is below 1 (steps are numbered from 1)");
    CHECK(table_error(with(R"J({"step": -3, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: step -3 is below 1 (steps are numbered from 1)");
    CHECK(table_error(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "x(0)"})J")) ==
          "t.json: transfers[0] (step 1): unknown message 'x(0)' (expected m(s,d), b(s), a(s), a(i..j), a partial a({0..3}) or a bundle such as b(0)+b(4), with processors 0..3)");
    CHECK(table_error(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,9)"})J")).find("unknown message 'm(0,9)'") !=
          std::string::npos);
    CHECK(table_error(with(R"J({"step": 1, "from": "0", "msg": "m(0,1)"})J")) == "t.json: transfers[0]: missing \"to\"");
    CHECK(table_error(with(R"J({"step": "1", "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: \"step\" must be an integer >= 1, got \"1\"");
    CHECK(table_error(with(R"J(3)J")) == "t.json: transfers[0]: expected a transfer object");
    CHECK(table_error(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall"})J") ==
          "t.json: missing \"transfers\" (a list of {\"step\", \"from\", \"to\", \"msg\"} objects)");
    CHECK(table_error(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "bcast", "transfers": []})J")
              .starts_with("t.json: collective 'bcast': unknown collective"));
    CHECK(table_error(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "broadcast:4", "transfers": []})J") ==
          "t.json: collective 'broadcast:4': '4' is not a processor of ebft:4 (0..3)");
    CHECK(table_error("[1, 2]") == "t.json: expected a JSON object at the top level");
    CHECK(table_error("") .starts_with("t.json:1:1: malformed JSON"));
}

TEST_CASE("table io: CSV errors name the line") {
    auto err = [](std::string_view text) {
        try {
            parse_table_csv(text, "t.csv");
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(err("# topology=ring:3\nstep,from,to,message\n1,0,2,\"b(0)\"\nx,0,1,\"b(0)\"\n") == "t.csv:4: step 'x' is not an integer >= 1");
    CHECK(err("step,from,to,message\n") == "t.csv:1: missing '# topology=SPEC' line before the header row");
    CHECK(err("# topology=ring:3\nstep,from,to,message\n1,0,5,\"b(0)\"\n") ==
          "t.csv:3: transfers[0] (step 1): node '5' does not exist in ring:3 (processors 0..2)");
}

namespace {

/// Both JSON readers on one text: the same table, or the same error.
std::string both_readers(std::string_view text) {
    std::string fast, ref;
    SendTable a, b;
    try {
        a = parse_table_json(text, "t.json");
    } catch (const InputError& e) {
        fast = e.what();
    }
    try {
        b = parse_table_json_reference(text, "t.json");
    } catch (const InputError& e) {
        ref = e.what();
    }
    CHECK(fast == ref);
    if (fast.empty()) {
        CHECK(a.transfers == b.transfers);
        CHECK(a.requirements == b.requirements);
        CHECK(a.extra_fields == b.extra_fields);
        CHECK(a.transfer_extras == b.transfer_extras);
        CHECK(a.model == b.model);
    }
    return ref;
}

std::string csv_error(std::string_view text) {
    try {
        parse_table_csv(text, "t.csv");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("table io: the fast and the reference JSON readers agree") {
    for (const char* f : {"ebft4_alltoall.json", "ebft16_alltoall.json", "ring8_allgather.json", "cbft8_flood_allgather.json"})
        CHECK(both_readers(data(f)) == "");
    CHECK(both_readers(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)", "note": [1, {"a": 2}]})J")) == "");
    CHECK(both_readers(with(R"J({"step": 1, "from": "\u0030", "to": "r1.0", "msg": "m(0,1)"})J")) == "");
    CHECK(both_readers(with(R"J({"st\u0065p": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) == "");
    CHECK(both_readers(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)"},])J")).starts_with("t.json:1:"));
    CHECK(both_readers(std::string(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) + " x")
              .starts_with("t.json:1:"));
    CHECK(both_readers(std::string(with("")) + "}").starts_with("t.json:1:"));
    CHECK(both_readers(with(R"J({"step": [1], "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: \"step\" must be an integer >= 1, got [1]");
    CHECK(both_readers(with(R"J({"step": 1, "from": {"a": 0}, "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: \"from\" must be a string, got {\"a\":0}");
    CHECK(both_readers(with(R"J({"step": 1.0, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: \"step\" must be an integer >= 1, got 1.0");
    CHECK(both_readers(with(R"J({"step": 18446744073709551616, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: \"step\" must be an integer >= 1, got 1.8446744073709552e+19");
    CHECK(both_readers(R"J({"format": "collsched.table/1", "topology": "ring:4", "collective": "custom", "steps": 7,
        "requirements": [{"msg": "b(0)", "at": "1"}], "note": {"deep": [[[]]]}, "transfers": [{"step": 1, "from": "0", "to": "1", "msg": "b(0)"}]})J") == "");
}

TEST_CASE("table io: a key given twice is an error (issue 13)") {
    CHECK(both_readers(R"J({"format": "collsched.table/1", "topology": "ebft:4", "topology": "ebft:8", "collective": "alltoall", "transfers": []})J") ==
          "t.json: duplicate key \"topology\" in the top-level object");
    CHECK(both_readers(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)", "step": 2})J")) ==
          "t.json: transfers[0]: duplicate key \"step\"");
    CHECK(both_readers(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)", "x": 1, "x": [2]})J")) ==
          "t.json: transfers[0]: duplicate key \"x\"");
    CHECK(both_readers(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)"}], "transfers": [)J")) ==
          "t.json: duplicate key \"transfers\" in the top-level object");
    CHECK(both_readers(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "transfers": 3, "transfers": []})J") ==
          "t.json: duplicate key \"transfers\" in the top-level object");
    CHECK(both_readers(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "model": {"ports": "single", "ports": "multi"}, "transfers": []})J") ==
          "t.json: duplicate key \"ports\" in \"model\"");
    CHECK(both_readers(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)", "x": {"a": 1, "a": 2}})J")) ==
          "t.json: duplicate key \"a\" in transfers[0].\"x\"");
}

TEST_CASE("table io: integers are range-checked before narrowing (issue 13)") {
    CHECK(both_readers(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "model": {"queues": 4294967296}, "transfers": []})J") ==
          "t.json: model: bad value '4294967296' for 'queues': expected unbounded, none, or a queue bound 0 <= B <= 4294967295");
    SendTable t = parse_table_json(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "model": {"queues": 4294967295}, "transfers": []})J", "t.json");
    CHECK(t.model.queue_bound == 4294967295u);
    CHECK(both_readers(with(R"J({"step": 2147483649, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0] (step 2147483649): step 2147483649 is too large");
}

TEST_CASE("table io: model, topology and collective errors in a table name the file (issue 13)") {
    CHECK(both_readers(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "model": {"timing": "warp"}, "transfers": []})J") ==
          "t.json: model: bad value 'warp' for 'timing': expected hop or wormhole");
    CHECK(both_readers(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "model": 3, "transfers": []})J") ==
          "t.json: \"model\" must be an object such as {\"timing\": \"hop\"}");
    CHECK(csv_error("# topology=ebft:5\nstep,from,to,message\n") == "t.csv:1: topology 'ebft:5': 5 leaves is not a power of 2 (at least 2)");
    CHECK(csv_error("# topology=ebft:4\n# model=timing=warp\nstep,from,to,message\n") ==
          "t.csv:2: model: bad value 'warp' for 'timing': expected hop or wormhole");  // its own line (issue 34), not the header row's
    CHECK(csv_error("# topology=ebft:4\n# collective=bcast\nstep,from,to,message\n").starts_with("t.csv:2: collective 'bcast': unknown collective"));
}

TEST_CASE("table io: a CSV header line given twice is an error (issue 13)") {
    CHECK(csv_error("# topology=ring:4\n# topology=ring:8\nstep,from,to,message\n") == "t.csv:2: a second '# topology=' line (the first is line 1)");
    CHECK(csv_error("# topology=ring:4\n# collective=allgather\n\n# collective=alltoall\nstep,from,to,message\n") ==
          "t.csv:4: a second '# collective=' line (the first is line 2)");
    CHECK(csv_error("# topology=ring:4\n# fields={\"a\": 1, \"a\": 2}\nstep,from,to,message\n") ==
          "t.csv:2: '# fields=' must be one JSON object (the table's extra top-level fields) without repeated keys");
    CHECK(csv_error("# topology=ring:4\n# requirements=b(0)@9\nstep,from,to,message\n") == "t.csv:2: requirement 'b(0)@9': '9' is not a processor");
    CHECK(csv_error("# topology=ring:4\n# extra[5]={\"c\": 1}\nstep,from,to,message\n1,0,1,\"b(0)\"\n") ==
          "t.csv: '# extra[5]=' names a transfer the table does not have (1 transfers)");
    CHECK(csv_error("# topology=ring:4\n# note: x=1 is a comment\nstep,from,to,message\n") == "");
}

TEST_CASE("table io: every export that reads back keeps what the table holds (issue 13)") {
    std::string text = R"J({"format": "collsched.table/1", "topology": "ring:4", "note": {"by": "hand"}, "z": [1, 2],
      "model": {"ports": "single", "queues": 3}, "collective": "custom",
      "requirements": [{"msg": "b(0)", "at": "2"}, {"msg": "m(1,3)", "at": "3"}],
      "transfers": [{"step": 2, "from": "1", "to": "2", "msg": "b(0)", "color": "red", "w": {"k": [1]}},
                    {"step": 1, "from": "0", "to": "1", "msg": "b(0)"},
                    {"step": 1, "from": "1", "to": "2", "msg": "m(1,3)"},
                    {"step": 2, "from": "2", "to": "3", "msg": "m(1,3)", "at": "x.sched:3:1"}]})J";
    SendTable t = parse_table_json(text, "t.json");
    auto same = [&](const SendTable& b) {
        CHECK(b.topology->spec() == t.topology->spec());
        CHECK(b.model == t.model);
        CHECK(b.collective == t.collective);
        CHECK(b.requirements == t.requirements);
        CHECK(b.transfers == t.transfers);
        CHECK(b.extra_fields == t.extra_fields);
        CHECK(b.transfer_extras == t.transfer_extras);
    };
    std::string csv = table_to_csv(t);
    CHECK(csv.find("# requirements=b(0)@2 m(1,3)@3\n") != std::string::npos);
    CHECK(csv.find("# fields={\"note\":{\"by\":\"hand\"},\"z\":[1,2]}\n") != std::string::npos);
    CHECK(csv.find("# extra[2]={\"color\": \"red\", \"w\": {\"k\":[1]}}\n") != std::string::npos);
    same(parse_table_csv(csv, "t.csv"));
    same(parse_table_json(table_to_json(t), "t.json"));
    CHECK(table_to_csv(parse_table_csv(csv, "t.csv")) == csv);
}

// Issue 14: claims travel typed (SendTable::claims), not as JSON text among the extra fields;
// the table format is unchanged, and the fields keep their order on every round trip.
TEST_CASE("table io: claims are typed values, written and read as the same top-level fields") {
    const std::string text =
        R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall",
 "aaa": 1, "cite": "A, B, \"C\"", "claim_at_most": 7, "claim_queue": [1,2], "lower_bound": 5, "note": {"by":"hand"},
 "claim_buffer": "not a number", "transfers": [{"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,1)"}]})J";
    SendTable t = parse_table_json(text, "t.json");
    REQUIRE(t.claims.size() == 4);
    CHECK(t.claims[0] == Claim{Claim::Kind::cite, false, std::string("A, B, \"C\"")});
    CHECK(t.claims[1] == Claim{Claim::Kind::steps, true, std::int64_t{7}});
    CHECK(t.claims[2] == Claim{Claim::Kind::queue, false, std::vector<std::int64_t>{1, 2}});
    CHECK(t.claims[3] == Claim{Claim::Kind::lower_bound, false, std::int64_t{5}});
    CHECK(t.claims[1].statement() == "claim steps <= 7");
    CHECK(t.claims[2].statement() == "claim queue = [1, 2]");
    CHECK(t.claims[3].statement() == "bound lower = 5");
    CHECK(t.claims[0].key() == "cite");
    CHECK(t.claims[1].key() == "claim_at_most");
    // A claim's field of the wrong type is no claim: kept as an extra field, as before.
    CHECK(t.extra_fields == std::vector<std::pair<std::string, std::string>>{
                                {"aaa", "1"}, {"claim_buffer", "\"not a number\""}, {"note", R"J({"by":"hand"})J"}});
    // Written back in key order, claims and extra fields interleaved as they were read.
    const std::string json = table_to_json(t);
    CHECK(json.find(" \"aaa\": 1,\n \"cite\": \"A, B, \\\"C\\\"\",\n \"claim_at_most\": 7,\n \"claim_buffer\": \"not a number\",\n"
                    " \"claim_queue\": [1,2],\n \"lower_bound\": 5,\n \"note\": {\"by\":\"hand\"},\n") != std::string::npos);
    SendTable back = parse_table_json(json, "back.json");
    CHECK(back.claims == t.claims);
    CHECK(back.extra_fields == t.extra_fields);
    CHECK(table_to_json(back) == json);
    SendTable csv = parse_table_csv(table_to_csv(t), "t.csv");
    CHECK(csv.claims == t.claims);
    CHECK(csv.extra_fields == t.extra_fields);
    CHECK(table_to_json(csv) == json);
    // A value that would not be written back byte for byte stays text.
    CHECK_FALSE(Claim::from_field("claim", "7.0"));
    CHECK_FALSE(Claim::from_field("lower_bound_at_most", "3"));
    CHECK(Claim::from_field("claim_buffer_at_most", "3") == Claim{Claim::Kind::buffer, true, std::int64_t{3}});
}

namespace {

std::string file_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The fast reader with pieces of `piece_bytes` on `text` (copied into a buffer of exactly its
/// size, so that the sanitizers see any read past it), once with the plain-shape matcher and once
/// with simdjson alone: both must give the same answer, and when they read the table, the
/// reference reader must read the same table; `error` is the reference reader's message (empty
/// when it reads it), `plain` the pieces the matcher read. Returns the pieces read, or -1 when
/// the fast reader left the text to the reference.
long pieces_of(std::string_view text, std::size_t piece_bytes, std::string* error = nullptr, long* plain = nullptr) {
    const auto exact = std::make_unique<char[]>(text.size());
    std::memcpy(exact.get(), text.data(), text.size());
    const std::string_view in(exact.get(), text.size());
    // the same text followed by padding of quotes, digits and backslashes, which must decide nothing
    const auto padded_copy = std::make_unique<char[]>(text.size() + table_read::json_padding);
    std::memcpy(padded_copy.get(), text.data(), text.size());
    for (std::size_t k = 0; k < table_read::json_padding; ++k) padded_copy[text.size() + k] = "\"9\\"[k % 3];
    const std::string_view in_padded(padded_copy.get(), text.size());
    SendTable ref;
    std::string ref_error;
    try {
        ref = parse_table_json_reference(text, "t.json");
    } catch (const InputError& e) {
        ref_error = e.what();
    }
    if (error) *error = ref_error;
    long result = 0, result_plain = 0;
    // the matcher on one thread, on two (a helper from the back), on padded text; simdjson alone
    struct How {
        bool with_matcher;
        unsigned threads;
        bool padded;
    };
    for (auto [with_matcher, threads, padded] : {How{true, 1, false}, How{true, 2, false}, How{true, 1, true}, How{false, 1, false}}) {
        CAPTURE(with_matcher);
        CAPTURE(threads);
        CAPTURE(padded);
        bool ranks = false;
        std::size_t pieces = 99, plain_pieces = 99;
        table_read::FastOptions options;
        options.piece_bytes = piece_bytes;
        options.pieces = &pieces;
        options.plain = with_matcher;
        options.plain_pieces = &plain_pieces;
        options.threads = threads;
        auto fast = table_read::parse_fast(padded ? in_padded : in, padded, "t.json", ranks, options);
        if (!with_matcher) CHECK(plain_pieces == 0);
        const long n = fast ? static_cast<long>(pieces) : -1;
        const long n_plain = fast ? static_cast<long>(plain_pieces) : -1;
        if (with_matcher && threads == 1 && !padded) {
            result = n;
            result_plain = n_plain;
            if (plain) *plain = n_plain;
        } else {
            CHECK(n == result);
            if (with_matcher) CHECK(n_plain == result_plain);
        }
        if (!fast) continue;
        CHECK(ref_error == "");
        CHECK(fast->transfers == ref.transfers);
        CHECK(fast->requirements == ref.requirements);
        CHECK(fast->extra_fields == ref.extra_fields);
        CHECK(fast->transfer_extras == ref.transfer_extras);
        CHECK(fast->model == ref.model);
        CHECK(fast->steps() == ref.steps());
    }
    return result;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (std::size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
    return s;
}

}  // namespace

TEST_CASE("table io: the transfers array read in pieces gives the reference reader's table") {
    int golden = 0;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(COLLSCHED_SOURCE_DIR) + "/tests/golden/ok")) {
        if (entry.path().extension() != ".json") continue;
        ++golden;
        const std::string text = file_text(entry.path());
        CAPTURE(entry.path().filename().string());
        long plain = 0;
        const long whole = pieces_of(text, table_read::default_piece_bytes, nullptr, &plain);
        CHECK(whole != 0);  // a golden table never needs the whole-document path
        CHECK(plain == whole);  // and is written in the plain shape
        for (std::size_t piece : {1, 7, 64, 300}) {
            const long n = pieces_of(text, piece);
            CHECK((n == -1) == (whole == -1));  // both leave the table to the reference reader, or neither
            CHECK(n != 0);
        }
    }
    CHECK(golden >= 20);
    const std::string ebft16 = data("ebft16_alltoall.json");
    const std::size_t transfers = parse_table_json(ebft16, "t.json").transfers.size();
    CHECK(pieces_of(ebft16, 1) == static_cast<long>(transfers));  // one transfer per piece
    const long n = pieces_of(ebft16, 4096);  // each piece is 4096 bytes and the rest of a line
    CHECK(n >= static_cast<long>(ebft16.size() / (4096 + 64)));
    CHECK(n <= static_cast<long>(ebft16.size() / 4096 + 1));
    CHECK(pieces_of(replace_all(ebft16, "\n", "\r\n"), 100) > 100);  // CRLF line ends
    CHECK(pieces_of(replace_all(ebft16, "},\n", "}  ,\t \n"), 100) > 100);
    CHECK(pieces_of(ebft16, 1 << 20) == 1);
}

TEST_CASE("leading_digits: the count and value of the leading digits of 8 bytes, for every byte after them") {
    // A run of k digits (k = 0 to 8, from a pattern with zeros and nines) followed by each of the
    // 256 byte values, and random bytes after it: the count and (below 8) the value a loop gives.
    const char* runs[] = {"00000000", "98765432", "99999999", "10000000", "00000009", "12345678"};
    std::uint64_t seed = 7;
    for (const char* run : runs) {
        for (unsigned k = 0; k <= 8; ++k) {
            for (int after = 0; after < 256; ++after) {
                char bytes[8];
                for (unsigned i = 0; i < 8; ++i) {
                    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                    bytes[i] = static_cast<char>(seed >> 56);
                }
                std::memcpy(bytes, run, k);
                if (k < 8) bytes[k] = static_cast<char>(after);
                unsigned expected = 0;
                std::uint64_t value = 0;
                while (expected < 8 && bytes[expected] >= '0' && bytes[expected] <= '9') value = value * 10 + static_cast<unsigned>(bytes[expected++] - '0');
                std::uint64_t got = 12345;
                const unsigned n = table_read::leading_digits(bytes, got);
                CAPTURE(k);
                CAPTURE(after);
                CHECK(n == expected);
                if (n > 0 && n < 8) CHECK(got == value);
            }
        }
    }
}

TEST_CASE("table io: the plain-shape matcher reads exactly its grammar, and leaves the rest to simdjson") {
    const std::string a = R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,2)"})J";
    const std::string b = R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J";
    struct Case {
        std::string element;  // written in place of the second transfer
        long plain;           // pieces the matcher reads of three (one transfer each), -1: the reference decides
        std::string error;    // the start of the reference reader's message, "" when it reads the table
    };
    const Case cases[] = {
        // The grammar's freedom: spacing, key order, a step of many digits (refused later, by the resolver).
        {R"J({"step":1,"from":"1","to":"r1.0","msg":"m(1,3)"})J", 3, ""},
        {"{ \"step\"\t:\r1\n,\"from\" : \"1\" , \"to\":\"r1.0\" , \"msg\":\"m(1,3)\" }", 3, ""},  // no cut: no line feed after a comma
        {R"J({"msg": "m(1,3)", "to": "r1.0", "from": "1", "step": 1})J", 3, ""},
        {R"J({"to": "r1.0", "step": 1, "msg": "m(1,3)", "from": "1"})J", 3, ""},
        {R"J({"step": 0, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": 1234567890123456789, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        // Numbers around the 8-byte loads: 7, 8 and 9 digits, leading zeros in a message.
        {R"J({"step": 1234567, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", 3, ""},
        {R"J({"step": 12345678, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", 3, ""},
        {R"J({"step": 123456789, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", 3, ""},
        {R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(0000001,0000003)"})J", 3, ""},
        {R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(00000001,00000003)"})J", 3, ""},
        {R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(000000001,000000003)"})J", 3, ""},
        {R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(0000000001,3)"})J", 3, ""},
        {R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(1,00000004)"})J", -1, "t.json: transfers[1]"},
        // Names in the grammar that name nothing: the resolver's message, by either path.
        {"{\"step\": 1, \"from\": \"1\x7f\", \"to\": \"r1.0\", \"msg\": \"m(1,3)\"}", -1, "t.json: transfers[1]"},
        {R"J({"step": 1, "from": "1", "to": "r1.0.long.name.of.17", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        // A name running past the 64-byte window of the first compares (then eight bytes at a time).
        {"{\"step\": 1, \"from\": \"1\", \"to\": \"" + std::string(70, 'x') + "\", \"msg\": \"m(1,3)\"}", -1, "t.json: transfers[1]"},
        // Outside the grammar: simdjson reads the piece (2 of 3 pieces plain) or the reference reader decides.
        {R"J({"step": 1, "from": "\u0031", "to": "r1.0", "msg": "m(1,3)"})J", -1, ""},
        {"{\"step\": 1, \"from\": \"1\", \"to\": \"r1.0\", \"msg\": \"m(1,3)\xc3\xa9\"}", -1, "t.json: transfers[1]"},
        {R"J({"step": 12345678901234567890, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": 01, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json:3:"},
        {R"J({"step": 1.0, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": 1e0, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": -1, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": "1", "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": 1, "from": 1, "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": 1, "from": "1", "from": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]: duplicate key \"from\""},
        {R"J({"step": 1, "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(1,3)", "note": 2})J", -1, ""},
        {R"J({"step": 1, "frm": "1", "to": "r1.0", "msg": "m(1,3)"})J", -1, "t.json: transfers[1]"},
        {R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(1,3)",})J", -1, "t.json:3:"},
        {"{\"step\": 1, \"from\": \"1\", \"to\": \"r1.0\", \"msg\": \"m(1,3)\x01\"}", -1, "t.json:3:"},
        {"{\"step\": 1, \"from\": \"1\", \"to\": \"" + std::string(60, 'x') + "\\\"\", \"msg\": \"m(1,3)\"}", -1, "t.json: transfers[1]"},
        {R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(1,3)"]})J", -1, "t.json:3:"},
        {R"J([1])J", -1, "t.json: transfers[1]: expected a transfer object"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.element);
        // Each transfer is a piece of its own (no element has a line feed after a comma: a cut).
        const std::string text = with("\n" + a + ",\n" + c.element + ",\n" + a);
        std::string error;
        long plain = 0;
        const long pieces = pieces_of(text, 1, &error, &plain);
        CAPTURE(error);
        CHECK(pieces == (c.plain == -1 ? -1 : 3));
        CHECK(plain == c.plain);
        CHECK(error.starts_with(c.error));
        CHECK(error.empty() == c.error.empty());
    }
    // An escaped name (outside the grammar) in the last piece: simdjson's path leaves the table,
    // which is valid, to the reference reader.
    long plain = 0;
    std::string error = "x";
    const std::string escaped = replace_all(b, "\"1\"", "\"\\u0031\"");
    CHECK(pieces_of(with("\n" + a + ",\n" + b + ",\n" + escaped), 1, &error, &plain) == -1);
    CHECK(error == "");
    CHECK(plain == -1);
    CHECK(pieces_of(with("\n" + a + ",\n" + replace_all(b, "\"step\": 1", "\"step\": 1 ") + "\n"), 1, nullptr, &plain) == 2);
    CHECK(plain == 2);
    // A name whose 8-byte loads run past the end of the text (the last field of the last transfer,
    // the text unpadded): the sanitizers watch the exact-size copy pieces_of reads.
    for (std::string_view name : {"0", "r1.0", "r1.0xyz", "r1.0xyzw", "r1.0xyzwabcdefg"}) {
        const std::string last = fmt::format(R"J({{"step": 1, "from": "1", "msg": "m(1,3)", "to": "{}"}})J", name);
        CAPTURE(name);
        pieces_of(with("\n" + a + ",\n" + last), 1, nullptr, &plain);
        CHECK(plain == (name == "r1.0" ? 2 : -1));
    }
}

/// The pieces the helper thread read, with two threads forced and pieces of `piece_bytes`; -1
/// when the fast reader left the text to the reference reader.
long helper_pieces_of(std::string_view text, std::size_t piece_bytes) {
    bool ranks = false;
    std::size_t helper = 0;
    table_read::FastOptions options;
    options.piece_bytes = piece_bytes;
    options.threads = 2;
    options.helper_pieces = &helper;
    return table_read::parse_fast(text, false, "t.json", ranks, options) ? static_cast<long>(helper) : -1;
}

TEST_CASE("table io: a helper thread reading pieces from the back gives the one-thread table") {
    // ebft16 cut into one piece per transfer: the two threads meet somewhere in 1568 pieces, where
    // depends on the scheduler (a descheduled main thread may leave the helper all of them; the
    // sanitizer CI run once did), but the helper always reads the last one; pieces_of compares
    // the table with one thread and the reference.
    const std::string ebft16 = data("ebft16_alltoall.json");
    for (int run = 0; run < 20; ++run) {
        CHECK(pieces_of(ebft16, 1) == 1568);
        const long helper = helper_pieces_of(ebft16, 1);
        CHECK(helper >= 1);
        CHECK(helper <= 1568);
    }
    // Pieces the helper must give back: messages the shortcuts do not settle (written with a
    // space: the resolver reads them), at the start, in the middle, one before the end, the end.
    const std::string head32k = R"J({"format": "collsched.table/1", "topology": "ebft:32768", "collective": "custom", "transfers": [)J";
    const int count = 400;
    for (int last_long : {0, 1}) {
        std::string lines;
        for (int k = 0; k < count; ++k) {
            const bool spaced = k == 3 || k == count / 2 || k == count - 2 || (last_long && k == count - 1);
            // r2.x is joined to r1.2x; past r1.9999 the names are longer than 7 bytes (not cached)
            const int r2 = k % 2 ? 5000 + k : k;
            lines += fmt::format("\n  {{\"step\": 1, \"from\": \"r2.{}\", \"to\": \"r1.{}\", \"msg\": \"b({}{})\"}}{}", r2, 2 * r2,
                                 spaced ? " " : "", k, k + 1 < count ? "," : "");
        }
        const std::string text = head32k + lines + "]}";
        CAPTURE(last_long);
        for (int run = 0; run < 10; ++run) {
            long plain = 0;
            CHECK(pieces_of(text, 1, nullptr, &plain) == count);
            CHECK(plain == count);  // the matcher read every piece; the resolver settled the spaced messages
            // The helper reads the last piece unless it needs the resolver, and stops at count - 2.
            CHECK(helper_pieces_of(text, 1) == (last_long ? 0 : 1));
        }
    }
    // An error in a piece the helper takes: the one-thread message (file:line:col).
    std::string broken = ebft16;
    broken.replace(broken.rfind("\"step\": "), 8, "\"step\" ");
    std::string error;
    CHECK(pieces_of(broken, 1, &error) == -1);
    CHECK(error.starts_with("t.json:"));
    CHECK(error == table_error(broken));
}

TEST_CASE("table io: layouts the pieces do not fit go to the whole-document path or the reference reader") {
    const std::string a = R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,2)"})J";
    const std::string b = R"J({"step": 1, "from": "1", "to": "r1.0", "msg": "m(1,3)"})J";
    // A transfer split over lines: the cut inside it leaves a piece that does not read.
    CHECK(pieces_of(with("\n" + a + ",\n" + R"J({"step": 1,
        "from": "1", "to": "r1.0", "msg": "m(1,3)"})J" + ",\n" + a + "\n"), 1) == 0);
    // The transfers not last.
    const std::string h = R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall",)J";
    CHECK(pieces_of(h + "\"transfers\": [\n" + a + ",\n" + b + "\n],\n\"steps\": 6}", 1) == 0);
    CHECK(pieces_of(h + "\"transfers\": [\n" + a + ",\n" + b + "\n],\n\"note\": [1,\n2]}", 1) == 0);
    CHECK(pieces_of(h + "\"transfers\": [\n" + a + ",\n" + b + "\n],\n\"note\": [\n1]}", 1) == 0);
    // Empty arrays: one piece without elements.
    CHECK(pieces_of(with(""), 1) == 1);
    CHECK(pieces_of(with("\n \r\n"), 1) == 1);
    // Keys with escapes or non-ASCII bytes, a top-level object with nothing else: the whole document.
    CHECK(pieces_of(R"J({"form\u0061t": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "transfers": [
)J" + a + ",\n" + b + "]}", 1) == 0);
    CHECK(pieces_of(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "n\u00e9": 1, "transfers": [
)J" + a + ",\n" + b + "]}", 1) == 0);
    CHECK(pieces_of(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall", "transfers": [
)J" + a + ",\n" + b + "]}", 1) == 2);
    // Invalid documents: every piece must read, with at least one element.
    std::string error;
    CHECK(pieces_of(with("\n" + a + ",\n" + b + ",\n"), 1, &error) == -1);  // a trailing comma: an empty last piece
    CAPTURE(error);
    CHECK(error.starts_with("t.json:4:1: "));
    CHECK(pieces_of(with("\n,\n" + a + ",\n" + b), 1, &error) == -1);  // an empty first piece
    CHECK(error.starts_with("t.json:2:1: "));
    CHECK(pieces_of(with("\n" + a + ",\n" + b + ",\n,\n" + a), 1, &error) == -1);
    CHECK(error.starts_with("t.json:4:1: "));
    // A raw line feed inside a string (not JSON) right after a comma: the cut falls inside the string.
    CHECK(pieces_of(with("\n" + a + R"J(,
{"step": 1, "from": "1", "to": "r1.0", "msg": "m(1,
3)"})J"), 1, &error) == -1);
    CHECK(error.starts_with("t.json:3:"));
    CHECK(pieces_of(with("\n" + a + ",\n" + b) + " ]}", 1, &error) == -1);  // trailing content
    CHECK(error.starts_with("t.json:3:"));
}

TEST_CASE("table io: an error in the middle of piece k has the reference reader's file:line:col message") {
    const std::string ebft16 = data("ebft16_alltoall.json");
    struct Case {
        std::string_view from, to;
        bool position;  // a syntax error (file:line:col), else a transfer's
    };
    // Line 600 in an early piece, line 1500 in a late one.
    for (int line : {600, 1500}) {
        std::size_t start = 0;
        for (int l = 1; l < line; ++l) start = ebft16.find('\n', start) + 1;
        for (const Case& c : {Case{"\"step\": ", "\"step\" ", true}, Case{"\"to\": \"", "\"to\": \"x", false},
                              Case{"\"msg\": \"m(", "\"msg\": \"m(99", false}, Case{"}", "}}", true}}) {
            std::string text = ebft16;
            const std::size_t p = text.find(c.from, start);
            text.replace(p, c.from.size(), c.to);
            std::string error;
            CHECK(pieces_of(text, 512, &error) == -1);
            CAPTURE(error);
            CHECK(error.starts_with(c.position ? fmt::format("t.json:{}:", line) : fmt::format("t.json: transfers[{}]", line - 6)));
            CHECK(table_error(text) == error);  // the whole pipeline: the reference reader's message
        }
    }
}

TEST_CASE("table io: a chunk argument on a partial is refused under one chunk by both readers (docs/formats.md)") {
    // a({0,1},0) used to read as a({0,1}); the base name a(0,0) was refused already.
    for (std::string msg : {"a({0,1},0)", "a({0..3},0)", "a({2},0)", "a({0,1}, 0)"})
        for (std::string head : {R"("format": "collsched.table/1")", R"("format": "collsched.table/2", "chunks": 1)"}) {
            const std::string text = "{" + head + R"(, "topology": "complete:4", "collective": "allreduce", )" +
                                     R"("transfers": [{"step": 1, "from": "0", "to": "1", "msg": ")" + msg + R"("}]})";
            CAPTURE(text);
            std::string error;
            CHECK(pieces_of(text, table_read::default_piece_bytes, &error) == -1);  // the fast reader leaves it to the reference
            CHECK(error.find("names a chunk, but the collective does not split its data (chunks 1)") != std::string::npos);
            CHECK(table_error(text) == error);
        }
    // Under C = 2 the chunk argument is what a partial needs.
    const std::string two = R"({"format": "collsched.table/2", "chunks": 2, "topology": "complete:4", "collective": "allreduce", )"
                            R"x("transfers": [{"step": 1, "from": "0", "to": "1", "msg": "a({0,1},1)"}]})x";
    std::string error;
    pieces_of(two, table_read::default_piece_bytes, &error);
    CHECK(error == "");
}

TEST_CASE("table io: node names longer than 7 bytes resolve to their own channels (a fast-reader bug)") {
    // On ebft:32768 the level-1 routers past r1.9999 have 8-byte names. The fast JSON reader
    // remembered the last channel by packed names, 0 for a long name, so a run r2.5000 -> r1.10000,
    // r2.5000 -> r1.10001 read the second transfer onto the first one's channel: a silently
    // wrong table (found in session 6 while moving the shortcuts into the resolver).
    const std::string json = R"J({"format": "collsched.table/1", "topology": "ebft:32768", "collective": "custom",
 "transfers": [
  {"step": 1, "from": "r2.5000", "to": "r1.10000", "msg": "b(0)"},
  {"step": 1, "from": "r2.5000", "to": "r1.10001", "msg": "b(1)"},
  {"step": 2, "from": "r1.10001", "to": "20002", "msg": "b(1)"},
  {"step": 2, "from": "r1.10000", "to": "20001", "msg": "b(0)"}
 ]})J";
    const std::string csv = "# topology=ebft:32768\nstep,from,to,message\n1,r2.5000,r1.10000,b(0)\n1,r2.5000,r1.10001,b(1)\n"
                            "2,r1.10001,20002,b(1)\n2,r1.10000,20001,b(0)\n";
    auto names = [](const SendTable& t) {
        std::string s;
        for (const Transfer& x : t.transfers) {
            const Channel& c = t.topology->channel(x.channel);
            s += fmt::format("{} {}->{} {}; ", x.step, t.topology->node_name(c.from), t.topology->node_name(c.to), t.messages().name(x.message));
        }
        return s;
    };
    const std::string want = "1 r2.5000->r1.10000 b(0); 1 r2.5000->r1.10001 b(1); 2 r1.10000->20001 b(0); 2 r1.10001->20002 b(1); ";
    CHECK(names(parse_table_json(json, "t.json")) == want);
    CHECK(names(parse_table_json_reference(json, "t.json")) == want);
    CHECK(names(parse_table_csv(csv, "t.csv")) == want);
}

TEST_CASE("table io: the resolver's shortcuts give the general path's answer") {
    // Node names, runs of one channel and plain message names are resolved from caches
    // (table_read::Resolver); every spelling below must give what find_node, find_channel and
    // Messages::parse give, and a spelling they refuse must be refused.
    auto topo = Topology::parse("ebft:8");
    const char* nodes[] = {"0", "7", "r1.0", "r1.3", "r2.1", "r3.0", "8", "r1.4", "00", "r1.00"};
    const char* msgs[] = {"m(0,1)", "m(00,1)", "m(0, 1)", "m(7,0)", "m(8,0)", "b(3)", "a(2)", "b(1,2)", "m(1,2,0)", "m(1,2,3)",
                          "a(1,0)", "b()", "x(1)", "m(1,2", "m(1,2)x", "b(0000000001)", "b(1,02)"};
    for (std::uint32_t C : {1u, 3u}) {
        CAPTURE(C);
        const Messages ms(topo->processors(), nullptr, C);
        const std::string header = fmt::format("# format=collsched.table/2\n# topology=ebft:8\n# chunks={}\nstep,from,to,message\n", C);
        std::string all = header;  // every accepted transfer, in the order written (runs of one channel)
        std::vector<Transfer> expect;
        std::size_t refused = 0;
        for (const char* u : nodes)
            for (const char* v : nodes)
                for (const char* m : msgs) {
                    auto a = topo->find_node(u), b = topo->find_node(v);
                    auto c = a && b ? topo->find_channel(*a, *b) : std::nullopt;
                    auto id = ms.parse(m);
                    const std::string row = fmt::format("1,{},{},\"{}\"\n", u, v, m);
                    if (c && id) {
                        all += row;
                        expect.push_back({1, *c, *id});
                    } else {
                        CAPTURE(row);
                        CHECK_THROWS_AS(parse_table_csv(header + row, "t.csv"), InputError);
                        ++refused;
                    }
                }
        std::sort(expect.begin(), expect.end(), [](const Transfer& a, const Transfer& b) {
            return std::tuple(a.step, idx(a.channel), idx(a.message)) < std::tuple(b.step, idx(b.channel), idx(b.message));
        });
        CHECK(expect.size() >= (C == 1 ? 50u : 30u));
        CHECK(refused > 500);
        CHECK(parse_table_csv(all, "t.csv").transfers == expect);
    }
}

TEST_CASE("TableBuilder::finish polls its deadline while it sorts (dense steps and sparse ones), and sorts without one") {
    // issue 41, section 3: the sort of finish() ran past every time limit; a table the deadline
    // stops is dropped by its caller (LimitReached)
    std::shared_ptr<const Topology> topo = Topology::parse("ring:64");
    const Collective coll = Collective::parse("allgather", *topo, false);
    auto build = [&](std::uint32_t steps, std::uint32_t per_step, Step stride) {
        TableBuilder b(topo, Model{}, coll);
        const Messages ms = b.messages();
        b.reserve(std::size_t{steps} * per_step);
        for (std::uint32_t s = steps; s >= 1; --s)  // last step first: the sort has everything to do
            for (std::uint32_t k = per_step; k-- > 0;) b.hop(static_cast<Step>(s * stride), ChannelId{k % 128}, ms.broadcast(k % 64));
        return b;
    };
    const Deadline passed = Deadline::at(Deadline::Clock::now());
    CHECK_THROWS_AS(build(4096, 64, 1).finish(passed), LimitReached);       // the counting sort, per step
    CHECK_THROWS_AS(build(1 << 17, 1, 1000).finish(passed), LimitReached);  // the comparison sort of sparse steps
    const SendTable t = build(4096, 64, 1).finish(Deadline::after(60));
    CHECK(t.transfers.size() == 4096u * 64);
    CHECK(t.is_sorted());
    CHECK(build(1 << 17, 1, 1000).finish().is_sorted());
}
