// Golden files: tests/golden/ok/*.sched compile to the table in the .json next to them;
// tests/golden/err/*.sched fail with exactly the diagnostics in the .err next to them.
// COLLSCHED_UPDATE_GOLDEN=1 rewrites the expected files (review the diff before committing).
#include <doctest/doctest.h>

#include <set>

#include "compiler/io/table_io.hpp"
#include "tests/dsl/golden.hpp"

using namespace collsched;
using namespace collsched::test;

TEST_CASE("golden: ok programs compile to their expected tables") {
    auto files = golden_programs("ok");
    CHECK(files.size() >= 12);
    for (const auto& path : files) {
        std::string name = path.filename().string();
        CAPTURE(name);
        Diagnostics diags;
        auto table = compile_golden(read_text(path), name, diags);
        INFO(diags.render());
        CHECK(table.has_value());
        if (!table) continue;
        std::string json = table_to_json(*table);
        auto expected = std::filesystem::path(path).replace_extension(".json");
        if (update_golden()) write_text(expected, json);
        CHECK(read_text(expected) == json);
    }
}

TEST_CASE("golden: err programs report exactly the expected diagnostics") {
    auto files = golden_programs("err");
    CHECK(files.size() >= 25);
    std::set<std::string> codes;
    for (const auto& path : files) {
        std::string name = path.filename().string();
        CAPTURE(name);
        Diagnostics diags;
        auto table = compile_golden(read_text(path), name, diags);
        CHECK_FALSE(table.has_value());
        CHECK(diags.has_errors());
        for (const auto& d : diags.all()) codes.insert(d.code);
        std::string text = diags.render();
        auto expected = std::filesystem::path(path).replace_extension(".err");
        if (update_golden()) write_text(expected, text);
        CHECK(read_text(expected) == text);
    }
    codes.erase("");
    CHECK(codes.size() >= 25);
}
