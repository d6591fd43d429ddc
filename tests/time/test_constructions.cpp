// The constructions' registry (verifier/time/constructions.hpp, docs/architecture.md "The constructions' registry"):
// one table, every row named once with a file that exists and the builders it has; the steps objective tries its
// rows' steps builders, optimize --size runs its rows' providers in order, `compare nccl:NAME` names its NCCL rows,
// compose's shapes are one list.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/constructions/compose/allreduce.hpp"
#include "verifier/constructions/steps/known.hpp"
#include "verifier/synth/problem/pareto.hpp"
#include "verifier/time/constructions.hpp"

using namespace collsched;

namespace {

std::vector<std::string> names_of(const std::vector<NamedProvider>& ps) {
    std::vector<std::string> r;
    for (const NamedProvider& p : ps) r.push_back(p.name);
    return r;
}

SynthInstance registry_instance(const std::string& topology, const std::string& collective) {
    auto topo = Topology::parse(topology);
    return {topo, topo->default_model(), Collective::parse(collective, *topo)};
}

const Construction& row(const std::string& name) {
    const auto& rows = constructions();
    const auto it = std::ranges::find_if(rows, [&](const Construction& c) { return c.name == name; });
    REQUIRE(it != rows.end());
    return *it;
}

}  // namespace

TEST_CASE("constructions: every row has a unique name, a file that exists, what it builds and a builder for some use") {
    std::set<std::string> names, nccl;
    for (const Construction& c : constructions()) {
        INFO(c.name);
        CHECK(names.insert(c.name).second);
        CHECK(std::filesystem::is_regular_file(std::filesystem::path(COLLSCHED_SOURCE_DIR) / c.file));
        CHECK(!c.what.empty());
        CHECK((c.stage == StepStage::none) == !c.build);  // a steps builder has its stage, a stage its builder
        CHECK((c.build || c.provide || c.library || !c.nccl.empty()));
        if (!c.nccl.empty()) CHECK(nccl.insert(c.nccl).second);
    }
    CHECK(names.count("rings") == 1);
    CHECK(names.count("bft phase alltoall") == 1);
}

TEST_CASE("constructions: a construction of both objectives is one row with both builders") {
    CHECK(row("rings").stage == StepStage::chunks);
    CHECK(static_cast<bool>(row("rings").build));
    CHECK(static_cast<bool>(row("rings").provide));
    CHECK(row("translates").stage == StepStage::translates);
}

TEST_CASE("constructions: the steps objective's schedules are the rows', and a row that does not apply says why") {
    const SynthInstance ring = registry_instance("torus:3x3", "allgather");
    const SynthInstance bft = registry_instance("ebft:8", "alltoall");
    CHECK(row("bft phase alltoall").why_not(bft, encoding_for(bft)).empty());
    CHECK(!row("bft phase alltoall").why_not(ring, encoding_for(ring)).empty());
    CHECK(row("ring allgather").why_not(ring, encoding_for(ring)).empty());
    std::size_t known = 0;
    for (const Construction& c : constructions()) known += c.stage == StepStage::known;
    CHECK(known >= 10);
    for (const SynthInstance* in : {&ring, &bft}) {
        const std::optional<KnownSchedule> k = constructed_schedule(*in, constructions());
        REQUIRE(k);
        CHECK(std::ranges::any_of(constructions(), [&](const Construction& c) {
            return c.stage == StepStage::known && c.what == k->source && c.why_not(*in, encoding_for(*in)).empty();
        }));
    }
    // the translates (stage translates) and the rings (stage chunks) are rows too: their sources name what they built
    const std::optional<KnownSchedule> t = translation_schedule(ring, constructions(), 0, std::chrono::steady_clock::time_point::max());
    REQUIRE(t);
    CHECK(t->source.starts_with("translates of one spanning tree under Z_3 x Z_3"));
    SynthInstance rings = registry_instance("ring:6", "allgather");
    rings.collective.set_chunks(2, *rings.topology, false);
    const std::vector<KnownSchedule> none;
    const std::optional<KnownSchedule> r =
        stage_schedule(StepStage::chunks, {rings, std::chrono::steady_clock::time_point::max(), none}, constructions());
    REQUIRE(r);
    CHECK(r->source.find("NCCL's ring algorithm") != std::string::npos);
    // collsched's own rows are left out under --no-constructions
    CHECK_FALSE(stage_schedule(StepStage::chunks, {rings, std::chrono::steady_clock::time_point::max(), none}, constructions(), false));
}

