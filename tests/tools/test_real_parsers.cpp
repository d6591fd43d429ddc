// The executors' own parsers on every library export (labels `msccl_parser` and `mscclpp_parser`;
// docs/exports.md, "Checked by the real parser"). The loaders are the executors' unmodified
// parser sources compiled against stand-ins (tests/msccl_parser, tests/mscclpp_parser); CMake
// builds them only where the sources are present (COLLSCHED_MSCCL_EXECUTOR_SOURCE,
// COLLSCHED_MSCCLPP_SOURCE) and runs these cases with the loader's path in the environment. In the
// default suite they are skipped: they need a source tree this repository does not hold.
//
// Every catalog row of up to COLLSCHED_REAL_PARSER_MAX processors (default 16: both parsers read
// the whole file once per rank, so a program of P ranks costs P times its size, and the
// executor's MSCCL-IR reader takes one fread per character) is exported in process (each export is checked by collsched's own reader before it
// is returned), written to a scratch directory, and the loader loads every file for every rank
// in one run.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "compiler/interop/export_msccl.hpp"
#include "compiler/interop/export_mscclpp.hpp"
#include "dsl/diagnostics.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/tools/catalog_rows.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/constructions/compose/nvls.hpp"

using namespace collsched;

namespace {

std::string loader(const char* var) {
    const char* p = std::getenv(var);
    REQUIRE_MESSAGE(p != nullptr, var, " must name the loader (ctest sets it where the executor's source is present)");
    return p;
}

std::uint64_t max_size(std::uint64_t dflt) {
    const char* env = std::getenv("COLLSCHED_REAL_PARSER_MAX");
    return env ? std::strtoull(env, nullptr, 10) : dflt;
}

/// What a test wrote: files, the rank loads they make, and the exports the exporter refused.
struct Written {
    int files = 0, ranks = 0, refused = 0;
};

/// Runs a loader over every file of a directory (xargs may split the list: every summary line
/// `N programs|plans, M rank loads by ..., K refused` is summed) and checks that every file
/// loaded for every rank.
void load_all(const std::string& loader, const test::Scratch& dir, const std::string& ext, const Written& w, std::string_view what) {
    MESSAGE(fmt::format("{} {} written ({} refused by the exporter), {} rank loads expected", w.files, what, w.refused, w.ranks));
    const std::string out = dir.file("loader.out"), err = dir.file("loader.err");
    const std::string cmd = fmt::format("ls {}/*.{} | xargs '{}' > '{}' 2> '{}'", dir.dir.string(), ext, loader, out, err);
    const auto t0 = std::chrono::steady_clock::now();
    const int status = std::system(cmd.c_str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::ifstream o(out), e(err);
    const std::string text((std::istreambuf_iterator<char>(o)), std::istreambuf_iterator<char>());
    const std::string errors((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
    INFO(errors.substr(0, 4000));
    CHECK(status == 0);
    int files = 0, loads = 0, bad = 0;
    const std::regex line(R"((\d+) (?:programs|plans), (\d+) rank loads by [^,]*, (\d+) refused)");
    for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
        files += std::stoi((*it)[1]);
        loads += std::stoi((*it)[2]);
        bad += std::stoi((*it)[3]);
    }
    MESSAGE(fmt::format("the loader: {} files, {} rank loads, {} refused in {:.1f} s", files, loads, bad, seconds));
    CHECK(files == w.files);
    CHECK(loads == w.ranks);
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("real parsers: the MSCCL executor's parser loads every library MSCCL-IR export for every rank" *
          doctest::test_suite("real_parsers") * doctest::skip()) {
    const std::string load_algos = loader("COLLSCHED_MSCCL_LOADER");
    test::Scratch dir("msccl_parser");
    Written w;
    test::for_each_catalog_table(max_size(16), [&](const SendTable& t, const std::string&) {
        // the default (in and out of place), in place only, and two instances on their own channels
        const MscclOptions variants[] = {{}, {.inplace = true}, {.instances = 2}};
        for (const MscclOptions& o : variants) {
            std::string xml;
            try {
                xml = table_to_msccl(t, o);
            } catch (const InputError& e) {
                const std::string why = e.what();
                CAPTURE(why);
                CHECK(why.find("a bug in collsched") == std::string::npos);  // the other reasons are test_msccl_import's business
                ++w.refused;
                continue;
            }
            dir.file(fmt::format("p{}.xml", ++w.files), xml);
            w.ranks += int(t.topology->processors());
        }
    });
    REQUIRE(w.files > 100);
    load_all(load_algos, dir, "xml", w, "MSCCL-IR exports");
}

TEST_CASE("real parsers: MSCCL++'s parser loads every library plan for every rank" * doctest::test_suite("real_parsers") *
          doctest::skip()) {
    const std::string load_plans = loader("COLLSCHED_MSCCLPP_LOADER");
    test::Scratch dir("mscclpp_parser");
    Written w;
    test::for_each_catalog_table(max_size(16), [&](const SendTable& t, const std::string&) {
        if (t.topology->processors() > max_size(16)) return;
        for (const MscclppOptions& o : {MscclppOptions{}, MscclppOptions{.proto = "LL"}, MscclppOptions{.instances = 2}}) {
            std::string plan;
            try {
                plan = table_to_mscclpp(t, o);
            } catch (const InputError& e) {
                const std::string why = e.what();
                CAPTURE(why);
                CHECK(why.find("a bug in collsched") == std::string::npos);  // every plan is verified before it is written
                ++w.refused;
                continue;
            }
            dir.file(fmt::format("p{}.json", ++w.files), plan);
            w.ranks += int(t.topology->processors());
        }
    });
    // switch channels: NVLS allreduce (glres) and allgather (gstore) on one DGX H100 box (issue 44)
    auto nvls = Topology::parse("graph:" + test::source("schedules/machines/dgx_h100_nvls.json"));
    compose::NvlsPlan nccl;
    nccl.owner_through_switch = true;
    for (const SendTable& t : {compose::nvls_allreduce(nvls, {1}), compose::nvls_allreduce(nvls, {3}), compose::nvls_allreduce(nvls, nccl),
                               compose::nvls_allgather(nvls, {1}), compose::nvls_allgather(nvls, {2})}) {
        dir.file(fmt::format("p{}.json", ++w.files), table_to_mscclpp(t, {}));
        w.ranks += 8;
    }
    // across boxes: one switch channel per box, port channels between boxes, on 2 and 4 H100 boxes
    for (const char* machine : {"h100nvls2x8", "h100nvls4x8"}) {
        auto boxes = Topology::parse("graph:" + test::source(std::string("schedules/machines/") + machine + ".json"));
        compose::NvlsPlan two;
        two.pieces = 2;
        for (const SendTable& t : {compose::nvls_tree_allreduce(boxes, {}), compose::nvls_tree_allreduce(boxes, two), compose::nvls_rail_allreduce(boxes, two)}) {
            dir.file(fmt::format("p{}.json", ++w.files), table_to_mscclpp(t, {}));
            w.ranks += int(boxes->processors());
        }
    }
    for (const char* name : {"ring_allgather_8.json", "allpairs_allreduce_8_ll.json", "allreduce_2node_8.json"}) {
        dir.file(fmt::format("data_{}", name), test::read_file(test::source(std::string("tests/data/mscclpp/") + name)));
        ++w.files;
        w.ranks += 8;
    }
    REQUIRE(w.files > 40);
    load_all(load_plans, dir, "json", w, "MSCCL++ plans");
}
