/** \file
 * The library's catalog rows (schedules/catalog.json) as compiled tables, for the export tests
 * that run over the whole library (MSCCL-IR, MSCCL++, the real parsers): one loop, one notion of
 * a row's size (bench::row_size, as `collsched reproduce --max-n` counts it).
 */
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "tests/tools/cli_run.hpp"
#include "bench/reproduce.hpp"

namespace collsched::test {

/// Calls fn(table, "file -D k=v ...") for every catalog row of at most `max_size` processors,
/// with the row captured for doctest's messages; every row must compile.
template <class Fn>
void for_each_catalog_table(std::uint64_t max_size, Fn&& fn) {
    const bench::Catalog catalog = bench::read_catalog(source("schedules/catalog.json"));
    for (const bench::CatalogEntry& e : catalog.entries)
        for (const auto& row : e.rows) {
            if (bench::row_size(e, row) > max_size) continue;
            std::vector<std::string> defines;
            for (const auto& [k, v] : row) defines.push_back(fmt::format("{}={}", k, v));
            const std::string name = fmt::format("{} -D {}", e.file, fmt::join(defines, " -D "));
            CAPTURE(name);
            Diagnostics diags;
            std::optional<SendTable> t = compile_file(e.file, defines, {}, diags);
            REQUIRE(t.has_value());
            fn(*t, name);
        }
}

}  // namespace collsched::test
