// The host CPU in NCCL's model (verifier/constructions/nccl nccl_system, nccl_model_time; docs/time.md "The
// machine NCCL sees"): the A100 boxes (DGX A100, NDv4) have AMD EPYC hosts, the others Intel Xeons.
#include <doctest/doctest.h>

#include "tests/approx.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/constructions/nccl/nccl.hpp"

using namespace collsched;
using collsched::test::source;

TEST_CASE("nccl cpu: DGX A100 boxes are AMD hosts, NCCL's ring LL across 2 of them by hand") {
    const auto t = Topology::parse("graph:" + source("schedules/machines/multibox2x8.json"));
    const nccl::System s = nccl::nccl_system(*t);
    CHECK(s.cpu == nccl::Cpu::amd);
    // tuning.cc: 8 channels x 24 GB/s; LL busBw min(llMaxBws[AMD][2 nodes] 22.5, 192 x 0.5), algBw x 16/30;
    // latency 6.6 + 28 x max(0.6, getNetOverhead AMD 2 us) + 2 x 2.7 = 68.0 us (an Intel host: 40.0 us, llMaxBw 39)
    const double m = 65536;
    const auto ll = nccl::nccl_model_time(s, CollectiveKind::allreduce, nccl::Algorithm::ring, nccl::Protocol::ll, m);
    REQUIRE(ll.has_value());
    CHECK(*ll == test::rel((6.6 + 28 * 2.0 + 2 * 2.7 + m / (1000 * 22.5 * 16 / 30)) * 1e-6));
    nccl::System intel = s;
    intel.cpu = nccl::Cpu::intel;
    CHECK(*nccl::nccl_model_time(intel, CollectiveKind::allreduce, nccl::Algorithm::ring, nccl::Protocol::ll, m) ==
          test::rel((6.6 + 28 * 1.0 + 2 * 2.7 + m / (1000 * 39.0 * 16 / 30)) * 1e-6));
    for (const char* other : {"dgx1", "h100rail2x8", "ndv2x2", "dgx2"}) {
        CAPTURE(other);
        CHECK(nccl::nccl_system(*Topology::parse("graph:" + source(std::string("schedules/machines/") + other + ".json"))).cpu == nccl::Cpu::intel);
    }
}
