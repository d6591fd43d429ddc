#include "compiler/send_table.hpp"

#include <algorithm>
#include <numeric>

namespace collsched {

bool SendTable::is_sorted() const { return std::is_sorted(transfers.begin(), transfers.end()); }

void SendTable::sort() {
    if (is_sorted()) return;
    if (transfer_extras.empty()) {
        std::sort(transfers.begin(), transfers.end());
        return;
    }
    std::vector<std::uint64_t> order(transfers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return transfers[a] < transfers[b]; });
    std::vector<std::uint64_t> where(order.size());
    std::vector<Transfer> sorted(transfers.size());
    for (std::uint64_t i = 0; i < order.size(); ++i) {
        sorted[i] = transfers[order[i]];
        where[order[i]] = i;
    }
    transfers = std::move(sorted);
    for (auto& [i, text] : transfer_extras) i = where[i];
    std::sort(transfer_extras.begin(), transfer_extras.end());
}

}  // namespace collsched
