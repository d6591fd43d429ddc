// `collsched mpirun TABLE|FILE.sched [-D k=v]... [--bytes B] [--ranks N] [--repeat R] [--json]`:
// executes a table's endpoint sends on real MPI ranks. The command writes the table's per-rank
// JSON to a temporary file and starts one collsched-rank per processor through OpenMPI's
// `mpirun --oversubscribe` (as root also with --allow-run-as-root); the ranks run the steps
// (runtime/mpi_plan.hpp has the rule), check every byte and report times, which are printed
// here unchanged. No MPI header is included here: the MPI code lives in collsched-rank alone.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/io/export_ranks.hpp"
#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/input.hpp"
#include "support/budget.hpp"

namespace collsched::tools {

namespace {

struct MpirunArgs {
    std::string input;
    std::vector<std::string> defines;
    std::uint64_t bytes = 1024;
    std::uint32_t ranks = 0;
    int repeat = 3;
    int timeout = 300;
    bool json = false;
    std::string dtype = "int64";
    std::string mpirun = "mpirun";
    std::vector<std::string> mpi_args;
};

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string find_in_path(const std::string& name) {
    if (name.find('/') != std::string::npos) return executable(name) ? name : "";
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    std::size_t b = 0;
    while (b <= p.size()) {
        std::size_t e = p.find(':', b);
        if (e == std::string::npos) e = p.size();
        std::string dir = p.substr(b, e - b);
        if (dir.empty()) dir = ".";
        std::string cand = fmt::format("{}/{}", dir, name);
        if (executable(cand)) return cand;
        b = e + 1;
    }
    return "";
}

/// collsched-rank: $COLLSCHED_RANK_PROGRAM, else next to this executable, else on the PATH.
std::string rank_program() {
    if (const char* env = std::getenv("COLLSCHED_RANK_PROGRAM"); env && *env) {
        if (!executable(env)) throw InputError(fmt::format("COLLSCHED_RANK_PROGRAM={} is not an executable", env));
        return env;
    }
    std::vector<char> self(4096);
    ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
    if (n > 0) {
        std::string dir(self.data(), static_cast<std::size_t>(n));
        dir = dir.substr(0, dir.rfind('/'));
        std::string cand = fmt::format("{}/collsched-rank", dir);
        if (executable(cand)) return cand;
    }
    std::string p = find_in_path("collsched-rank");
    if (p.empty())
        throw InputError("collsched-rank (the MPI rank program) was not found next to collsched or on the PATH; it is built "
                         "with collsched when MPI is installed (Debian: openmpi-bin libopenmpi-dev)");
    return p;
}

/// A temporary file holding the per-rank JSON, removed when the run is over.
class PlanFile {
public:
    explicit PlanFile(const std::string& text) {
        const char* dir = std::getenv("TMPDIR");
        path_ = fmt::format("{}/collsched-mpirun-XXXXXX.json", dir && *dir ? dir : "/tmp");
        int fd = ::mkstemps(path_.data(), 5);
        if (fd < 0) throw InputError(fmt::format("cannot create a temporary file for the ranks: {}", std::strerror(errno)));
        ::fchmod(fd, 0644);
        std::size_t off = 0;
        while (off < text.size()) {
            ssize_t w = ::write(fd, text.data() + off, text.size() - off);
            if (w <= 0) {
                ::close(fd);
                ::unlink(path_.c_str());
                throw InputError(fmt::format("{}: write failed (disk full?)", path_));
            }
            off += static_cast<std::size_t>(w);
        }
        ::close(fd);
        result_ = path_ + ".rc";
    }
    ~PlanFile() {
        ::unlink(path_.c_str());
        ::unlink(result_.c_str());
    }
    PlanFile(const PlanFile&) = delete;
    PlanFile& operator=(const PlanFile&) = delete;
    const std::string& path() const { return path_; }
    /// Where rank 0 writes its exit code.
    const std::string& result() const { return result_; }
    /// The code rank 0 wrote, or -1 when it wrote none.
    int read_result() const {
        std::FILE* f = std::fopen(result_.c_str(), "r");
        if (!f) return -1;
        int code = -1;
        if (std::fscanf(f, "%d", &code) != 1) code = -1;
        std::fclose(f);
        return code;
    }

private:
    std::string path_, result_;
};

int spawn(const std::vector<std::string>& argv) {
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = ::fork();
    if (pid < 0) throw InputError(fmt::format("cannot start {}: {}", argv[0], std::strerror(errno)));
    if (pid == 0) {
        ::execv(cargv[0], cargv.data());
        std::fprintf(stderr, "collsched: error: cannot run %s: %s\n", cargv[0], std::strerror(errno));
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// The resident size of one rank before its buffers: the program, OpenMPI's libraries and
/// its shared-memory transport. Measured (ps, resident set) on the 2-core development machine:
/// 16.4 MB a rank for tests/data/ring8_allgather.json at --bytes 1024; 256 ranks on ring:256
/// passed 4 GiB together with buffers of a few KiB each (issue 60).
constexpr std::uint64_t rank_base_bytes = std::uint64_t{16} << 20;

/// The memory the ranks of one run would allocate together, estimated from the table before
/// anything starts (collsched-rank, runtime/mpi_rank.cpp): each rank keeps every message it
/// starts with or receives (B/C bytes each), a receive and a send buffer for each message of its
/// busiest step, C chunk buffers for reductions, and the MPI collective's send and receive
/// buffers (P * B bytes each); besides its buffers every rank is a process of about
/// `rank_base_bytes`. All ranks run on this machine (--oversubscribe).
std::uint64_t ranks_memory(const SendTable& t, std::uint64_t datum_bytes) {
    const std::uint32_t P = t.topology->processors();
    const std::uint64_t C = t.collective.chunks, msg = datum_bytes / C;
    std::vector<std::uint64_t> held(P, 0), busiest(P, 0);
    const Messages ms = t.messages();
    for (std::uint64_t m = 0; m < ms.base_size(); ++m)
        if (t.collective.initial(ms, MessageId{static_cast<std::uint32_t>(m)})) ++held[idx(ms.origin(MessageId{static_cast<std::uint32_t>(m)}))];
    const EndpointView view = endpoint_view(t);
    std::map<std::pair<Step, std::uint32_t>, std::uint64_t> per_step;  // (step, rank) -> messages sent or received
    for (const EndpointTransfer& e : view.transfers) {
        ++held[idx(e.dst)];
        const std::uint64_t a = ++per_step[{e.sent, idx(e.src)}], b = ++per_step[{e.arrived, idx(e.dst)}];
        busiest[idx(e.src)] = std::max(busiest[idx(e.src)], a);
        busiest[idx(e.dst)] = std::max(busiest[idx(e.dst)], b);
    }
    std::uint64_t total = mul_sat(P, rank_base_bytes);
    for (std::uint32_t r = 0; r < P; ++r) {
        const std::uint64_t messages = add_sat(add_sat(held[r], mul_sat(2, busiest[r])), mul_sat(2, C));
        total = add_sat(total, add_sat(mul_sat(messages, msg), mul_sat(mul_sat(2, P), datum_bytes)));
    }
    return total;
}

}  // namespace

void add_mpirun_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<MpirunArgs>();
    auto* cmd = app.add_subcommand(
        "mpirun",
        "Execute a table's endpoint sends on real MPI ranks, one rank per processor, started through OpenMPI's mpirun with "
        "--oversubscribe. In step s every rank posts non-blocking sends of the messages it sends in step s and receives of "
        "those sent to it in step s, waits, and meets the others at a barrier. Payloads are B bytes per message, byte i of "
        "message m a fixed function of (m, i); at the end every rank checks every byte it must hold. Prints the wall time of "
        "each step (slowest rank, best of --repeat runs) and in total, and the time of the MPI collective that does the "
        "same job (MPI_Alltoall, MPI_Allgather, MPI_Bcast, MPI_Scatter, MPI_Gather) on the same ranks.\n"
        "Exit code: 0 every byte checked, 1 a byte check failed, 2 bad input, MPI missing or mpirun failed.");
    cmd->add_option("FILE", args->input, "Table file (.json, .csv, per-rank .json) or schedule (.sched)")->required();
    cmd->add_option("-D", args->defines, "Override a schedule parameter: -D n=16 (repeatable; .sched files only)");
    cmd->add_option("--bytes", args->bytes, "Payload bytes per datum (default 1024); with C chunks a message (chunk) carries B/C")->check(CLI::Range(1, 1 << 30));
    cmd->add_option("--ranks", args->ranks, "Number of MPI ranks; must equal the table's processors (the default)")
        ->check(count_option(1, 65534));
    cmd->add_option("--repeat", args->repeat, "Runs of the schedule and of the MPI collective; the best time is shown (default 3)")
        ->check(CLI::Range(1, 1000000));
    cmd->add_option("--timeout", args->timeout, "Seconds before mpirun gives up on a hung run (default 300)")->check(CLI::Range(1, 86400));
    cmd->add_option("--mpirun", args->mpirun, "The mpirun to use (default: mpirun on the PATH)");
    cmd->add_option("--mpi-arg", args->mpi_args, "An extra argument for mpirun, e.g. --mpi-arg=--bind-to --mpi-arg=none (repeatable)");
    cmd->add_option("--dtype", args->dtype,
                    "Reductions: the element type of the buffers, int64 or double (multiples of 1/8, so every order of adding is exact; "
                    "default int64)")
        ->check(CLI::IsMember({"int64", "double"}));
    cmd->add_flag("--json", args->json,
                  "Print one JSON object (ranks, steps, step_seconds, total_seconds, baseline, byte_check, ...) instead of text");
    cmd->callback([&ctx, args] {
        SendTable t = load_input(args->input, args->defines);
        const bool partials = uses_partials(t);
        if (!partials && (t.has_composites() || t.collective.combines()))
            throw InputError("the MPI runner moves base messages and partials of reductions only; combined values (a(i..j)), "
                             "bundles and prefix are checked by verify and simulate");
        if (partials && !t.collective.row().has_partials())
            throw InputError("the MPI runner performs allreduce, reduce_scatter, scan and reduce(r); this table's collective is " +
                             t.collective.to_string());
        const std::uint32_t P = t.topology->processors();
        // With C chunks the datum of --bytes B is split: every message (a chunk) carries B/C bytes,
        // and the MPI collective it is compared with moves B bytes per datum (docs/exports.md).
        const std::uint32_t C = t.collective.chunks;
        if (args->bytes % C != 0)
            throw InputError(fmt::format("--bytes {}: the collective splits every datum into {} chunks, so the bytes must be a "
                                         "multiple of {} (a chunk is B/C bytes)",
                                         args->bytes, C, C));
        if (args->ranks != 0 && args->ranks != P)
            throw InputError(fmt::format("--ranks {}: the table has {} processors and runs with one MPI rank per processor", args->ranks, P));
        // Refused before a rank starts: the machine would kill the run instead (--bytes 2^30 on 8 ranks).
        MemoryBudget::standard().check(ranks_memory(t, args->bytes),
                                       fmt::format("mpirun with --bytes {} on {} ranks (each a process of about {} besides its buffers)",
                                                   args->bytes, P, format_bytes(rank_base_bytes)));
        std::string mpirun = find_in_path(args->mpirun);
        if (mpirun.empty())
            throw InputError(fmt::format("'{}' was not found; install OpenMPI (Debian: openmpi-bin libopenmpi-dev) or name it with --mpirun",
                                         args->mpirun));
        std::string rank = rank_program();
        PlanFile plan(table_to_ranks(t));  // also refuses tables whose routers send what they never received
        std::vector<std::string> argv = {mpirun};
        if (::geteuid() == 0) {
            argv.push_back("--allow-run-as-root");
            ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
            ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        }
        for (const char* a : {"--oversubscribe", "--timeout"}) argv.push_back(a);
        argv.push_back(std::to_string(args->timeout));
        argv.push_back("-np");
        argv.push_back(std::to_string(P));
        argv.insert(argv.end(), args->mpi_args.begin(), args->mpi_args.end());
        argv.push_back(rank);
        argv.push_back(plan.path());
        argv.push_back("--bytes");
        argv.push_back(std::to_string(args->bytes / C));
        if (C > 1) {
            argv.push_back("--datum-bytes");
            argv.push_back(std::to_string(args->bytes));
        }
        argv.push_back("--repeat");
        argv.push_back(std::to_string(args->repeat));
        if (args->json) argv.push_back("--json");
        argv.push_back("--dtype");
        argv.push_back(args->dtype);
        argv.push_back("--result");
        argv.push_back(plan.result());
        int status = spawn(argv);
        int code = plan.read_result();
        if (status == 0 && code >= 0 && code <= 2) {
            ctx.exit_code = code;
            return;
        }
        throw InputError(fmt::format("mpirun failed (exit status {}); its messages are above", status));
    });
}

}  // namespace collsched::tools