TEST_CASE("constructions: the steps objective cannot be run without the registry") {
    // ConstructionRows has no default (and asserts its rows are not empty): OptimizeOptions, ParetoOptions and
    // HierarchicalOptions cannot be made without it, so no caller silently runs optimize without its upper bounds
    static_assert(!std::is_default_constructible_v<ConstructionRows>);
    static_assert(!std::is_default_constructible_v<OptimizeOptions>);
    static_assert(!std::is_default_constructible_v<ParetoOptions>);
    CHECK(&ConstructionRows(constructions()).rows() == &constructions());
}

TEST_CASE("constructions: the time objective's providers are the rows', in order") {
    std::vector<std::string> time, all;
    for (const Construction& c : constructions()) {
        if (c.provide && c.nccl.empty()) time.push_back(c.name);
        if (c.provide || c.library) all.push_back(c.name);
    }
    CHECK(names_of(construction_providers()) == time);
    CHECK(names_of(time_providers("schedules/catalog.json", {})) == all);
    CHECK(time == std::vector<std::string>{"rings", "weighted rings", "tree packing", "least steps", "hierarchical", "constructions for time", "nvls", "sharp",
                                           "pipelined rings", "link trees"});
    CHECK(all.back() == "nccl");
    CHECK(nccl_provider().name == "nccl");
    CHECK(nccl_provider().first);
    CHECK(nccl_provider().baseline);  // never left out by a bound (gather_candidates)
    for (const NamedProvider& p : time_providers("schedules/catalog.json", {})) CHECK(p.baseline == (p.name == "nccl"));
}

TEST_CASE("constructions: every name compare nccl:NAME takes is a row's") {
    std::set<std::string> rows;
    for (const Construction& c : constructions())
        if (!c.nccl.empty()) rows.insert(c.nccl);
    std::set<std::string> algorithms{"*"};  // nccl:* builds them all (the row `nccl`, the time objective's baseline)
    for (nccl::Algorithm a : {nccl::Algorithm::tree, nccl::Algorithm::ring, nccl::Algorithm::pat, nccl::Algorithm::p2p})
        algorithms.insert(std::string(nccl::to_string(a)));
    CHECK(rows == algorithms);
    // what nccl_baseline builds for a machine is one of them
    auto topo = Topology::parse("graph:schedules/machines/dgx1.json");
    for (const char* coll : {"allreduce", "allgather", "alltoall", "broadcast:0"})
        for (const nccl::Baseline& b : nccl::nccl_baselines(topo, Collective::parse(coll, *topo), topo->default_model())) {
            INFO(b.name);
            CHECK(rows.count(std::string(nccl::to_string(b.algorithm))) == 1);
        }
}

TEST_CASE("constructions: compare nccl:NAME builds through the registry's rows") {
    auto topo = Topology::parse("graph:schedules/machines/dgx1.json");
    const Collective ar = Collective::parse("allreduce", *topo), bc = Collective::parse("broadcast:0", *topo);
    std::vector<std::string> every, built;
    for (const nccl::Baseline& b : nccl::nccl_baselines(topo, ar, topo->default_model())) every.push_back(b.name);
    for (const nccl::Baseline& b : compare_nccl("*", topo, ar, topo->default_model(), {})) built.push_back(b.name);
    CHECK(built == every);
    CHECK(compare_nccl("tree", topo, ar, topo->default_model(), {}).front().algorithm == nccl::Algorithm::tree);
    CHECK(compare_nccl("ring x16", topo, bc, topo->default_model(), {}).front().name == "ring x16");
    CHECK_THROWS_WITH_AS(compare_nccl("pat", topo, ar, topo->default_model(), {}),
                         "nccl:pat: not one of NCCL's algorithms for allreduce on graph:schedules/machines/dgx1.json (these are: nccl:ring, nccl:tree)",
                         InputError);
}

TEST_CASE("constructions: compose's shapes are one list, each way in a box with each way across the rails once") {
    const std::vector<compose::Shape> shapes = compose::every_shape();
    CHECK(shapes.size() == 5 * 6);
    std::set<std::string> names;
    for (const compose::Shape& s : shapes) CHECK(names.insert(compose::shape_name(s)).second);
    CHECK(names.count("hierarchical rsag+direct") == 1);
}
