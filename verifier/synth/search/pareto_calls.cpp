// pareto's solver calls (verifier/synth/search/pareto_calls.hpp): one decided, a batch run on threads or
// shared, and their texts.
//
// Under mpirun (moved from docs/synthesis.md, "Threads and MPI ranks"): `MPI_Init_thread` is called
// funneled, and only when mpirun started more than one rank (`OMPI_COMM_WORLD_SIZE` or `PMI_SIZE`;
// cli/mpi_share.cpp, linked into the `collsched` executable only). Rank 0 leads: call j of a batch
// goes to rank j mod K as JSON `{steps, chunks, rounds, timeout, left, autos}`; the answer comes back as
// `{answer, reason, seconds, step_rounds, witness}`, the witness a table rank 0 verifies again.
#include "verifier/synth/search/pareto_calls.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/io/table_io.hpp"
#include "support/assert.hpp"
#include "verifier/check/direct.hpp"

namespace collsched::pareto_calls {

namespace {

/// One (S, C, R): first, where the topology has automorphisms, a search among the schedules
/// invariant under them (CaDiCaL's "sat" configuration, a share of the time): a schedule found
/// there is as good as any (it is verified); its UNSAT proves nothing. Then the full encoding,
/// whose answer is the one that counts.
SynthResult decide(const SynthInstance& in, Step S, std::uint32_t C, Step R, const SynthOptions& base,
                   const std::vector<std::vector<std::uint32_t>>& autos, double invariant_share) {
    SynthOptions full = base;
    if (!autos.empty()) {
        SynthOptions inv = base;
        inv.invariant = autos;
        inv.cadical_config = "sat";
        inv.timeout = base.timeout > 0 ? base.timeout * invariant_share : 2.0;
        const auto t0 = Clock::now();
        SynthResult r = solve_rounds(in, S, C, R, inv);
        if (r.answer == Answer::sat) return r;
        // The full encoding gets what is left of this instance's time.
        if (base.timeout > 0)
            full.timeout = std::max(0.01, base.timeout - std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return solve_rounds(in, S, C, R, full);
}

Answered run_call(const CallContext& cx, const Call& c, const std::function<bool()>& cancelled) {
    const auto s0 = Clock::now();
    SynthOptions so = cx.opt.synth;
    so.timeout = c.timeout;
    so.deadline = std::min(so.deadline, c.deadline);
    if (cancelled) so.interrupt = [outer = so.interrupt, cancelled] { return (outer && outer()) || cancelled(); };
    Answered a;
    a.result = decide(cx.in, c.steps, c.chunks, c.rounds, so, cx.autos, 0.25);
    a.seconds = seconds_since(s0);
    return a;
}

// Calls and answers as text, for calls shared with other processes (JobSharing). The deadline
// travels as the seconds left (the processes' clocks are not the same clock); a witness as the
// table's JSON (compiler/io/table_io.hpp), read back and verified again by the leader.
std::string call_text(const Call& c, const std::vector<std::vector<std::uint32_t>>& autos) {
    const double left = c.deadline == Clock::time_point::max() ? -1.0 : std::max(0.0, -seconds_since(c.deadline));
    return nlohmann::json{{"steps", c.steps}, {"chunks", c.chunks}, {"rounds", c.rounds}, {"timeout", c.timeout}, {"left", left}, {"autos", autos}}.dump();
}

std::pair<Call, std::vector<std::vector<std::uint32_t>>> call_of(const std::string& text) {
    const nlohmann::json j = nlohmann::json::parse(text);
    Call c;
    c.steps = j.at("steps").get<Step>();
    c.chunks = j.at("chunks").get<std::uint32_t>();
    c.rounds = j.at("rounds").get<Step>();
    c.timeout = j.at("timeout").get<double>();
    if (const double left = j.at("left").get<double>(); left >= 0)
        c.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(left));
    return {c, j.at("autos").get<std::vector<std::vector<std::uint32_t>>>()};
}

std::string answered_text(const Answered& a) {
    nlohmann::json j{{"answer", std::string(to_string(a.result.answer))}, {"reason", a.result.reason}, {"seconds", a.seconds},
                     {"step_rounds", a.result.step_rounds}};
    j["witness"] = a.result.witness ? nlohmann::json(table_to_json(*a.result.witness)) : nlohmann::json();
    return j.dump();
}

Answered answered_of(const std::string& text, const SynthInstance& in) {
    const nlohmann::json j = nlohmann::json::parse(text);
    Answered a;
    const std::string answer = j.at("answer").get<std::string>();
    a.result.answer = answer == "sat" ? Answer::sat : answer == "unsat" ? Answer::unsat : Answer::unknown;
    a.result.reason = j.at("reason").get<std::string>();
    a.seconds = j.at("seconds").get<double>();
    a.result.step_rounds = j.at("step_rounds").get<std::vector<Step>>();
    if (!j.at("witness").is_null()) {
        SendTable t = parse_table_json(j.at("witness").get<std::string>(), "a witness from another process");
        t.topology = in.topology;  // the same topology (the same spec), shared
        COLLSCHED_ASSERT_MSG(verify_direct(t).holds(), "a witness from another process does not verify");
        a.result.witness = std::move(t);
    }
    return a;
}

}  // namespace

std::vector<Answered> CallRunner::run(const std::vector<Call>& batch) const {
    std::vector<Answered> out(batch.size());
    if (cx_.opt.sharing) {
        std::vector<std::string> jobs;
        for (const Call& c : batch) jobs.push_back(call_text(c, cx_.autos));
        const std::vector<std::string> got = cx_.opt.sharing->share(jobs, threads(), runner());
        for (std::size_t i = 0; i < batch.size(); ++i) out[i] = answered_of(got[i], cx_.in);
        return out;
    }
    std::atomic<std::size_t> first_sat{batch.size()};
    run_indexed(batch.size(), threads(), [&](std::size_t i) {
        if (first_sat.load() < i) return true;
        out[i] = run_call(cx_, batch[i], [&first_sat, i] { return first_sat.load() < i; });
        if (out[i].result.answer == Answer::sat)
            for (std::size_t f = first_sat.load(); i < f && !first_sat.compare_exchange_weak(f, i);) {
            }
        return true;
    });
    return out;
}

JobRunner CallRunner::runner() const {
    return [&cx = cx_](const std::string& text) {
        auto [c, autos] = call_of(text);
        const CallContext here{cx.in, cx.opt, std::move(autos)};
        try {
            return answered_text(run_call(here, c, {}));
        } catch (const std::exception& e) {  // the leader waits for an answer: this one is "unknown"
            Answered failed;
            failed.result.reason = fmt::format("the call failed in another process: {}", e.what());
            return answered_text(failed);
        }
    };
}

}  // namespace collsched::pareto_calls
