// collsched-rank: the rank program that `collsched mpirun` starts on every MPI rank. It reads
// the per-rank JSON written for the run, executes its rank's endpoint sends step by step
// (non-blocking sends and receives of each message's bytes, then a barrier), checks every byte
// it must hold at the end, and times the steps; then it times the matching MPI collective
// (MPI_Alltoall, MPI_Allgather, ...) on the same ranks with the same payload. Rank 0 prints the
// report. The execution rule is in runtime/mpi_plan.hpp. This is the only file that includes
// <mpi.h>.
//
// Usage: collsched-rank PLAN.json [--bytes B] [--repeat R] [--dtype int64|double] [--json] [--result FILE]
// Reductions (allreduce, reduce_scatter, scan, reduce): every rank holds real buffers of
// --dtype, performs the schedule's combining (MPI_SUM semantics) and compares every element of
// its goal buffers with MPI_Allreduce / MPI_Reduce_scatter_block / MPI_Scan / MPI_Reduce run
// on the same input.
// Exit code: 0 every byte checked, 1 a byte check failed, 2 bad input or usage. With --result,
// rank 0 writes that code to FILE and every rank exits 0, so mpirun does not add its own report
// of failed processes to ours.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <type_traits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "runtime/mpi_plan.hpp"

namespace {

using namespace collsched;
using namespace collsched::mpi;

struct Options {
    std::string plan;
    std::uint64_t bytes = 1024;
    std::uint64_t datum_bytes = 0;  ///< the MPI collective's bytes per datum (0: `bytes`); with C chunks, C * bytes
    int repeat = 3;
    bool json = false;
    std::string result;  ///< where rank 0 writes the exit code, if given
    std::string dtype = "int64";  ///< reductions: int64 or double
};

std::vector<std::uint8_t> payload(std::uint32_t m, std::uint64_t bytes) {
    std::vector<std::uint8_t> b(bytes);
    for (std::uint64_t i = 0; i < bytes; ++i) b[i] = payload_byte(m, i);
    return b;
}

int tag_of(std::uint32_t m) { return static_cast<int>(m % 32768); }

struct RunResult {
    std::vector<double> step_seconds;  ///< this rank's view of each step 1..T
    double total = 0;
    std::uint64_t errors = 0;           ///< byte-check failures on this rank
    std::uint64_t messages_checked = 0;
    std::uint64_t elements_checked = 0;  ///< reductions: buffer elements compared with MPI's
    std::vector<std::string> first_errors;
};

/// One execution of the schedule; the byte check runs after the last one.
RunResult run_schedule(const Plan& plan, const RankPlan& me, int rank, std::uint64_t bytes, bool check) {
    RunResult res;
    res.step_seconds.assign(plan.steps, 0.0);
    std::unordered_map<std::uint32_t, std::vector<std::uint8_t>> held;
    for (std::uint32_t m : me.initial) held.emplace(m, payload(m, bytes));
    auto name = [&](std::uint32_t m) { return m < plan.message_names.size() ? plan.message_names[m] : fmt::format("#{}", m); };
    auto error = [&](std::string text) {
        ++res.errors;
        if (res.first_errors.size() < 5) res.first_errors.push_back(fmt::format("rank {}: {}", rank, text));
    };
    std::vector<std::uint8_t> missing(bytes, 0);
    std::vector<MPI_Request> reqs;
    std::vector<std::vector<std::uint8_t>> inbox;
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    double prev = start;
    std::size_t k = 0;
    for (Step s = 1; s <= plan.steps; ++s) {
        reqs.clear();
        inbox.clear();
        const RankStep* rs = k < me.steps.size() && me.steps[k].step == s ? &me.steps[k++] : nullptr;
        if (rs) {
            inbox.resize(rs->recvs.size(), std::vector<std::uint8_t>(bytes));
            for (std::size_t i = 0; i < rs->recvs.size(); ++i) {
                reqs.emplace_back();
                MPI_Irecv(inbox[i].data(), static_cast<int>(bytes), MPI_BYTE, static_cast<int>(rs->recvs[i].peer),
                          tag_of(rs->recvs[i].message), MPI_COMM_WORLD, &reqs.back());
            }
            for (const PeerMessage& x : rs->sends) {
                auto h = held.find(x.message);
                const std::uint8_t* data = missing.data();
                if (h != held.end()) data = h->second.data();
                else error(fmt::format("step {}: must send {} to rank {} but does not hold it", s, name(x.message), x.peer));
                reqs.emplace_back();
                MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(x.peer), tag_of(x.message), MPI_COMM_WORLD,
                          &reqs.back());
            }
            MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
            for (std::size_t i = 0; i < rs->recvs.size(); ++i) {
                std::uint32_t m = rs->recvs[i].message;
                auto h = held.find(m);
                if (h == held.end()) held.emplace(m, std::move(inbox[i]));
                else if (check && h->second != inbox[i])
                    error(fmt::format("step {}: a second copy of {} from rank {} differs from the first", s, name(m), rs->recvs[i].peer));
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double now = MPI_Wtime();
        res.step_seconds[s - 1] = now - prev;
        prev = now;
    }
    res.total = prev - start;
    if (check) {
        for (std::uint32_t m : me.final) {
            ++res.messages_checked;
            auto h = held.find(m);
            if (h == held.end()) {
                error(fmt::format("does not hold {} at the end", name(m)));
                continue;
            }
            for (std::uint64_t i = 0; i < bytes; ++i) {
                if (h->second[i] != payload_byte(m, i)) {
                    error(fmt::format("byte {} of {} is {:#04x}, expected {:#04x}", i, name(m), h->second[i], payload_byte(m, i)));
                    break;
                }
            }
        }
    }
    return res;
}

// ---- reductions: real buffers, the buffer rule, and the MPI reduction on the same input ----

/// Element i of rank p's contribution to chunk c. Integers: spread over +-5e8, so sums of up to
/// 65534 ranks stay exact in int64. Doubles: multiples of 1/8 in [-4, 4), so every sum of up to
/// 2^40 of them is exact and any order of combining (the schedule's, MPI's) gives the same bits.
template <class T>
T contribution(std::uint32_t p, std::uint32_t c, std::uint64_t i) {
    if constexpr (std::is_same_v<T, double>) return static_cast<double>((p * 31 + c * 17 + i * 7) % 64) / 8.0 - 4.0;
    else return static_cast<T>((std::uint64_t{p + 1} * 1000003 + std::uint64_t{c} * 7919 + i * 31) % 1000000007) - 500000000;
}

template <class T>
MPI_Datatype mpi_type() {
    if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
    else return MPI_INT64_T;
}

struct ReduceRun {
    RunResult res;
    std::vector<std::vector<std::uint32_t>> sets;  ///< per chunk: the contributor set of the buffer at the end
};

/// One execution of a reduction schedule with buffers of T: per chunk one buffer of `elems`
/// elements and its contributor set. A send of a partial sends the buffer (the rank checks that
/// its set is the partial's); an arrival, applied at the end of the table step in which it
/// arrives, is added into the buffer when its set is disjoint from the buffer's, copies over it
/// when it covers it, and is an error otherwise (docs/semantics.md, "Reductions").
template <class T>
ReduceRun run_reduction(const Plan& plan, const RankPlan& me, int rank, std::uint64_t elems, std::vector<std::vector<T>>& buf) {
    ReduceRun out;
    RunResult& res = out.res;
    res.step_seconds.assign(plan.steps, 0.0);
    const std::uint32_t C = plan.chunks;
    buf.assign(C, std::vector<T>(elems));
    out.sets.assign(C, {static_cast<std::uint32_t>(rank)});
    for (std::uint32_t c = 0; c < C; ++c)
        for (std::uint64_t i = 0; i < elems; ++i) buf[c][i] = contribution<T>(static_cast<std::uint32_t>(rank), c, i);
    auto name = [&](std::uint32_t m) { return m < plan.message_names.size() ? plan.message_names[m] : fmt::format("#{}", m); };
    auto error = [&](std::string text) {
        ++res.errors;
        if (res.first_errors.size() < 5) res.first_errors.push_back(fmt::format("rank {}: {}", rank, text));
    };
    struct Pending {
        Step arrives;
        std::uint32_t peer, message;
        std::vector<T> data;
    };
    std::vector<Pending> pending;
    std::vector<MPI_Request> reqs;
    std::vector<std::vector<T>> inbox, outbox;
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    double prev = start;
    std::size_t k = 0;
    const int n = static_cast<int>(elems);
    for (Step s = 1; s <= plan.steps; ++s) {
        reqs.clear();
        inbox.clear();
        outbox.clear();
        const RankStep* rs = k < me.steps.size() && me.steps[k].step == s ? &me.steps[k++] : nullptr;
        if (rs) {
            inbox.resize(rs->recvs.size(), std::vector<T>(elems));
            for (std::size_t i = 0; i < rs->recvs.size(); ++i) {
                reqs.emplace_back();
                MPI_Irecv(inbox[i].data(), n, mpi_type<T>(), static_cast<int>(rs->recvs[i].peer), tag_of(rs->recvs[i].message),
                          MPI_COMM_WORLD, &reqs.back());
            }
            outbox.reserve(rs->sends.size());
            for (const PeerMessage& x : rs->sends) {
                const PlanPartial* pp = plan.partial(x.message);
                if (!pp || pp->chunk >= C) {
                    error(fmt::format("step {}: {} is not a partial of this reduction", s, name(x.message)));
                    outbox.emplace_back(elems, T{});
                } else {
                    if (out.sets[pp->chunk] != pp->sources)
                        error(fmt::format("step {}: must send {} to rank {} but its buffer of chunk {} holds another partial", s,
                                          name(x.message), x.peer, pp->chunk));
                    outbox.push_back(buf[pp->chunk]);  // a copy: the buffer may change before the send completes
                }
                reqs.emplace_back();
                MPI_Isend(outbox.back().data(), n, mpi_type<T>(), static_cast<int>(x.peer), tag_of(x.message), MPI_COMM_WORLD, &reqs.back());
            }
            MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
            for (std::size_t i = 0; i < rs->recvs.size(); ++i)
                pending.push_back({rs->recv_arrives.empty() ? s : rs->recv_arrives[i], rs->recvs[i].peer, rs->recvs[i].message,
                                   std::move(inbox[i])});
        }
        // arrivals of table step s, in (peer, message) order
        std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.arrives < b.arrives; });
        std::size_t done = 0;
        for (; done < pending.size() && pending[done].arrives <= s; ++done) {
            Pending& a = pending[done];
            const PlanPartial* pp = plan.partial(a.message);
            if (!pp || pp->chunk >= C) continue;
            auto& have = out.sets[pp->chunk];
            std::vector<std::uint32_t> common;
            std::set_intersection(have.begin(), have.end(), pp->sources.begin(), pp->sources.end(), std::back_inserter(common));
            if (common.empty()) {
                for (std::uint64_t i = 0; i < elems; ++i) buf[pp->chunk][i] += a.data[i];
                std::vector<std::uint32_t> u;
                std::set_union(have.begin(), have.end(), pp->sources.begin(), pp->sources.end(), std::back_inserter(u));
                have = std::move(u);
            } else if (common.size() == have.size()) {
                buf[pp->chunk] = std::move(a.data);
                have = pp->sources;
            } else {
                error(fmt::format("step {}: receives {} from rank {}, which shares a contribution with its buffer of chunk {} "
                                  "without covering it (counted twice)",
                                  a.arrives, name(a.message), a.peer, pp->chunk));
            }
        }
        pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(done));
        MPI_Barrier(MPI_COMM_WORLD);
        double now = MPI_Wtime();
        res.step_seconds[s - 1] = now - prev;
        prev = now;
    }
    res.total = prev - start;
    return out;
}

