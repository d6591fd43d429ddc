// MPI ranks sharing solver calls (cli/mpi_share.hpp). Messages between rank 0 and each
// follower, in order: a batch (tag `batch`, a JSON array of the call texts), its answers (tag
// `answers`, a JSON array in the same order), ... and at the end of the run one `end` message.
// Only the main thread calls MPI (MPI_THREAD_FUNNELED): the threads run the calls.
#include "cli/mpi_share.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/assert.hpp"

namespace collsched::tools {

namespace {

enum Tag : int { batch = 1, answers = 2, end = 3 };

void send(const std::string& text, int to, Tag tag) {
    MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

/// The next message from `from` (any tag): its text and tag. Waits by polling with 1 ms sleeps:
/// Open MPI's blocking probe spins at full speed, and a waiting rank (rank 0 for its followers'
/// answers, a follower between batches) would take a core from the ranks that solve (measured on
/// the 2-core machine: mpirun -n 2 took 117 s where one process took 93 s).
std::pair<std::string, int> receive(int from) {
    MPI_Status st;
    for (int ready = 0;;) {
        MPI_Iprobe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &ready, &st);
        if (ready) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    std::string text(static_cast<std::size_t>(n), '\0');
    MPI_Recv(text.data(), n, MPI_CHAR, from, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return {std::move(text), st.MPI_TAG};
}

/// Runs `jobs` here on `threads` threads.
std::vector<std::string> run_here(const std::vector<std::string>& jobs, unsigned threads, const JobRunner& run) {
    std::vector<std::string> out(jobs.size());
    run_indexed(jobs.size(), threads, [&](std::size_t i) {
        out[i] = run(jobs[i]);
        return true;
    });
    return out;
}

int environment_size() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* v = std::getenv(name)) return std::atoi(v);
    return 0;
}

}  // namespace

std::shared_ptr<MpiRanks> MpiRanks::from_environment() {
    if (environment_size() <= 1) return nullptr;
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != 0) {
        const bool quiet = std::freopen("/dev/null", "w", stdout) != nullptr && std::freopen("/dev/null", "w", stderr) != nullptr;
        COLLSCHED_ASSERT_MSG(quiet, "a follower rank could not send its output to /dev/null");
    }
    return std::make_shared<MpiRanks>(rank, size);
}

std::vector<std::string> MpiRanks::share(const std::vector<std::string>& jobs, unsigned threads, const JobRunner& run) {
    COLLSCHED_ASSERT(leader());
    const auto K = static_cast<std::size_t>(size_);
    std::vector<std::vector<std::string>> mine(K);
    for (std::size_t j = 0; j < jobs.size(); ++j) mine[j % K].push_back(jobs[j]);
    for (std::size_t r = 1; r < K; ++r)
        if (!mine[r].empty()) send(nlohmann::json(mine[r]).dump(), static_cast<int>(r), batch);
    std::vector<std::vector<std::string>> got(K);
    got[0] = run_here(mine[0], threads, run);
    for (std::size_t r = 1; r < K; ++r) {
        if (mine[r].empty()) continue;
        auto [text, tag] = receive(static_cast<int>(r));
        COLLSCHED_ASSERT(tag == answers);
        got[r] = nlohmann::json::parse(text).get<std::vector<std::string>>();
        COLLSCHED_ASSERT(got[r].size() == mine[r].size());
    }
    std::vector<std::string> out(jobs.size());
    for (std::size_t j = 0; j < jobs.size(); ++j) out[j] = std::move(got[j % K][j / K]);
    return out;
}

void MpiRanks::serve(unsigned threads, const JobRunner& run) {
    COLLSCHED_ASSERT(!leader() && !stopped_);
    for (;;) {
        auto [text, tag] = receive(0);
        if (tag == end) {
            stopped_ = true;
            return;
        }
        COLLSCHED_ASSERT(tag == batch);
        send(nlohmann::json(run_here(nlohmann::json::parse(text).get<std::vector<std::string>>(), threads, run)).dump(), 0, answers);
    }
}

int MpiRanks::finish(int code) {
    if (leader())
        for (int r = 1; r < size_; ++r) send({}, r, end);
    else if (!stopped_)
        while (receive(0).second != end) {
        }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return code;
}

}  // namespace collsched::tools
