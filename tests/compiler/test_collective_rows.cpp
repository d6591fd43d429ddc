// The collective rows (compiler/collective_kinds.hpp): every row parses and prints in both
// spellings, its goals are counted as they are enumerated, and the table schema accepts what
// the rows print (schema/collsched.table.schema.json).
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/collective.hpp"
#include "compiler/names.hpp"
#include "compiler/table_printer.hpp"
#include "compiler/topology.hpp"
#include "dsl/diagnostics.hpp"

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
                         "collective 'allgahter': unknown collective: expected alltoall, allgather, broadcast:R, scatter:R, gather:R, "
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
    CHECK(compiler::dsl_collective(m) == "multicast(1, {0, 1, 3})");
    CHECK(compiler::dsl_collective(Collective::parse("reduce:2", *topo)) == "reduce(2)");
}

TEST_CASE("collective rows: the table schema accepts what every row and family prints") {
    const nlohmann::json schema = table_schema();
    const std::regex collective(schema["properties"]["collective"]["pattern"].get<std::string>());
    const std::regex topology(schema["properties"]["topology"]["pattern"].get<std::string>());
    for (const CollectiveRow& r : collective_rows) {
        CAPTURE(r.name);
        CHECK(std::regex_match(example(r), collective));
        CHECK(!std::regex_match(fmt::format("{}x", example(r)), collective));
    }
    for (const compiler::FamilyName& f : compiler::family_names) {
        CAPTURE(f.name);
        CHECK(std::regex_match(fmt::format("{}:8", f.name), topology));
    }
    CHECK(!std::regex_match("allgahter", collective));
    CHECK(!std::regex_match("tree:8", topology));
}
