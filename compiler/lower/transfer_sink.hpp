/** \file
 * Where the lowering puts the transfers it makes: fixed-size chunks sorted once at the end, or,
 * when streaming (compiler/lower/stream.hpp), per-step buckets handed to a StepConsumer as soon as no
 * later send can reach their step. Optionally each transfer carries the index of the statement
 * that made it (CompileOptions::record_locations).
 */
#pragma once

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "compiler/table/send_table.hpp"
#include "compiler/lower/stream.hpp"

namespace collsched::compiler {

/// Collects transfers in fixed-size chunks (no reallocation copies of a huge vector), then
/// sorts them: a counting sort on the step into the final vector, then StepSorter on each step
/// (send_table.hpp). Linear in the table; the peak memory is two copies of it.
///
/// Streaming (compiler/lower/stream.hpp): transfers go to per-step buckets instead, and every step
/// below the step the lowering is issuing sends in is final, so it is sorted and handed to the
/// consumer and its bucket reused. A transfer for a step already handed over means the schedule
/// goes back in time: NotStreamable.
class TransferSink {
public:
    static constexpr std::size_t chunk = std::size_t{1} << 20;

    void stream_to(StepConsumer* consumer, std::size_t channels) {
        consumer_ = consumer;
        channels_ = channels;
    }
    bool streaming() const { return consumer_ != nullptr; }
    /// Streaming: steps 1 .. flushed() are handed over.
    Step flushed() const { return flushed_; }

    void push(const Transfer& t) {
        ++size_;
        max_step_ = std::max(max_step_, t.step);
        if (consumer_) {
            if (t.step <= flushed_)
                throw NotStreamable(fmt::format("a transfer in step {} comes after step {} was handed over (the step blocks "
                                                "go back in time)",
                                                t.step, flushed_));
            const std::size_t k = t.step - flushed_ - 1;
            if (k >= window_.size()) window_.resize(k + 1);
            window_[k].push_back(t);
            ++buffered_;
            return;
        }
        if (chunks_.empty() || chunks_.back().size() == chunk) {
            chunks_.emplace_back();
            chunks_.back().reserve(chunk);
        }
        chunks_.back().push_back(t);
    }
    std::uint64_t size() const { return size_; }

    /// Recording origins (CompileOptions::record_locations, never while streaming): `origin(n,
    /// loc)` tags the last n transfers pushed with a location index. Called once per statement,
    /// so the transfer path itself does no extra work; a run that does not record pays one test.
    void record_origins() { record_ = true; }
    void origin(std::uint64_t n, std::uint32_t loc) {
        if (record_) origins_.insert(origins_.end(), n, loc);
    }

    /// Streaming: hands over every step below `step` (all of them when step is 0).
    void flush_below(Step step);

    std::vector<Transfer> take_sorted(std::size_t channels);

    /// take_sorted() for a recording run: the location indices follow their transfers into
    /// `origins`. The counting sort on the step (one range when the steps are sparse), then per
    /// step StepSorter's sort on (transfer, origin) pairs: a counting sort on the channel when
    /// the step is large next to the number of channels, else a stable comparison sort.
    std::vector<Transfer> take_sorted_with_origins(std::vector<std::uint32_t>& origins, std::size_t channels);

private:
    std::vector<std::vector<Transfer>> chunks_;
    std::uint64_t size_ = 0;
    bool record_ = false;
    std::vector<std::uint32_t> origins_;  ///< recording: the location index of each transfer, in push order
    Step max_step_ = 0;
    // streaming
    StepConsumer* consumer_ = nullptr;
    std::size_t channels_ = 0;
    Step flushed_ = 0;                            ///< steps 1..flushed_ are handed over
    std::uint64_t buffered_ = 0;                  ///< transfers in the window
    std::vector<std::vector<Transfer>> window_;   ///< window_[k]: step flushed_ + 1 + k
    StepSorter sorter_;
};

}  // namespace collsched::compiler
