// The constructions' rows as the steps objective reads them (construction.hpp).
#include "verifier/synth/problem/construction.hpp"

#include "support/assert.hpp"

namespace collsched {

ConstructionRows::ConstructionRows(const std::vector<Construction>& rows) : rows_(&rows) {
    COLLSCHED_ASSERT(!rows.empty());  // the registry, never a list built empty by a caller
}

}  // namespace collsched
