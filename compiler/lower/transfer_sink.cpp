#include "compiler/lower/transfer_sink.hpp"

#include <algorithm>
#include <span>
#include <tuple>
#include <utility>

namespace collsched::compiler {

void TransferSink::flush_below(Step step) {
    while (buffered_ > 0 && (step == 0 || flushed_ + 1 < step)) {
        std::vector<Transfer>& first = window_.front();
        ++flushed_;
        if (!first.empty()) {
            sorter_.sort(first, channels_);
            consumer_->step(flushed_, first);
            buffered_ -= first.size();
            first.clear();
        }
        std::rotate(window_.begin(), window_.begin() + 1, window_.end());  // keeps the bucket's capacity
    }
    if (buffered_ == 0 && step > flushed_ + 1) flushed_ = step - 1;  // nothing buffered: skip ahead
}

std::vector<Transfer> TransferSink::take_sorted(std::size_t channels) {
    std::vector<Transfer> out;
    if (size_ == 0) return out;
    if (max_step_ > 4 * size_ + 1024) {  // sparse steps: one comparison sort
        out.reserve(size_);
        for (auto& c : chunks_) out.insert(out.end(), c.begin(), c.end());
        chunks_.clear();
        std::sort(out.begin(), out.end());
        return out;
    }
    std::vector<std::uint64_t> start(std::size_t{max_step_} + 2, 0);
    for (const auto& c : chunks_)
        for (const Transfer& t : c) ++start[t.step + 1];
    for (std::size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
    out.resize(size_);
    {
        std::vector<std::uint64_t> pos(start.begin(), start.end() - 1);
        for (auto& c : chunks_) {
            for (const Transfer& t : c) out[pos[t.step]++] = t;
            std::vector<Transfer>().swap(c);
        }
        chunks_.clear();
    }
    StepSorter sorter;
    for (std::size_t s = 0; s + 1 < start.size(); ++s)
        sorter.sort(std::span<Transfer>(out.data() + start[s], out.data() + start[s + 1]), channels);
    return out;
}

std::vector<Transfer> TransferSink::take_sorted_with_origins(std::vector<std::uint32_t>& origins, std::size_t channels) {
    std::vector<Transfer> out;
    origins.clear();
    if (size_ == 0) return out;
    COLLSCHED_ASSERT(origins_.size() == size_);
    const bool sparse = max_step_ > 4 * size_ + 1024;
    std::vector<std::uint64_t> start(sparse ? 2 : std::size_t{max_step_} + 2, 0);
    if (sparse) start[1] = size_;
    else {
        for (const auto& c : chunks_)
            for (const Transfer& t : c) ++start[t.step + 1];
        for (std::size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
    }
    out.resize(size_);
    origins.resize(size_);
    {
        std::vector<std::uint64_t> pos(start.begin(), start.end() - 1);
        std::uint64_t k = 0;
        for (auto& c : chunks_) {
            for (const Transfer& t : c) {
                std::uint64_t p = pos[sparse ? 0 : t.step]++;
                out[p] = t;
                origins[p] = origins_[k++];
            }
            std::vector<Transfer>().swap(c);
        }
        chunks_.clear();
        std::vector<std::uint32_t>().swap(origins_);
    }
    std::vector<std::pair<Transfer, std::uint32_t>> buf;
    std::vector<std::uint64_t> at;
    auto by_transfer = [](const auto& x, const auto& y) { return x.first < y.first; };
    for (std::size_t s = 0; s + 1 < start.size(); ++s) {
        const std::uint64_t a = start[s], n = start[s + 1] - a;
        if (n < 2) continue;
        buf.resize(n);
        if (sparse || n * 8 < channels) {
            for (std::uint64_t i = 0; i < n; ++i) buf[i] = {out[a + i], origins[a + i]};
            std::stable_sort(buf.begin(), buf.end(), by_transfer);
        } else {
            at.assign(channels + 1, 0);
            for (std::uint64_t i = 0; i < n; ++i) ++at[idx(out[a + i].channel) + 1];
            for (std::size_t c = 1; c <= channels; ++c) at[c] += at[c - 1];
            for (std::uint64_t i = 0; i < n; ++i) buf[at[idx(out[a + i].channel)]++] = {out[a + i], origins[a + i]};
            for (auto run = buf.begin(); run != buf.end();) {
                auto end = run + 1;
                while (end != buf.end() && end->first.channel == run->first.channel) ++end;
                if (end - run > 1) std::stable_sort(run, end, by_transfer);
                run = end;
            }
        }
        for (std::uint64_t i = 0; i < n; ++i) std::tie(out[a + i], origins[a + i]) = buf[i];
    }
    return out;
}

}  // namespace collsched::compiler
