// The benchmark: cases, the timed stages, peak memory per stage, and the JSON and text reports.
#include "bench/bench.hpp"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "bench/schedules.hpp"
#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "support/text.hpp"
#include "verifier/check/direct.hpp"

namespace collsched::bench {

namespace {

/// Resets the kernel's peak-RSS mark of this process (Linux: "5" to /proc/self/clear_refs), so
/// that the next peak_rss() is the peak of the stage that follows. Harmless where unsupported:
/// the figure is then the peak since the process started.
void reset_peak() {
    std::ofstream f("/proc/self/clear_refs");
    if (f) f << "5";
}

/// VmHWM from /proc/self/status, in bytes; getrusage's ru_maxrss where that is unavailable.
std::uint64_t peak_rss() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;
}

double cpu_now() { return cpu_seconds(); }

/// Times `f` as one stage; `f` returns the stage's verdict.
template <class F>
Stage timed(std::string name, F&& f) {
    reset_peak();
    Stage st;
    st.name = std::move(name);
    const double cpu0 = cpu_now();
    const auto t0 = std::chrono::steady_clock::now();
    st.verdict = f();
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st.cpu_seconds = cpu_now() - cpu0;
    st.peak_rss = peak_rss();
    return st;
}

bool power_of_two(std::uint32_t n) { return n >= 2 && (n & (n - 1)) == 0; }

/// The torus a x b with a b = n closest to square (a <= b), or nothing when n has no such split.
std::optional<std::pair<std::uint32_t, std::uint32_t>> torus_shape(std::uint32_t n) {
    for (auto a = static_cast<std::uint32_t>(std::sqrt(static_cast<double>(n))); a >= 2; --a)
        if (n % a == 0 && n / a >= 2) return std::pair(a, n / a);
    return std::nullopt;
}

}  // namespace

bool CaseResult::ok() const {
    for (const Stage& s : stages)
        if (s.verdict != "ok" && s.verdict != "holds" && s.verdict != "completed") return false;
    return !stages.empty();
}

std::vector<Case> cases(const Options& opt) {
    std::vector<Case> out;
    for (const std::string& name : opt.schedules) {
        for (std::uint32_t n : opt.sizes) {
            Case c;
            c.name = name;
            c.n = n;
            if (name == "ebft_alltoall") {
                if (!power_of_two(n)) throw InputError(fmt::format("bench: ebft_alltoall needs n a power of two >= 2, not {}", n));
                c.topology = fmt::format("ebft:{}", n);
                c.text = ebft_alltoall_text;
                c.file = "schedules/bft/ebft_alltoall.sched";
                c.defines = {fmt::format("n={}", n)};
            } else if (name == "ebft_alltoall_optimal") {
                if (!power_of_two(n) || n < 8)
                    throw InputError(fmt::format("bench: ebft_alltoall_optimal needs n a power of two >= 8, not {}", n));
                c.topology = fmt::format("ebft:{}", n);
                c.text = ebft_alltoall_optimal_text;
                c.file = "schedules/bft/ebft_alltoall_optimal.sched";
                c.defines = {fmt::format("n={}", n)};
            } else if (name == "torus_allgather") {
                auto shape = torus_shape(n);
                if (!shape) throw InputError(fmt::format("bench: torus_allgather needs n = a b with a, b >= 2, not {}", n));
                c.topology = fmt::format("torus:{}x{}", shape->first, shape->second);
                c.text = torus_allgather_text;
                c.file = "schedules/single_port/torus_hamiltonian_full_duplex.sched";
                c.defines = {fmt::format("a={}", shape->first), fmt::format("b={}", shape->second)};
            } else if (name == "ring_allgather") {
                if (n < 2) throw InputError(fmt::format("bench: ring_allgather needs n >= 2, not {}", n));
                c.topology = fmt::format("ring:{}", n);
                c.text = ring_allgather_text;
                c.file = "schedules/single_port/ring_full_duplex.sched";
                c.defines = {fmt::format("n={}", n)};
            } else {
                throw InputError(fmt::format("bench: unknown schedule '{}' (expected ebft_alltoall, ebft_alltoall_optimal, torus_allgather, ring_allgather)", name));
            }
            out.push_back(std::move(c));
        }
    }
    return out;
}

std::uint64_t expected_transfers(const Case& c) {
    const std::uint64_t n = c.n;
    if (c.name != "ebft_alltoall" && c.name != "ebft_alltoall_optimal") return n * (n - 1);  // allgather along a cycle: n - 1 steps of n one-hop sends
    // A pair whose lowest common ancestor is at height h crosses 2h channels; each leaf has
    // 2^(h-1) partners at height h.
    std::uint64_t sum = 0;
    for (std::uint64_t h = 1; (std::uint64_t{1} << h) <= n; ++h) sum += (std::uint64_t{1} << (h - 1)) * 2 * h;
    return n * sum;
}

