#include "support/edit_distance.hpp"

#include <algorithm>
#include <vector>

namespace collsched::support {

// Three rolling rows of the dynamic programme (the transposition looks two rows back), so the
// memory is linear in |b|.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    const std::size_t m = b.size();
    std::vector<std::size_t> two(m + 1), one(m + 1), cur(m + 1);
    for (std::size_t j = 0; j <= m; ++j) one[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= m; ++j) {
            cur[j] = std::min({one[j] + 1, cur[j - 1] + 1, one[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], two[j - 2] + 1);
        }
        std::swap(two, one);
        std::swap(one, cur);
    }
    return one[m];
}

}  // namespace collsched::support
