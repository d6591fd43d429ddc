#include "compiler/send_table.hpp"

#include <algorithm>
#include <numeric>

namespace collsched {

void StepSorter::sort(std::span<Transfer> step, std::size_t channels) {
    const std::size_t n = step.size();
    if (n < 2) return;
    auto by_channel = [](const Transfer& a, const Transfer& b) {
        return std::pair(idx(a.channel), idx(a.message)) < std::pair(idx(b.channel), idx(b.message));
    };
    auto by_message = [](const Transfer& a, const Transfer& b) { return idx(a.message) < idx(b.message); };
    if (n * 8 < channels) {
        if (!std::is_sorted(step.begin(), step.end(), by_channel)) std::sort(step.begin(), step.end(), by_channel);
        return;
    }
    at_.assign(channels + 1, 0);
    for (const Transfer& t : step) ++at_[idx(t.channel) + 1];
    for (std::size_t c = 1; c <= channels; ++c) at_[c] += at_[c - 1];
    buf_.resize(n);
    for (const Transfer& t : step) buf_[at_[idx(t.channel)]++] = t;
    std::copy(buf_.begin(), buf_.end(), step.begin());
    for (auto run = step.begin(); run != step.end();) {
        auto end = run + 1;
        while (end != step.end() && end->channel == run->channel) ++end;
        if (end - run > 1 && !std::is_sorted(run, end, by_message)) std::sort(run, end, by_message);
        run = end;
    }
}

void sort_transfers(std::vector<Transfer>& transfers, std::size_t channels) {
    const std::size_t N = transfers.size();
    if (N < 2) return;
    Step max_step = 0;
    std::uint32_t max_channel = 0;
    for (const Transfer& t : transfers) {
        max_step = std::max(max_step, t.step);
        max_channel = std::max(max_channel, idx(t.channel));
    }
    // Sparse steps, or channel ids the topology does not have (a table not checked yet): one
    // comparison sort, which needs no array indexed by either.
    if (max_step > 4 * N + 1024 || max_channel >= channels) {
        std::sort(transfers.begin(), transfers.end());
        return;
    }
    std::vector<std::uint64_t> start(std::size_t{max_step} + 2, 0);
    for (const Transfer& t : transfers) ++start[std::size_t{t.step} + 1];
    for (std::size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
    std::vector<Transfer> out(N);
    {
        std::vector<std::uint64_t> pos(start.begin(), start.end() - 1);
        for (const Transfer& t : transfers) out[pos[t.step]++] = t;
    }
    StepSorter sorter;
    for (std::size_t s = 0; s + 1 < start.size(); ++s)
        sorter.sort(std::span<Transfer>(out.data() + start[s], out.data() + start[s + 1]), channels);
    transfers = std::move(out);
}

bool SendTable::is_sorted() const { return std::is_sorted(transfers.begin(), transfers.end()); }

void SendTable::sort() {
    if (is_sorted()) return;
    if (transfer_extras.empty()) {
        sort_transfers(transfers, topology ? topology->channels().size() : 0);
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
