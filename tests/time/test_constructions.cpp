// The constructions' registry (verifier/time/constructions.hpp, docs/architecture.md "The constructions' registry"):
// every row named once with a file that exists, and the lists the objectives read are its rows: optimize's upper
// bound tries step_constructions' rows, optimize --size runs the rows of the time objective in order, compose's
// shapes are one list.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "verifier/compose/allreduce.hpp"
#include "verifier/synth/constructions/known.hpp"
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

}  // namespace

TEST_CASE("constructions: every row has a unique name, a file that exists and what it builds") {
    std::set<std::string> names;
    for (const Construction& c : constructions()) {
        INFO(c.name);
        CHECK(names.insert(c.name).second);
        CHECK(std::filesystem::is_regular_file(std::filesystem::path(COLLSCHED_SOURCE_DIR) / c.file));
        CHECK(!c.what.empty());
        CHECK(static_cast<bool>(c.provide) == (c.use == Use::time || c.use == Use::baseline));
    }
    CHECK(names.count("rings") == 1);
    CHECK(names.count("bft phase alltoall") == 1);
}

TEST_CASE("constructions: the steps rows are step_constructions', in order, each with its check and builder") {
    std::vector<std::string> steps, rows;
    for (const StepConstruction& s : step_constructions()) {
        CHECK(static_cast<bool>(s.why_not));
        CHECK(static_cast<bool>(s.build));
        steps.push_back(s.name);
    }
    for (const Construction& c : constructions())
        if (c.use == Use::steps) rows.push_back(c.name);
    CHECK(rows == steps);
    CHECK(steps.size() >= 10);
}

TEST_CASE("constructions: optimize's upper bound is a row's, and a row that does not apply says why") {
    const SynthInstance ring = registry_instance("torus:3x3", "allgather");
    const SynthInstance bft = registry_instance("ebft:8", "alltoall");
    const std::vector<StepConstruction>& rows = step_constructions();
    auto row = [&](const std::string& name) { return *std::ranges::find_if(rows, [&](const StepConstruction& s) { return s.name == name; }); };
    CHECK(row("bft phase alltoall").why_not(bft, encoding_for(bft)).empty());
    CHECK(!row("bft phase alltoall").why_not(ring, encoding_for(ring)).empty());
    CHECK(row("ring allgather").why_not(ring, encoding_for(ring)).empty());
    for (const SynthInstance* in : {&ring, &bft}) {
        const std::optional<KnownSchedule> k = constructed_schedule(*in);
        REQUIRE(k);
        CHECK(std::ranges::any_of(rows, [&](const StepConstruction& s) { return s.source == k->source && s.why_not(*in, encoding_for(*in)).empty(); }));
    }
}

TEST_CASE("constructions: the time objective's providers are the rows after the steps', in order") {
    std::vector<std::string> time, all;
    for (const Construction& c : constructions()) {
        if (c.use == Use::time) time.push_back(c.name);
        if (c.use != Use::steps) all.push_back(c.name);
    }
    CHECK(names_of(construction_providers()) == time);
    CHECK(names_of(time_providers("schedules/catalog.json", {})) == all);
    CHECK(time == std::vector<std::string>{"rings", "tree packing", "least steps", "hierarchical", "constructions for time", "nvls", "sharp",
                                           "pipelined rings"});
    CHECK(all.back() == "nccl");
    CHECK(nccl_provider().name == "nccl");
    CHECK(nccl_provider().first);
    CHECK(nccl_provider().baseline);  // never left out by a bound (gather_candidates)
    for (const NamedProvider& p : time_providers("schedules/catalog.json", {})) CHECK(p.baseline == (p.name == "nccl"));
}

TEST_CASE("constructions: compose's shapes are one list, each way in a box with each way across the rails once") {
    const std::vector<compose::Shape> shapes = compose::every_shape();
    CHECK(shapes.size() == 5 * 6);
    std::set<std::string> names;
    for (const compose::Shape& s : shapes) CHECK(names.insert(compose::shape_name(s)).second);
    CHECK(names.count("hierarchical rsag+direct") == 1);
}
