// The two witnesses: the direct checker and the simulator are written independently and must
// agree on every table of the tests: the same verdict, the same completion step, and when the
// simulator halts, a rule the checker also finds violated.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/table/builder.hpp"
#include "compiler/io/table_io.hpp"
#include "runtime/simulator.hpp"
#include "verifier/check/direct.hpp"

using namespace collsched;

namespace {

void agree(const SendTable& t, std::string_view what) {
    CAPTURE(what);
    VerifyReport v = verify_direct(t);
    SimReport s = simulate(t);
    CHECK(v.steps == s.steps);
    CHECK(v.holds() == (s.status == SimStatus::completed));
    if (s.status == SimStatus::halted) {
        REQUIRE(s.violation.has_value());
        // The simulator's first broken rule is one the checker reports too.
        Property p = Property::causality;
        switch (s.violation->rule) {
            case SimRule::capacity: p = Property::capacity; break;
            case SimRule::ports: p = Property::ports; break;
            case SimRule::queues: p = Property::queues; break;
            case SimRule::replication: p = Property::replication; break;
            case SimRule::causality: p = Property::causality; break;
            case SimRule::completeness: p = Property::completeness; break;
        }
        CHECK(v.status[static_cast<std::size_t>(p)] == Status::violated);
    }
    if (s.status == SimStatus::incomplete) CHECK(v.status[static_cast<std::size_t>(Property::completeness)] == Status::violated);
    if (v.holds()) CHECK(s.deliveries_done == s.deliveries_required);
}

}  // namespace

TEST_CASE("witnesses: the checker and the simulator agree on the generated total exchanges") {
    for (const char* spec : {"ebft:2", "ebft:4", "ebft:8", "ebft:16", "ebft:64", "cbft:4", "cbft:8", "cbft:16"}) {
        SendTable t = bft_phase_alltoall(Topology::parse(spec));
        agree(t, spec);
        // and with each single transfer delayed by one step (breaks queues=none, often more)
        for (std::size_t i = 0; i < t.transfers.size() && i < 64; i += 7) {
            SendTable broken = t;
            broken.transfers[i].step += 1;
            broken.sort();
            agree(broken, std::string(spec) + " delayed transfer " + std::to_string(i));
            SendTable dropped = t;
            dropped.transfers.erase(dropped.transfers.begin() + static_cast<std::ptrdiff_t>(i));
            agree(dropped, std::string(spec) + " dropped transfer " + std::to_string(i));
        }
    }
}

TEST_CASE("witnesses: the checker and the simulator agree on every table file of the tests") {
    std::size_t files = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(COLLSCHED_SOURCE_DIR) + "/tests")) {
        if (e.path().extension() != ".json" || e.path().string().find("/err/") != std::string::npos) continue;
        std::ifstream in(e.path());
        std::stringstream ss;
        ss << in.rdbuf();
        std::string text = ss.str();
        if (text.find("collsched.table/1") == std::string::npos) continue;
        agree(parse_table_json(text, e.path().string()), e.path().string());
        ++files;
    }
    CHECK(files >= 1);
}
