/** \file
 * The algorithm library's catalog (schedules/catalog.json, format collsched.catalog/1; docs/
 * reproduction.md, "The catalog"): each schedule file with the parameter values to compile it
 * at, its paper, the notes that explain a known verdict and the papers' cost formulas. Read by
 * `collsched reproduce` (tools/reproduce.hpp) and by the time objective's library provider
 * (verifier/time/objective.hpp); here, beside compile_file, so that both see one reader
 * (moved from tools/reproduce.hpp, issue 43).
 */
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

/// Reads a catalog file. Throws InputError (one line: file, what is wrong, what was expected).
Catalog read_catalog(const std::string& path);

/// A row's size: the product of the entry's `size` params ("k^d" a power), for --max-n.
std::uint64_t row_size(const CatalogEntry&, const std::vector<std::pair<std::string, std::int64_t>>& params);

}  // namespace collsched