/// The MPI reduction (MPI_SUM) of every rank's whole buffer (C chunks of `elems`); returns the
/// time and fills `result` with what MPI leaves at this rank: the whole buffer (MPI_Allreduce,
/// MPI_Scan, MPI_Reduce at the root), this rank's block of C/P chunks (MPI_Reduce_scatter_block).
template <class T>
double mpi_reduction(const Plan& plan, int rank, int size, std::uint64_t elems, std::vector<T>& result) {
    const std::string name = reduction_baseline(plan.collective);
    const std::uint32_t C = plan.chunks;
    std::vector<T> send(C * elems);
    for (std::uint32_t c = 0; c < C; ++c)
        for (std::uint64_t i = 0; i < elems; ++i) send[c * elems + i] = contribution<T>(static_cast<std::uint32_t>(rank), c, i);
    const int all = static_cast<int>(C * elems);
    result.assign(C * elems, T{});
    int root = 0;
    if (auto c = plan.collective.find(':'); c != std::string::npos) root = std::atoi(plan.collective.c_str() + c + 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (name == "MPI_Allreduce") MPI_Allreduce(send.data(), result.data(), all, mpi_type<T>(), MPI_SUM, MPI_COMM_WORLD);
    else if (name == "MPI_Scan") MPI_Scan(send.data(), result.data(), all, mpi_type<T>(), MPI_SUM, MPI_COMM_WORLD);
    else if (name == "MPI_Reduce") MPI_Reduce(send.data(), result.data(), all, mpi_type<T>(), MPI_SUM, root, MPI_COMM_WORLD);
    else if (name == "MPI_Reduce_scatter_block")
        MPI_Reduce_scatter_block(send.data(), result.data(), all / size, mpi_type<T>(), MPI_SUM, MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

/// Compares every element of every goal chunk of this rank with what MPI computed.
template <class T>
void check_reduction(const Plan& plan, const RankPlan& me, int rank, int size, std::uint64_t elems, const ReduceRun& run,
                     const std::vector<std::vector<T>>& buf, const std::vector<T>& mpi, RunResult& res) {
    const std::uint32_t C = plan.chunks;
    const bool scattered = reduction_baseline(plan.collective) == "MPI_Reduce_scatter_block";
    auto error = [&](std::string text) {
        ++res.errors;
        if (res.first_errors.size() < 5) res.first_errors.push_back(fmt::format("rank {}: {}", rank, text));
    };
    for (std::uint32_t m : me.final) {
        const PlanPartial* pp = plan.partial(m);
        ++res.messages_checked;
        if (!pp || pp->chunk >= C) {
            error(fmt::format("goal {} is not a partial", m));
            continue;
        }
        const std::uint32_t c = pp->chunk;
        if (run.sets[c] != pp->sources) {
            error(fmt::format("its buffer of chunk {} does not end with {}", c, plan.message_names[m]));
            continue;
        }
        const std::uint64_t base = scattered ? (c - static_cast<std::uint64_t>(rank) * (C / size)) * elems : std::uint64_t{c} * elems;
        for (std::uint64_t i = 0; i < elems; ++i)
            if (buf[c][i] != mpi[base + i]) {
                error(fmt::format("element {} of chunk {} is {}, {} computes {}", i, c, buf[c][i], reduction_baseline(plan.collective),
                                  mpi[base + i]));
                break;
            }
        res.elements_checked += elems;
    }
}

/// Runs the MPI collective with the same job once; returns this rank's time, or -1 if none.
double run_baseline(const Plan& plan, int rank, int size, std::uint64_t bytes) {
    const std::string name = baseline_name(plan.collective);
    if (name.empty()) return -1;
    int root = 0;
    if (auto c = plan.collective.find(':'); c != std::string::npos) root = std::atoi(plan.collective.c_str() + c + 1);
    const int n = static_cast<int>(bytes);
    std::vector<std::uint8_t> send(bytes * size, static_cast<std::uint8_t>(rank)), recv(bytes * size, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (name == "MPI_Alltoall") MPI_Alltoall(send.data(), n, MPI_BYTE, recv.data(), n, MPI_BYTE, MPI_COMM_WORLD);
    else if (name == "MPI_Allgather") MPI_Allgather(send.data(), n, MPI_BYTE, recv.data(), n, MPI_BYTE, MPI_COMM_WORLD);
    else if (name == "MPI_Bcast") MPI_Bcast(send.data(), n, MPI_BYTE, root, MPI_COMM_WORLD);
    else if (name == "MPI_Scatter") MPI_Scatter(send.data(), n, MPI_BYTE, recv.data(), n, MPI_BYTE, root, MPI_COMM_WORLD);
    else if (name == "MPI_Gather") MPI_Gather(send.data(), n, MPI_BYTE, recv.data(), n, MPI_BYTE, root, MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

bool parse_args(int argc, char** argv, Options& o, std::string& err) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char* what) -> const char* {
            if (i + 1 >= argc) {
                err = fmt::format("{} needs {}", a, what);
                return nullptr;
            }
            return argv[++i];
        };
        if (a == "--bytes") {
            const char* v = value("a number of bytes");
            if (!v) return false;
            o.bytes = std::strtoull(v, nullptr, 10);
            if (o.bytes < 1 || o.bytes > (1u << 30)) return err = "--bytes must be 1..2^30", false;
        } else if (a == "--datum-bytes") {
            const char* v = value("a number of bytes");
            if (!v) return false;
            o.datum_bytes = std::strtoull(v, nullptr, 10);
            if (o.datum_bytes < 1 || o.datum_bytes > (1u << 30)) return err = "--datum-bytes must be 1..2^30", false;
        } else if (a == "--repeat") {
            const char* v = value("a count");
            if (!v) return false;
            o.repeat = std::atoi(v);
            if (o.repeat < 1 || o.repeat > 1000000) return err = "--repeat must be 1..10^6", false;
        } else if (a == "--dtype") {
            const char* v = value("int64 or double");
            if (!v) return false;
            o.dtype = v;
            if (o.dtype != "int64" && o.dtype != "double") return err = "--dtype must be int64 or double", false;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--result") {
            const char* v = value("a file");
            if (!v) return false;
            o.result = v;
        } else if (!a.empty() && a[0] == '-') {
            return err = fmt::format("unknown option {}", a), false;
        } else if (o.plan.empty()) {
            o.plan = a;
        } else {
            return err = fmt::format("unexpected argument {}", a), false;
        }
    }
    if (o.plan.empty()) return err = "usage: collsched-rank PLAN.json [--bytes B] [--repeat R] [--json] [--result FILE]", false;
    return true;
}

/// The parts of rank 0's report both runs share (the plain replay and the reduction): sends per
/// step from the plan, the JSON fields of the run, the per-step table, the error lines.
std::vector<std::uint64_t> step_sends(const Plan& plan) {
    std::vector<std::uint64_t> sends(plan.steps, 0);
    for (const RankPlan& rp : plan.ranks)
        for (const RankStep& rs : rp.steps) sends[rs.step - 1] += rs.sends.size();
    return sends;
}

nlohmann::json run_json(const Plan& plan, int size, const Options& opt, const std::vector<double>& step_seconds,
                        const std::vector<std::uint64_t>& sends, double total_seconds) {
    nlohmann::json j;
    j["topology"] = plan.topology;
    j["collective"] = plan.collective;
    j["ranks"] = size;
    j["steps"] = plan.steps;
    j["endpoint_transfers"] = plan.endpoint_transfers;
    j["repeat"] = opt.repeat;
    j["step_seconds"] = step_seconds;
    j["step_sends"] = sends;
    j["total_seconds"] = total_seconds;
    return j;
}

std::vector<std::string> error_lines(const std::string& errors) {
    std::vector<std::string> lines;
    std::istringstream es(errors);
    for (std::string l; std::getline(es, l);) lines.push_back(l);
    return lines;
}

std::string step_table(const Plan& plan, const std::vector<double>& step_seconds, const std::vector<std::uint64_t>& sends,
                       std::uint64_t bytes_per_send, double total_seconds) {
    std::string out = fmt::format("{:>6} {:>12} {:>8} {:>12}\n", "step", "time (us)", "sends", "bytes");
    for (Step s = 0; s < plan.steps; ++s)
        out += fmt::format("{:>6} {:>12.1f} {:>8} {:>12}\n", s + 1, step_seconds[s] * 1e6, sends[s], sends[s] * bytes_per_send);
    out += fmt::format("table schedule: {:.3f} ms in total (steps separated by barriers)\n", total_seconds * 1e3);
    return out;
}

std::string gather_errors(const std::vector<std::string>& mine, int rank, int size) {
    std::string text;
    for (const auto& e : mine) text += e + "\n";
    int len = static_cast<int>(text.size());
    std::vector<int> lens(size), displs(size);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (rank == 0) {
        int total = 0;
        for (int i = 0; i < size; ++i) displs[i] = total, total += lens[i];
        all.resize(total);
    }
    MPI_Gatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    return all;
}

template <class T>
int reduction_main(const Plan& plan, const RankPlan& me, int rank, int size, const Options& opt) {
    const std::uint64_t elems = std::max<std::uint64_t>(1, opt.bytes / sizeof(T));
    std::vector<double> best_steps(plan.steps, std::numeric_limits<double>::infinity()), max_steps(plan.steps);
    double best_total = std::numeric_limits<double>::infinity(), best_base = std::numeric_limits<double>::infinity();
    std::vector<std::vector<T>> buf;
    ReduceRun last;
    for (int r = 0; r < opt.repeat; ++r) {
        ReduceRun run = run_reduction<T>(plan, me, rank, elems, buf);
        MPI_Allreduce(run.res.step_seconds.data(), max_steps.data(), static_cast<int>(plan.steps), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double total = 0;
        MPI_Allreduce(&run.res.total, &total, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (Step s = 0; s < plan.steps; ++s) best_steps[s] = std::min(best_steps[s], max_steps[s]);
        best_total = std::min(best_total, total);
        last = std::move(run);
    }
    std::vector<T> mpi;
    for (int r = 0; r < opt.repeat; ++r) {
        double mine = mpi_reduction<T>(plan, rank, size, elems, mpi), t = 0;
        MPI_Allreduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best_base = std::min(best_base, t);
    }
    check_reduction<T>(plan, me, rank, size, elems, last, buf, mpi, last.res);
    std::uint64_t counts[3] = {last.res.errors, last.res.messages_checked, last.res.elements_checked}, sums[3] = {0, 0, 0};
    MPI_Reduce(counts, sums, 3, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    std::string errors = gather_errors(last.res.first_errors, rank, size);
    const std::string base_name = reduction_baseline(plan.collective);
    if (rank == 0) {
        const std::vector<std::uint64_t> sends = step_sends(plan);
        const bool passed = sums[0] == 0;
        if (opt.json) {
            nlohmann::json j = run_json(plan, size, opt, best_steps, sends, best_total);
            j["chunks"] = plan.chunks;
            j["dtype"] = opt.dtype;
            j["elements_per_chunk"] = elems;
            j["baseline"] = {{"name", base_name}, {"seconds", best_base}};
            j["element_check"] = passed ? "passed" : "failed";
            j["goals_checked"] = sums[1];
            j["elements_checked"] = sums[2];
            j["errors"] = sums[0];
            j["first_errors"] = error_lines(errors);
            std::printf("%s\n", j.dump().c_str());
        } else {
            std::string out = fmt::format(
                "collsched mpirun: {} {} on {} MPI ranks: {} steps, {} chunk{} of {} {} elements, {} endpoint sends, best of {} run{}\n",
                plan.topology, plan.collective, size, plan.steps, plan.chunks, plan.chunks == 1 ? "" : "s", elems, opt.dtype,
                plan.endpoint_transfers, opt.repeat, opt.repeat == 1 ? "" : "s");
            out += step_table(plan, best_steps, sends, elems * sizeof(T), best_total);
            out += fmt::format("{}: {:.3f} ms on the same ranks with the same input (MPI_SUM)\n", base_name, best_base * 1e3);
            if (passed)
                out += fmt::format("element check: passed ({} goal buffers, {} elements identical to {})\n", sums[1], sums[2], base_name);
            else
                out += fmt::format("element check: FAILED ({} errors)\n{}", sums[0], errors);
            std::fwrite(out.data(), 1, out.size(), stdout);
        }
        std::fflush(stdout);
    }
    int code = sums[0] == 0 ? 0 : 1;
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return code;
}

int run_reduction_main(const Plan& plan, const RankPlan& me, int rank, int size, const Options& opt) {
    if (plan.chunks % static_cast<std::uint32_t>(size) != 0 && reduction_baseline(plan.collective) == "MPI_Reduce_scatter_block")
        return 2;
    return opt.dtype == "double" ? reduction_main<double>(plan, me, rank, size, opt) : reduction_main<std::int64_t>(plan, me, rank, size, opt);
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options opt;
    std::string err;
    bool args_ok = parse_args(argc, argv, opt, err);
    auto stop = [&](int code, const std::string& message) {
        if (rank == 0 && !message.empty()) std::fprintf(stderr, "collsched-rank: error: %s\n", message.c_str());
        if (rank == 0 && !opt.result.empty()) {
            if (std::FILE* f = std::fopen(opt.result.c_str(), "w")) {
                std::fprintf(f, "%d\n", code);
                std::fclose(f);
            }
        }
        MPI_Finalize();
        return opt.result.empty() ? code : 0;
    };
    if (!args_ok) return stop(2, err);
    Plan plan;
    try {
        std::ifstream in(opt.plan, std::ios::binary);
        if (!in) throw InputError(fmt::format("{}: cannot open file", opt.plan));
        std::ostringstream ss;
        ss << in.rdbuf();
        plan = read_plan(ss.str(), opt.plan);
    } catch (const InputError& e) {
        return stop(2, e.what());
    }
    if (static_cast<std::uint32_t>(size) != plan.processors)
        return stop(2, fmt::format("the table has {} processors but {} MPI ranks were started", plan.processors, size));
    const RankPlan& me = plan.ranks[rank];

    if (plan.reduction) return stop(run_reduction_main(plan, me, rank, size, opt), "");
    std::vector<double> best_steps(plan.steps, std::numeric_limits<double>::infinity());
    double best_total = std::numeric_limits<double>::infinity(), best_base = std::numeric_limits<double>::infinity();
    RunResult last;
    std::vector<double> max_steps(plan.steps);
    for (int r = 0; r < opt.repeat; ++r) {
        RunResult res = run_schedule(plan, me, rank, opt.bytes, r == opt.repeat - 1);
        // a step takes as long as its slowest rank; keep the best run of each step and in total
        MPI_Allreduce(res.step_seconds.data(), max_steps.data(), static_cast<int>(plan.steps), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double total = 0;
        MPI_Allreduce(&res.total, &total, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (Step s = 0; s < plan.steps; ++s) best_steps[s] = std::min(best_steps[s], max_steps[s]);
        best_total = std::min(best_total, total);
        if (r == opt.repeat - 1) last = std::move(res);
    }
    const std::string base_name = baseline_name(plan.collective);
    for (int r = 0; r < opt.repeat && !base_name.empty(); ++r) {
        double mine = run_baseline(plan, rank, size, opt.datum_bytes ? opt.datum_bytes : opt.bytes), t = 0;
        MPI_Allreduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best_base = std::min(best_base, t);
    }
    std::uint64_t counts[2] = {last.errors, last.messages_checked}, sums[2] = {0, 0};
    MPI_Reduce(counts, sums, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    std::string errors = gather_errors(last.first_errors, rank, size);

    if (rank == 0) {
        // per step: sends issued and bytes moved, from the plan
        const std::vector<std::uint64_t> sends = step_sends(plan);
        const bool passed = sums[0] == 0;
        if (opt.json) {
            nlohmann::json j = run_json(plan, size, opt, best_steps, sends, best_total);
            j["bytes_per_message"] = opt.bytes;
            if (!base_name.empty()) j["baseline"] = {{"name", base_name}, {"seconds", best_base}};
            else j["baseline"] = nullptr;
            j["byte_check"] = passed ? "passed" : "failed";
            j["messages_checked"] = sums[1];
            j["bytes_checked"] = sums[1] * opt.bytes;
            j["errors"] = sums[0];
            j["first_errors"] = error_lines(errors);
            std::printf("%s\n", j.dump().c_str());
        } else {
            std::string out = fmt::format(
                "collsched mpirun: {} {} on {} MPI ranks: {} steps, {} endpoint sends, {} bytes per message, best of {} run{}\n",
                plan.topology, plan.collective, size, plan.steps, plan.endpoint_transfers, opt.bytes, opt.repeat,
                opt.repeat == 1 ? "" : "s");
            out += step_table(plan, best_steps, sends, opt.bytes, best_total);
            if (!base_name.empty())
                out += fmt::format("{}: {:.3f} ms on the same ranks with the same payload\n", base_name, best_base * 1e3);
            else
                out += fmt::format("no MPI collective does the same job as {}\n", plan.collective);
            if (passed)
                out += fmt::format("byte check: passed ({} messages held where the collective needs them, {} bytes checked)\n",
                                   sums[1], sums[1] * opt.bytes);
            else
                out += fmt::format("byte check: FAILED ({} errors)\n{}", sums[0], errors);
            std::fwrite(out.data(), 1, out.size(), stdout);
        }
        std::fflush(stdout);
    }
    int code = sums[0] == 0 ? 0 : 1;
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return stop(code, "");
}