CaseResult run(const Case& c, const Options& opt, const std::function<void(std::string_view)>& progress) {
    CaseResult r;
    r.c = c;
    r.transfers = expected_transfers(c);
    r.streamed = opt.force_stream || r.transfers > opt.stream_above;
    auto say = [&](std::string_view stage) {
        if (progress) progress(fmt::format("bench: {} n={} ({}, {} transfers): {}", c.name, c.n, c.topology, r.transfers, stage));
    };
    CompileOptions copt;
    Diagnostics diags;
    std::vector<Define> defines;
    if (!parse_defines(c.defines, defines, diags)) throw InputError(diags.render());
    copt.defines = defines;
    copt.max_transfers = std::max(copt.max_transfers, r.transfers);
    auto fail = [&] {
        throw InputError(fmt::format("bench: {} does not compile for {}:\n{}", c.file, c.topology, diags.render()));
    };
    if (r.streamed) {
        say("stream (compile and simulate step by step)");
        SimReport sim;
        Stage st = timed("stream", [&] {
            std::optional<SimReport> s;
            try {
                s = stream_simulate_text(c.text, c.file, copt, diags);
            } catch (const NotStreamable& e) {
                throw InputError(fmt::format("bench: {} cannot stream: {}", c.file, e.what()));
            }
            if (!s) fail();
            sim = std::move(*s);
            return std::string(to_string(sim.status));
        });
        r.transfers = sim.transfers;
        r.steps = sim.steps;
        r.stages.push_back(std::move(st));
        return r;
    }
    std::optional<SendTable> table;
    say("compile");
    r.stages.push_back(timed("compile", [&] {
        table = compile_text(c.text, c.file, copt, diags);
        if (!table) fail();
        return std::string("ok");
    }));
    r.transfers = table->transfers.size();
    r.steps = table->steps();
    say("verify (direct)");
    r.stages.push_back(timed("verify", [&] { return std::string(verify_direct(*table).verdict()); }));
    say("simulate");
    r.stages.push_back(timed("simulate", [&] { return std::string(to_string(simulate(*table).status)); }));
    table.reset();
    return r;
}

std::string machine_summary() {
    std::string cpu = "unknown CPU";
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            cpu = line.substr(line.find(':') + 2);
            break;
        }
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const double gib = static_cast<double>(pages) * static_cast<double>(page) / (1024.0 * 1024 * 1024);
#if defined(__clang__)
    std::string compiler = fmt::format("clang {}.{}", __clang_major__, __clang_minor__);
#elif defined(__GNUC__)
    std::string compiler = fmt::format("g++ {}.{}", __GNUC__, __GNUC_MINOR__);
#else
    std::string compiler = "unknown compiler";
#endif
#ifdef NDEBUG
    const char* build = "release (NDEBUG)";
#else
    const char* build = "debug (assertions on)";
#endif
    return fmt::format("{}, {} cores, {:.1f} GiB; {}, {}", cpu, sysconf(_SC_NPROCESSORS_ONLN), gib, compiler, build);
}

std::string to_json(const std::vector<CaseResult>& results) {
    std::string out = fmt::format("{{\"machine\": {}, \"cases\": [", support::json_string(machine_summary()));
    for (std::size_t i = 0; i < results.size(); ++i) {
        const CaseResult& r = results[i];
        out += fmt::format("{}{{\"schedule\": {}, \"file\": {}, \"n\": {}, \"topology\": {}, \"mode\": \"{}\", \"transfers\": {}, "
                           "\"steps\": {}, \"ok\": {}, \"stages\": [",
                           i ? ", " : "", support::json_string(r.c.name), support::json_string(r.c.file), r.c.n, support::json_string(r.c.topology),
                           r.streamed ? "stream" : "memory", r.transfers, r.steps, r.ok() ? "true" : "false");
        for (std::size_t k = 0; k < r.stages.size(); ++k) {
            const Stage& s = r.stages[k];
            const double rate = s.cpu_seconds > 0 ? static_cast<double>(r.transfers) / s.cpu_seconds : 0.0;
            out += fmt::format("{}{{\"stage\": \"{}\", \"verdict\": \"{}\", \"seconds\": {:.4f}, \"cpu_seconds\": {:.4f}, "
                               "\"transfers_per_second\": {:.0f}, \"peak_rss_bytes\": {}}}",
                               k ? ", " : "", s.name, s.verdict, s.seconds, s.cpu_seconds, rate, s.peak_rss);
        }
        out += "]}";
    }
    return out + "]}\n";
}

std::string to_text(const std::vector<CaseResult>& results) {
    std::string out = fmt::format("machine: {}\n", machine_summary());
    out += fmt::format("{:<16} {:>5} {:<12} {:>11} {:>6} {:<8} {:>8} {:>8} {:>10} {:>9}  {}\n", "schedule", "n", "topology",
                       "transfers", "steps", "stage", "wall s", "cpu s", "Mtr/cpu s", "peak MiB", "verdict");
    for (const CaseResult& r : results)
        for (const Stage& s : r.stages) {
            const double rate = s.cpu_seconds > 0 ? static_cast<double>(r.transfers) / s.cpu_seconds / 1e6 : 0.0;
            out += fmt::format("{:<16} {:>5} {:<12} {:>11} {:>6} {:<8} {:>8.3f} {:>8.3f} {:>10.1f} {:>9.0f}  {}\n", r.c.name, r.c.n,
                               r.c.topology, r.transfers, r.steps, s.name, s.seconds, s.cpu_seconds, rate,
                               static_cast<double>(s.peak_rss) / (1024.0 * 1024), s.verdict);
        }
    return out;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace collsched::bench
