/** \file
 * The algorithm library's catalog (schedules/catalog.json, format collsched.catalog/1; docs/
 * reproduction.md, "The catalog"): each schedule file with the parameter values to compile it
 * at, its paper, the notes that explain a known verdict and the papers' cost formulas. Read by
 * `collsched reproduce` (bench/reproduce.hpp) and by the time objective's library provider
 * (verifier/time/objective.hpp); here, beside compile_file, so that both see one reader.
 */
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/budget.hpp"

namespace collsched {

/// A note of the catalog: why rows whose params match `when` get `verdict` (the paper's claim
/// does not hold under the model). A matching row with that verdict is "explained".
struct CatalogNote {
    std::vector<std::pair<std::string, std::int64_t>> when;  ///< params that must all match (empty: every row)
    std::string verdict;
    std::string text;
};

/// A cost to print beside a wormhole row's measured cost: rounds (start-ups, the coefficient of
/// ts) and payload (the coefficient of tc), as integer expressions of the schedule language over
/// the row's params (docs/reproduction.md, "The catalog"). `let` holds `name = expr` definitions
/// the two formulas may use.
struct CatalogCompare {
    std::string name, rounds, payload;
};

struct CatalogEntry {
    std::string file;   ///< the schedule, as given in the catalog joined to the catalog's directory
    std::string paper;  ///< a key of Catalog::papers
    std::string title;
    std::vector<std::vector<std::pair<std::string, std::int64_t>>> rows;  ///< -D values, one list per row
    std::vector<std::string> size;  ///< params whose product is a row's size (for --max-n)
    std::vector<CatalogNote> notes;
    std::vector<std::string> let;          ///< `name = expr` definitions for the compare formulas
    std::vector<CatalogCompare> compare;  ///< costs from the paper, evaluated per row
};

struct CatalogPaper {
    std::string id, title, file, model;
};

struct Catalog {
    std::vector<CatalogPaper> papers;
    std::vector<CatalogEntry> entries;
};

/// Memory a catalog takes per byte of its file while read: the text and nlohmann's tree of it
/// (16 bytes a value, 48 a member of an object: `[1,1,...]` and `{"a":1,...}` take 8 to 9 times
/// their text). What read_catalog reserves of the budget before it reads.
inline constexpr std::uint64_t catalog_memory_per_byte = 10;

/// The largest catalog read: 64 MiB (schedules/catalog.json is 30 KB). A larger JSON file is
/// refused by its size before it is read: a 400 MB one took 3.2 GB and its tree, dropped at the
/// time limit, 5 s past it to free.
inline constexpr std::uint64_t max_catalog_bytes = std::uint64_t{64} << 20;

/// Reads a catalog file. Throws InputError (one line: file, what is wrong, what was expected;
/// a file over max_catalog_bytes), and LimitReached when the file's size times catalog_memory_per_byte does not fit in what the
/// memory budget of `limits` leaves (before anything is read) or when either limit is reached
/// while it is parsed (polled every 4,096 values).
Catalog read_catalog(const std::string& path, const RunLimits& limits = {});

/// A row's size: the product of the entry's `size` params ("k^d" a power), for --max-n.
std::uint64_t row_size(const CatalogEntry&, const std::vector<std::pair<std::string, std::int64_t>>& params);

}  // namespace collsched
