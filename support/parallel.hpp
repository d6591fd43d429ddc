/** \file
 * Independent jobs spread over threads and over processes. `run_indexed` is the one thread pool
 * of the house: `optimize --hierarchical --jobs N` runs its compositions on it, `pareto --jobs N`
 * its solver calls. `JobSharing` is the seam to other processes (MPI ranks under mpirun,
 * cli/mpi_share.hpp): a leader hands out jobs as text and gets their results back as text, so
 * the code that has jobs to share (verifier/synth/search/pareto.cpp) knows neither MPI nor how many
 * processes there are. docs/synthesis.md, "Threads and MPI ranks", says what is shared and why
 * the answers do not depend on it.
 */
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace collsched {

/// Runs `job(i)` for i = 0, 1, ..., n-1 on `threads` threads (the calling thread is one of them;
/// 0 or 1: all on the calling thread, in order). Each thread takes the next index not yet taken,
/// so the indices start in order; once a job returns false no further index is started (those
/// running finish). Results go wherever `job` writes them, by index: a caller that reads them in
/// the order of the indices gets the same answer for every number of threads. An exception
/// from a job stops the others from starting and is thrown here once all have returned.
void run_indexed(std::size_t n, unsigned threads, const std::function<bool(std::size_t)>& job);

/// The cores that jobs running at once share (optimize --size's providers, verifier/time/candidates.cpp): each such
/// job holds one while it runs (a Cores::Held), and a job with work for more threads borrows, one index at a time, the
/// cores the others are not using (run_indexed with `cores`); a job waiting to start comes before a borrower. On two
/// cores the constructions for time, the longest provider by far, ran on one thread while the other sat idle: NCCL's
/// provider and the library had ended in under a second.
class Cores {
public:
    explicit Cores(unsigned n) : free_(n) {}
    Cores(const Cores&) = delete;
    Cores& operator=(const Cores&) = delete;
    /// One core, waiting for it while `keep_waiting()` says so (polled); false when it gave up. A borrower
    /// (`first` false) does not take one while a job (`first` true) waits.
    bool take(const std::function<bool()>& keep_waiting, bool first = false);
    void give();
    /// A core held by a job for a scope (waiting for it first).
    class Held {
    public:
        explicit Held(Cores* c) : c_(c) {
            if (c_) c_->take([] { return true; }, true);
        }
        ~Held() {
            if (c_) c_->give();
        }
        Held(const Held&) = delete;
        Held& operator=(const Held&) = delete;

    private:
        Cores* c_;
    };

private:
    std::mutex lock_;
    std::condition_variable freed_;
    unsigned free_;
    unsigned first_waiting_ = 0;
};

/// run_indexed where the calling thread holds a core of `cores` and every other thread takes one for each index it runs
/// (waiting for it, or giving up once every index is taken) and gives it back after; `cores` null: run_indexed.
void run_indexed(std::size_t n, unsigned threads, const std::function<bool(std::size_t)>& job, Cores* cores);

/// Runs one job given as text and returns its result as text (called on several threads at once).
using JobRunner = std::function<std::string(const std::string&)>;

/// Processes that share independent jobs: one leader (it runs the command and prints) and
/// followers that run the jobs it hands out. Every job runs exactly once, in some process, on
/// `threads` threads there; a job's text says everything it needs beyond what every process
/// knows from the same command line.
class JobSharing {
public:
    virtual ~JobSharing() = default;
    /// Whether this process leads (runs the command, prints); followers only `serve`.
    virtual bool leader() const = 0;
    /// How many processes share the jobs (the leader included).
    virtual unsigned processes() const = 0;
    /// Leader: runs every job once (here or in a follower) and returns the results in the
    /// order of `jobs`.
    virtual std::vector<std::string> share(const std::vector<std::string>& jobs, unsigned threads, const JobRunner& run) = 0;
    /// Follower: runs the jobs the leader shares, with `run`, until the leader's run ends.
    virtual void serve(unsigned threads, const JobRunner& run) = 0;
};

}  // namespace collsched
