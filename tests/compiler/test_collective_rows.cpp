// The collective rows (compiler/table/collective_kinds.hpp): every row parses and prints in both
// spellings, its goals are counted as they are enumerated, and the table schema accepts what
// the rows print (schema/collsched.table.schema.json).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiler/table/collective.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/topology/names.hpp"
#include "compiler/io/table_printer.hpp"
#include "compiler/topology/topology.hpp"
#include "dsl/diagnostics.hpp"
#include "support/number.hpp"

using namespace collsched;

namespace {

/// A spec string of each row on 5 processors: the root 1, the members {0, 1, 3}.
std::string example(const CollectiveRow& r) {
    switch (r.args) {
        case coll::Args::none: return std::string(r.name);
        case coll::Args::root: return fmt::format("{}:1", r.name);
        case coll::Args::root_members: return fmt::format("{}:1:0,1,3", r.name);
    }
    return "";
}

nlohmann::json table_schema() {
    std::ifstream in(COLLSCHED_SOURCE_DIR "/schema/collsched.table.schema.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
}

}  // namespace

TEST_CASE("collective rows: each row parses, prints and counts its goals as it enumerates them") {
    auto topo = Topology::parse("ring:5");
    // Goal pairs per chunk on ring:5 and initial data, in row order (docs/semantics.md).
    const std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> want = {
        {"alltoall", {20, 20}}, {"allgather", {20, 5}}, {"broadcast", {4, 1}}, {"scatter", {4, 4}},
        {"gather", {4, 4}},     {"multicast", {2, 1}},  {"reduce", {1, 5}},     {"prefix", {4, 5}},
        {"allreduce", {5, 5}},  {"reduce_scatter", {1, 5}}, {"scan", {4, 5}},   {"custom", {0, 30}},
    };
    CHECK(want.size() == std::size(collective_rows));
    for (const CollectiveRow& r : collective_rows) {
        CAPTURE(r.name);
        const Collective c = Collective::parse(example(r), *topo);
        CHECK(c.kind == r.kind);
        CHECK(&c.row() == &r);
        CHECK(c.to_string() == example(r));
        CHECK(Collective::parse(c.to_string(), *topo) == c);
        CHECK(c.goal_count(5) == want.at(std::string(r.name)).first);
        CHECK(c.initial_count(5) == want.at(std::string(r.name)).second);
        // The base goals as enumerated, and each goal datum's sinks.
        std::uint64_t pairs = 0, values = 0, partials = 0;
        c.for_each_goal(5, [&](MessageId, Node) { ++pairs; });
        c.for_each_value_goal(5, [&](std::uint32_t, std::uint32_t, Node) { ++values; });
        c.for_each_partial_goal(5, 1, [&](std::uint32_t, std::uint32_t hi, Node) { partials += hi > 0 ? 1 : 0; });
        CHECK(pairs == (r.data == coll::Data::personal || r.data == coll::Data::broadcast ? c.goal_count(5) : 0));
        if (r.combines()) CHECK(values == c.goal_count(5));
        if (r.has_partials() && r.to != coll::Reach::block_owner) CHECK(partials == c.goal_count(5));
        std::uint64_t initial = 0;
        const Messages ms(5);
        for (std::uint32_t m = 0; m < ms.base_size(); ++m) initial += c.initial(ms, MessageId{m}) ? 1 : 0;
        CHECK(initial == c.initial_count(5));
    }
    // reduce_scatter with C = P: one goal per chunk, at the block's owner.
    Collective rs = Collective::parse("reduce_scatter", *topo);
    rs.set_chunks(5, *topo);
    std::string owners;
    rs.for_each_partial_goal(5, 5, [&](std::uint32_t c, std::uint32_t hi, Node p) { owners += fmt::format("{}:{}@{} ", c, hi, idx(p)); });
    CHECK(owners == "0:4@0 1:4@1 2:4@2 3:4@3 4:4@4 ");
    CHECK(rs.goal_count(5) == 5);
}

TEST_CASE("collective rows: the lists in messages and help come from the rows") {
    auto topo = Topology::parse("ring:5");
    CHECK_THROWS_WITH_AS(Collective::parse("allgahter", *topo),
                         "collective 'allgahter': unknown collective (did you mean 'allgather'?): expected alltoall, allgather, broadcast:R, scatter:R, gather:R, "
                         "multicast:R:a,b,c, reduce:R, prefix, allreduce, reduce_scatter, scan or custom",
                         InputError);
    CHECK(collective_list(&CollectiveRow::dsl_form, [](const CollectiveRow& r) { return r.rooted(); }) ==
          "broadcast(r), scatter(r), gather(r), multicast(r, {members}) or reduce(r)");
    CHECK(collective_list(&CollectiveRow::name, [](const CollectiveRow& r) { return r.personalized(); }) == "alltoall, scatter or gather");
    CHECK(collective_list(&CollectiveRow::name, [](const CollectiveRow& r) { return r.reduces(); }, ", ", " and ") ==
          "allreduce, reduce_scatter and scan");
    CHECK(collective_list(&CollectiveRow::mpi, [](const CollectiveRow& r) { return !r.mpi.empty(); }) ==
          "MPI_Alltoall, MPI_Allgather, MPI_Bcast, MPI_Scatter, MPI_Gather, MPI_Reduce, MPI_Allreduce, MPI_Reduce_scatter_block or MPI_Scan");
    CHECK(find_collective_msccl("reducescatter")->kind == CollectiveKind::reduce_scatter);
    CHECK(find_collective_msccl("custom") == nullptr);
    // The DSL's spelling, printed back.
    Collective m = Collective::parse("multicast:1:0,1,3", *topo);
    CHECK(dsl_collective(m) == "multicast(1, {0, 1, 3})");
    CHECK(dsl_collective(Collective::parse("reduce:2", *topo)) == "reduce(2)");
}

namespace {

/// The schema's patterns as the rows make them: the collectives in both argument shapes, the
/// families by name.
std::string collective_pattern() {
    std::string out = "^(";
    for (const CollectiveRow& r : collective_rows) {
        if (&r != &collective_rows[0]) out += '|';
        out += r.name;
        if (r.args == coll::Args::root) out += ":[0-9]+";
        if (r.args == coll::Args::root_members) out += ":[0-9]+:[0-9]+(,[0-9]+)*";
    }
    return out + ")$";
}
std::string family_pattern() {
    std::vector<std::string_view> names;
    for (const compiler::FamilyRow& f : compiler::family_rows) names.push_back(f.name);
    return fmt::format("^({}):.+$", fmt::join(names, "|"));
}

}  // namespace

TEST_CASE("collective rows: the table schema's patterns are the rows' (COLLSCHED_UPDATE_GOLDEN=1 rewrites them)") {
    const std::string path = COLLSCHED_SOURCE_DIR "/schema/collsched.table.schema.json";
    const nlohmann::json schema = table_schema();
    const std::string have_c = schema["properties"]["collective"]["pattern"].get<std::string>();
    const std::string have_t = schema["properties"]["topology"]["pattern"].get<std::string>();
    if (std::getenv("COLLSCHED_UPDATE_GOLDEN")) {
        std::ifstream in(path);
        std::stringstream ss;
        ss << in.rdbuf();
        std::string text = ss.str();
        auto swap = [&](const std::string& from, const std::string& to) {
            const std::string quoted = nlohmann::json(from).dump(), repl = nlohmann::json(to).dump();
            REQUIRE(text.find(quoted) != std::string::npos);
            text.replace(text.find(quoted), quoted.size(), repl);
        };
        swap(have_c, collective_pattern());
        swap(have_t, family_pattern());
        std::ofstream(path) << text;
    } else {
        CHECK(have_c == collective_pattern());
        CHECK(have_t == family_pattern());
    }
    const std::regex collective(collective_pattern()), topology(family_pattern());
    for (const CollectiveRow& r : collective_rows) {
        CAPTURE(r.name);
        CHECK(std::regex_match(example(r), collective));
        CHECK(!std::regex_match(fmt::format("{}x", example(r)), collective));
    }
    for (const compiler::FamilyRow& f : compiler::family_rows) CHECK(std::regex_match(fmt::format("{}:8", f.name), topology));
    CHECK(!std::regex_match("allgahter", collective));
    CHECK(!std::regex_match("tree:8", topology));
}

TEST_CASE("numbers: one rule for specs, collectives, messages and the DSL (docs/topologies.md, Numbers)") {
    // Leading zeros are allowed and keep the value, on the spec path ...
    auto topo = Topology::parse("ring:08");
    CHECK(topo->processors() == 8);
    CHECK(Topology::parse("torus:03x05")->processors() == 15);
    CHECK(Collective::parse("broadcast:03", *topo) == Collective::parse("broadcast:3", *topo));
    CHECK(Collective::parse("multicast:01:00,02", *topo).to_string() == "multicast:1:0,2");
    CHECK(Messages(8).parse("m(03,05)") == Messages(8).personal(3, 5));
    CHECK(support::parse_decimal("007") == 7u);
    CHECK(!support::parse_decimal("+7"));
    CHECK(!support::parse_decimal(" 7"));
    CHECK(!support::parse_decimal("7x"));
    CHECK(!support::parse_decimal<std::uint32_t>("4294967296"));
    CHECK(support::parse_decimal<std::uint32_t>("04294967295") == 4294967295u);
    // ... and on the DSL's: the same topology and collective as the spec strings.
    Diagnostics diags;
    auto table = compile_text("topology ring(08)\ncollective broadcast(03)\n", "t.sched", {}, diags);
    REQUIRE(table);
    CHECK(table->topology->spec() == "ring:8");
    CHECK(table->collective == Collective::parse("broadcast:3", *topo));
    // A node's name is a name: 03 names no node.
    CHECK(topo->find_node("3") == Node{3});
    CHECK(!topo->find_node("03"));
    CHECK_THROWS_WITH_AS(Topology::parse("ring:-8"), "topology 'ring:-8': '-8' is not a valid size (expected a positive integer)", InputError);
}

TEST_CASE("family rows: each family reads the same in the DSL and in a spec") {
    // One example per row, in row order: the spec and the DSL's spelling.
    const std::pair<std::string, std::string> examples[] = {
        {"ebft:8", "ebft(8)"},
        {"cbft:8", "cbft(8)"},
        {"bft:8:1,2,2", "bft(8, caps = [1, 2, 2])"},
        {"fattree:4:16:1,4", "fattree(4, 16, caps = [1, 4])"},
        {"ideal:16:w=n", "ideal(16, w = n)"},
        {"ring:5", "ring(5)"},
        {"linear:6", "linear(6)"},
        {"mesh:3x4", "mesh(3, 4)"},
        {"torus:3x5", "torus(3, 5)"},
        {"hypercube:3", "hypercube(3)"},
        {"complete:4", "complete(4)"},
        {"product:ring:3*ring:5", "product(ring(3), ring(5))"},
        {"butterfly:3", "butterfly(3)"},
        {"graph:" COLLSCHED_SOURCE_DIR "/schedules/machines/dgx1.json", "graph(\"" COLLSCHED_SOURCE_DIR "/schedules/machines/dgx1.json\")"},
    };
    REQUIRE(std::size(examples) == std::size(compiler::family_rows));
    for (std::size_t i = 0; i < std::size(examples); ++i) {
        const compiler::FamilyRow& row = compiler::family_rows[i];
        const auto& [spec, dsl] = examples[i];
        CAPTURE(spec);
        auto topo = Topology::parse(spec);
        CHECK(topo->spec() == spec);
        CHECK(topo->family() == row.family);
        CHECK(compiler::find_family(row.name) == &row);
        if (row.shape != compiler::FamilyShape::leaves) CHECK(to_string(row.family) == row.name);
        Diagnostics diags;
        auto table = compile_text(fmt::format("topology {}\ncollective custom\n", dsl), "t.sched", {}, diags);
        REQUIRE(table);
        CHECK(table->topology->spec() == spec);
        CHECK(table->topology->channels().size() == topo->channels().size());
        CHECK(table->topology->processors() == topo->processors());
    }
    CHECK(to_string(Family::bft) == "bft");
    CHECK_THROWS_WITH_AS(Topology::parse("tree:8"),
                         "topology 'tree:8': unknown family 'tree': expected ebft, cbft, bft, fattree, ideal, ring, linear, mesh, torus, "
                         "hypercube, complete, product, butterfly or graph",
                         InputError);
    CHECK_THROWS_WITH_AS(Topology::parse("bft:8"), "topology 'bft:8': expected bft:N:c1,c2,...,cL (one capacity per level, leaves first)",
                         InputError);
    CHECK_THROWS_WITH_AS(Topology::parse("torus:"), "topology 'torus:': missing size: expected torus:AxB[x...]", InputError);
}
