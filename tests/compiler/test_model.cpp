// Models: the key=value option syntax, defaults, and the JSON form.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <nlohmann/json.hpp>

#include "compiler/core/model.hpp"
#include "dsl/diagnostics.hpp"

using namespace collsched;

TEST_CASE("model: options apply on top of a base") {
    Model m = apply_model_options(Model{}, "ports=half,queues=none");
    CHECK(m.ports == Ports::half);
    CHECK(m.queues == QueueKind::none);
    CHECK(m.timing == Timing::hop);
    CHECK(to_string(m) == "timing=hop,ports=half,queues=none,replicate=no");
    m = apply_model_options(m, "queues=4,replicate=yes");
    CHECK(m.queues == QueueKind::bounded);
    CHECK(m.queue_bound == 4);
    CHECK(m.replicate);
    m = apply_model_options(Model{}, "timing=wormhole,ts=1,tc=0.01");
    CHECK(m.timing == Timing::wormhole);
    CHECK(m.tc == collsched::test::rel(0.01));
    CHECK(to_string(m) == "timing=wormhole,ts=1,tc=0.01,ports=multi,queues=unbounded,replicate=no");
}

TEST_CASE("model: bad options name the key and the accepted values") {
    auto err = [](std::string_view s) {
        try {
            apply_model_options(Model{}, s);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(err("ports=duplex") == "model: bad value 'duplex' for 'ports': expected multi, single or half");
    CHECK(err("port=single") == "model: unknown key 'port': expected one of timing, ts, tc, ports, queues, replicate, inject, combine, multicast");
    CHECK(err("queues=-1") == "model: bad value '-1' for 'queues': expected unbounded, none, or a queue bound B >= 0");
    CHECK(err("single") == "model: 'single' is not key=value (for example ports=single)");
    CHECK(err("tc=abc") == "model: bad value 'abc' for 'tc': expected a non-negative number");
}

TEST_CASE("model: JSON round trip") {
    Model m = apply_model_options(Model{}, "ports=single,queues=3,replicate=yes");
    nlohmann::json j = to_json(m);
    CHECK(j["queues"] == 3);
    CHECK(j["replicate"] == true);
    CHECK(model_from_json(j, Model{}) == m);
    CHECK(model_from_json(nlohmann::json::parse(R"J({"queues": "none"})J"), Model{}).queues == QueueKind::none);
}

TEST_CASE("model: combine=routers (in-network reduction) is off by default, printed and stored only when set") {
    CHECK_FALSE(Model{}.combine_routers);
    Model m = apply_model_options(Model{}, "queues=none,combine=routers");
    CHECK(m.combine_routers);
    CHECK(to_string(m) == "timing=hop,ports=multi,queues=none,replicate=no,combine=routers");
    nlohmann::json j = to_json(m);
    CHECK(j["combine"] == "routers");
    CHECK(model_from_json(j, Model{}) == m);
    CHECK_FALSE(apply_model_options(m, "combine=processors").combine_routers);
    CHECK_FALSE(to_json(Model{}).contains("combine"));
    CHECK(combine_problem(m) == "");
    // Where a model is read, combine=routers outside its models is refused (issue 34: verify said
    // so without naming the file, and compile wrote a table verify refused).
    CHECK_THROWS_WITH_AS(apply_model_options(m, "replicate=yes"),
                         "model: combine=routers (in-network reduction) is defined with replicate=no (a combination consumes its inputs)",
                         InputError);
    CHECK_THROWS_WITH_AS(apply_model_options(m, "queues=2"),
                         "model: combine=routers (in-network reduction) is defined with queues=none or queues=unbounded, not with a queue bound",
                         InputError);
    CHECK_THROWS_WITH_AS(apply_model_options(m, "timing=wormhole"), "model: combine=routers (in-network reduction) is defined under hop timing",
                         InputError);
    Model w = m;
    w.timing = Timing::wormhole;
    CHECK(combine_problem(w) == "combine=routers (in-network reduction) is defined under hop timing");
    CHECK_THROWS_WITH_AS(model_from_json(to_json(w), Model{}), "model: combine=routers (in-network reduction) is defined under hop timing",
                         InputError);
    try {
        apply_model_options(Model{}, "combine=switches");
        FAIL("accepted combine=switches");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == "model: bad value 'switches' for 'combine': expected processors or routers");
    }
}

TEST_CASE("model: inject=once is printed and stored only when set") {
    Model m = apply_model_options(Model{}, "queues=none,replicate=yes,inject=once");
    CHECK(m.inject_once);
    CHECK(to_string(m) == "timing=hop,ports=multi,queues=none,replicate=yes,inject=once");
    nlohmann::json j = to_json(m);
    CHECK(j["inject"] == "once");
    CHECK(model_from_json(j, Model{}) == m);
    CHECK_FALSE(apply_model_options(m, "inject=any").inject_once);
    CHECK_FALSE(to_json(Model{}).contains("inject"));
    CHECK(to_string(Model{}) == "timing=hop,ports=multi,queues=unbounded,replicate=no");
    try {
        apply_model_options(Model{}, "inject=twice");
        FAIL("accepted inject=twice");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == "model: bad value 'twice' for 'inject': expected once or any");
    }
}
