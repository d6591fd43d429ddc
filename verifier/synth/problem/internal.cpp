// The shared internals of problem/internal.hpp: list scheduling of unit jobs (the bounds' and the
// quotient's least makespan) and the direct check of a schedule found (every construction's).
#include "verifier/synth/problem/internal.hpp"

#include <algorithm>
#include <queue>

#include "verifier/check/direct.hpp"

namespace collsched::synth_internal {

Step least_makespan(std::vector<Job> jobs, std::uint32_t cap) {
    if (jobs.empty()) return 0;
    std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.release < b.release; });
    std::priority_queue<Step> ready;
    std::size_t next = 0;
    Step t = jobs.front().release, best = 0;
    while (next < jobs.size() || !ready.empty()) {
        if (ready.empty() && jobs[next].release > t) t = jobs[next].release;
        while (next < jobs.size() && jobs[next].release <= t) ready.push(jobs[next++].tail);
        for (std::uint32_t k = 0; k < cap && !ready.empty(); ++k) {
            best = std::max(best, t + ready.top());
            ready.pop();
        }
        ++t;
    }
    return best;
}

bool holds(SendTable& table, const SynthInstance& in, bool fixed_routes, std::chrono::steady_clock::time_point deadline) {
    table.model = in.model;
    VerifyOptions vo;
    vo.fixed_routes = fixed_routes;
    vo.deadline = Deadline::at(deadline);
    return verify_direct(table, vo).holds();
}

}  // namespace collsched::synth_internal
