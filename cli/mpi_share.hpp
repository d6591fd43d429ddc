/** \file
 * MPI ranks as a JobSharing (support/parallel.hpp): `mpirun -n K collsched pareto ...` shares the
 * solver calls of the walk among K processes. Rank 0 leads: it runs the command, hands every
 * batch's calls out (call j to rank j mod K, its own share on its threads), gathers the answers
 * as text and prints; the other ranks answer calls until rank 0's run ends, print nothing (their
 * standard output and error go to /dev/null) and end with rank 0's exit code. Only the
 * executable links MPI (not collsched_tools, which the Python module links), and MPI is
 * initialized only when mpirun started the process with more than one rank
 * (OMPI_COMM_WORLD_SIZE, or PMI_SIZE for MPICH), so a plain run never touches it.
 * docs/synthesis.md, "Threads and MPI ranks".
 */
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support/parallel.hpp"

namespace collsched::tools {

class MpiRanks final : public JobSharing {
public:
    /// The ranks of this run, MPI initialized, when mpirun started it with more than one rank;
    /// null otherwise (MPI untouched). A follower's standard output and error go to /dev/null.
    static std::shared_ptr<MpiRanks> from_environment();
    MpiRanks(int rank, int size) : rank_(rank), size_(size) {}
    MpiRanks(const MpiRanks&) = delete;
    MpiRanks& operator=(const MpiRanks&) = delete;

    bool leader() const override { return rank_ == 0; }
    unsigned processes() const override { return static_cast<unsigned>(size_); }
    std::vector<std::string> share(const std::vector<std::string>& jobs, unsigned threads, const JobRunner& run) override;
    void serve(unsigned threads, const JobRunner& run) override;
    /// The end of the run on every rank, whatever the command did: the leader tells the
    /// followers (serving or not) that it is over; every rank returns the leader's exit code
    /// `code`; MPI is finalized.
    int finish(int code);

private:
    int rank_;
    int size_;
    bool stopped_ = false;  ///< a follower got the leader's end
};

}  // namespace collsched::tools
