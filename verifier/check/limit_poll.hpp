/** \file
 * The direct checker's limits (VerifyOptions::deadline and memory_limit), polled by each of its
 * passes: the plain pass (verifier/check/direct.cpp) and the pass over combined values and bundles
 * (verifier/check/composite.cpp). A pass polls every step and every 4096 items; past the deadline or
 * the memory budget it throws LimitReached, which verify_direct turns into the verdict "unknown".
 */
#pragma once

#include <cstdint>
#include <optional>

#include "support/budget.hpp"
#include "support/error.hpp"
#include "verifier/check/report.hpp"

namespace collsched::detail {

class LimitPoll {
public:
    explicit LimitPoll(const VerifyOptions& opt)
        : deadline_(opt.deadline), memory_(opt.memory_limit ? std::optional<MemoryBudget>(MemoryBudget::standard()) : std::nullopt) {}
    /// Throws LimitReached past the deadline or the memory budget: at once with `now`, else every 4096th call. The
    /// deadline less the time the resident memory takes to give back (release_seconds): a check of a reduction on rail
    /// 128 x 8 in 3 pieces (6.3 million transfers, 2.8 GB) ended 1.4 s past its deadline freeing its partial buffers.
    void operator()(bool now) {
        if (!now && (++polls_ & 4095u) != 0) return;
        if (deadline_.passed() || passed_reserving_release(deadline_)) throw LimitReached("time limit");
        if (memory_ && memory_->exceeded()) throw LimitReached("memory limit");
    }

private:
    Deadline deadline_;
    std::optional<MemoryBudget> memory_;
    std::uint32_t polls_ = 0;
};

}  // namespace collsched::detail
