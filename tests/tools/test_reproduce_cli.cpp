// `collsched reproduce` through the executable: the table, --json rows that recompile to the same
// steps, --filter and --max-n, exit codes for failing and explained rows and bad catalogs.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"

using collsched::test::run;
using collsched::test::source;

namespace {

std::string catalog_arg() { return " --catalog " + source("schedules/catalog.json"); }

/// A scratch directory with a catalog and a schedule whose claim is wrong for n = 8.
struct ReproduceScratch {
    std::filesystem::path dir = std::filesystem::temp_directory_path() / ("collsched_repro_" + std::to_string(::getpid()));
    ReproduceScratch() {
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "ring.sched") << "param n = 4\ntopology ring(n)\nmodel hop(ports = single)\ncollective allgather\n"
                                             "claim steps = min(n - 1, 5)\nbound lower = n - 1\n"
                                             "for s in 1 .. n - 1 { step s { for i in 0 .. n - 1 { send i -> (i + 1) % n msg b((i - s + 1) % n) } } }\n";
    }
    ~ReproduceScratch() { std::filesystem::remove_all(dir); }
    std::string catalog(const std::string& notes) const {
        std::string path = (dir / "catalog.json").string();
        std::ofstream(path) << R"({"format": "collsched.catalog/1", "papers": [{"id": "p", "title": "A paper"}],
            "schedules": [{"file": "ring.sched", "paper": "p", "sweep": {"n": [4, 6, 8]})" +
                                   notes + "}]}";
        return path;
    }
};

}  // namespace

TEST_CASE("reproduce --json: rows with claim, steps, lower bound and verdict, recompilable with -D") {
    auto r = run("reproduce --json --max-n 16 --filter ebft_alltoall.sched" + catalog_arg());
    REQUIRE(r.code == 0);
    auto rows = nlohmann::json::parse(r.out);
    REQUIRE(rows.size() == 3);  // n = 4, 8, 16
    const auto& row = rows[2];
    CHECK(row["algorithm"].get<std::string>().ends_with("schedules/bft/ebft_alltoall.sched"));
    CHECK(row["params"] == nlohmann::json{{"n", 16}});
    CHECK(row["claim"] == 22);
    CHECK(row["steps"] == 22);
    CHECK(row["lower_bound"] == 18);
    CHECK(row["verdict"] == "holds");
    CHECK(row["simulator"] == "agrees");
    CHECK(row["topology"] == "ebft:16");
    // Anyone can recompile the row and get the same table.
    auto c = run("compile " + row["algorithm"].get<std::string>() + " -D n=16");
    REQUIRE(c.code == 0);
    auto table = nlohmann::json::parse(c.out);
    CHECK(table["steps"] == 22);
    CHECK(table["claim"] == 22);
    CHECK(table["lower_bound"] == 18);
}

TEST_CASE("reproduce prints the table with one row per (algorithm, size) and a summary") {
    auto r = run("reproduce --max-n 8 --filter broadcast.sched --filter ring_full" + catalog_arg());
    CHECK(r.code == 0);
    CHECK(r.out.find("algorithm") == 0);
    CHECK(r.out.find("# Dimakopoulos & Dimopoulos, Communications in binary fat trees") != std::string::npos);
    CHECK(r.out.find("schedules/bft/broadcast.sched") != std::string::npos);
    CHECK(r.out.find("schedules/cm/crossbar_broadcast.sched") != std::string::npos);
    CHECK(r.out.find("n=8 r=0") != std::string::npos);
    CHECK(r.out.find("n=16") == std::string::npos);  // --max-n
    CHECK(r.out.find("buffer 1 fifo (claim 1)") != std::string::npos);
    CHECK(r.out.find(" 0 fail") != std::string::npos);
    CHECK(r.err.empty());  // progress only on a terminal
}

TEST_CASE("reproduce: the flooding row reports per-level queues and the notes that explain the root and n = 2") {
    auto r = run("reproduce --max-n 16 --filter allgather_flood" + catalog_arg());
    CHECK(r.code == 0);
    CHECK(r.out.find("queue-mismatch [2]") != std::string::npos);
    CHECK(r.out.find("queue 1,2,4,0 (claim 1,2,4,8)") != std::string::npos);
    CHECK(r.out.find("[2] Section 4.1 says") != std::string::npos);
    CHECK(r.out.find("below-lower-bound [1]") != std::string::npos);  // n = 2
    CHECK(r.out.find("[1] Table 1's lower bound n + 1") != std::string::npos);
}

TEST_CASE("reproduce exits 1 on a claim that fails without a note, 0 when a note explains it") {
    ReproduceScratch s;
    auto bad = run("reproduce --catalog " + s.catalog(""));
    CHECK(bad.code == 1);
    CHECK(bad.out.find("claim-mismatch") != std::string::npos);
    CHECK(bad.out.find("1 fail") != std::string::npos);
    auto json = run("reproduce --json --catalog " + s.catalog(""));
    auto rows = nlohmann::json::parse(json.out);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0]["verdict"] == "holds");
    CHECK(rows[2]["verdict"] == "claim-mismatch");
    CHECK(rows[2]["claim"] == 5);
    CHECK(rows[2]["steps"] == 7);

    auto explained = run("reproduce --catalog " +
                         s.catalog(R"(, "notes": [{"when": {"n": 8}, "verdict": "claim-mismatch", "note": "the claim is capped at 5"}])"));
    CHECK(explained.code == 0);
    CHECK(explained.out.find("claim-mismatch [1]") != std::string::npos);
    CHECK(explained.out.find("[1] the claim is capped at 5") != std::string::npos);
    // A note for another verdict explains nothing.
    auto other = run("reproduce --catalog " + s.catalog(R"(, "notes": [{"verdict": "violated", "note": "x"}])"));
    CHECK(other.code == 1);
}

TEST_CASE("reproduce: bad catalogs are exit code 2 with one line") {
    auto r = run("reproduce --catalog /nonexistent/catalog.json");
    CHECK(r.code == 2);
    CHECK(r.err == "collsched: error: /nonexistent/catalog.json: cannot open file (No such file or directory)\n");
    CHECK(r.out.empty());
}
