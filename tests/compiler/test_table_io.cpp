// Send tables on disk: JSON and CSV round trips, kept extra fields, and one clear line for every
// kind of bad input.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "compiler/builder.hpp"
#include "compiler/table_io.hpp"
#include "dsl/diagnostics.hpp"

using namespace collsched;

namespace {

std::string data(const std::string& name) {
    std::ifstream in(std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/" + name);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string error_of(std::string_view text) {
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
    CHECK(error_of("{\"format\": \"collsched.table/1\",\n \"topology\": \"ebft:4\" \"x\": 1}")
              ==
          "t.json:2:25: malformed JSON: syntax error while parsing object - unexpected string literal; expected '}'");
    CHECK(error_of(R"J({"format": "collsched.table/2", "topology": "ebft:4", "collective": "alltoall", "transfers": []})J") ==
          "t.json: unknown format version 'collsched.table/2': this collsched reads collsched.table/1");
    CHECK(error_of(R"J({"topology": "ebft:4", "collective": "alltoall", "transfers": []})J") ==
          "t.json: missing \"format\" (\"collsched.table/1\")");
    CHECK(error_of(R"J({"format": "collsched.table/1", "topology": "ebft:5", "collective": "alltoall", "transfers": []})J") ==
          "topology 'ebft:5': 5 leaves is not a power of 2 (at least 2)");
    CHECK(error_of(with(R"J({"step": 1, "from": "0", "to": "r1.7", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0] (step 1): node 'r1.7' does not exist in ebft:4 (processors 0..3, routers r1.0..r2.0)");
    CHECK(error_of(with(R"J({"step": 1, "from": "0", "to": "1", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0] (step 1): there is no channel 0 -> 1 in ebft:4");
    CHECK(error_of(with(R"J({"step": 0, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: step 0 is below 1 (steps are numbered from 1)");
    CHECK(error_of(with(R"J({"step": -3, "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: step -3 is below 1 (steps are numbered from 1)");
    CHECK(error_of(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "x(0)"})J")) ==
          "t.json: transfers[0] (step 1): unknown message 'x(0)' (expected m(s,d), b(s), a(s), a(i..j) or a bundle such as b(0)+b(4), with processors 0..3)");
    CHECK(error_of(with(R"J({"step": 1, "from": "0", "to": "r1.0", "msg": "m(0,9)"})J")).find("unknown message 'm(0,9)'") !=
          std::string::npos);
    CHECK(error_of(with(R"J({"step": 1, "from": "0", "msg": "m(0,1)"})J")) == "t.json: transfers[0]: missing \"to\"");
    CHECK(error_of(with(R"J({"step": "1", "from": "0", "to": "r1.0", "msg": "m(0,1)"})J")) ==
          "t.json: transfers[0]: \"step\" must be an integer >= 1, got \"1\"");
    CHECK(error_of(with(R"J(3)J")) == "t.json: transfers[0]: expected a transfer object");
    CHECK(error_of(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "alltoall"})J") ==
          "t.json: missing \"transfers\" (a list of {\"step\", \"from\", \"to\", \"msg\"} objects)");
    CHECK(error_of(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "bcast", "transfers": []})J")
              .starts_with("collective 'bcast': unknown collective"));
    CHECK(error_of(R"J({"format": "collsched.table/1", "topology": "ebft:4", "collective": "broadcast:4", "transfers": []})J") ==
          "collective 'broadcast:4': '4' is not a processor of ebft:4 (0..3)");
    CHECK(error_of("[1, 2]") == "t.json: expected a JSON object at the top level");
    CHECK(error_of("") .starts_with("t.json:1:1: malformed JSON"));
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
