// The run and report of `collsched bandwidth` (verifier/time/bandwidth_report.hpp), moved from
// tools/cmd_bandwidth.cpp (issue 42): the exact cut bound on rounds per chunk by max flow, with
// its cut, the tree packing that meets it where it can (verified by the direct checker), and with
// sizes the proved bound on time (docs/synthesis.md, "The bandwidth bound by flows").
#include "verifier/time/bandwidth_report.hpp"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/table/duality.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/bounds/bandwidth.hpp"
#include "verifier/constructions/steps/tree_packing.hpp"
#include "verifier/time/bound_report.hpp"

namespace collsched {

namespace {

/// "1+2+2+1" (the rounds of each step), or "one per step".
std::string table_rounds_text(const SendTable& t) {
    if (t.step_rounds.empty()) return "one per step";
    std::string out;
    for (Step s = 1; s <= t.steps(); ++s) out += (s > 1 ? "+" : "") + std::to_string(t.rounds(s));
    return out;
}

/// One run of `bandwidth`, one method per stage, called in order by run(): the bound, the
/// packing (or the allgather's reversed), the witness file, the report.
class BandwidthRun {
public:
    explicit BandwidthRun(const BandwidthRequest& args)
        : args_(args), limits_{args.deadline, MemoryBudget::standard()}, in_(args.instance), topo_(*in_.topology) {}

    BandwidthReport run() {
        if (in_.model.timing != Timing::hop) throw InputError("bandwidth: the cut bound is for hop timing (rounds multiply capacities)");
        if (!args_.sizes.empty()) times_ = time_bounds(topo_, in_.collective, in_.model, args_.link, limits_);
        if (times_ && !flow_bandwidth_bound(in_)) {  // allreduce, alltoall: the bound on time alone
            return {args_.json ? nlohmann::ordered_json{{"topology", topo_.spec()}, {"collective", in_.collective.to_string()},
                                                           {"model", to_string(in_.model)}, {"bound", nullptr}, {"time", time_json()}}
                                            .dump() + "\n"
                                  : fmt::format("bandwidth {} on {} ({}), {} processors: no cut bound on R/C here; the bound on time:\n{}",
                                                in_.collective.to_string(), topo_.spec(), to_string(in_.model), topo_.processors(),
                                                bound_lines(*times_, args_.sizes)),
                    3, std::nullopt, {}};
        }
        find_bound();
        if (!bound_) {  // a limit stopped the search before its first cut
            return {args_.json ? nlohmann::ordered_json{{"topology", topo_.spec()},
                                                           {"collective", in_.collective.to_string()},
                                                           {"bound", nullptr},
                                                           {"stopped", bound_stopped_},
                                                           {"schedule", {{"none", "no bound"}}}}
                                            .dump() + "\n"
                                      : fmt::format("bandwidth {} on {} ({}), {} processors\nbound: none ({})\nschedule: none\n",
                                                    in_.collective.to_string(), topo_.spec(), to_string(in_.model), topo_.processors(),
                                                    bound_stopped_),
                    3, std::nullopt, {}};
        }
        pack();
        optimal_ = packed_ && packed_->rounds_per_chunk() == bound_->rounds_per_chunk;
        BandwidthReport r{args_.json ? json_report() : text_report(), optimal_ ? 0 : 3, std::nullopt, {}};
        if (packed_ && args_.witness) {
            r.witness = packed_->table;
            r.witness_comment = witness_comment();
        }
        return r;
    }

private:
    /// The bound on time at each size, and the packed schedule's predicted time and gap there.
    nlohmann::ordered_json time_json() const {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (double m : args_.sizes) {
            const TimeBound b = evaluate(*times_, m);
            nlohmann::ordered_json x{{"size_bytes", m}, {"time_lower_bound_s", b.seconds}, {"time_bound", bound_json(*times_, b)}};
            if (packed_) {
                const double t = predict_time(packed_->table, TimeOptions{m, args_.link}).asynchronous;
                const std::string bad = bound_violation(b, *times_, t, "the packed schedule");
                COLLSCHED_ASSERT_MSG(bad.empty(), bad);
                x["predicted_time_s"] = t;
                x["gap_percent"] = gap_percent(t, b.seconds);
            }
            a.push_back(std::move(x));
        }
        return a;
    }

    std::string time_text() const {
        std::string s = bound_lines(*times_, args_.sizes);
        if (packed_)
            for (const auto& x : time_json())
                s += fmt::format("  the schedule at {}: {} asynchronous, {:.1f}% above the bound on time\n",
                                 support::format_bytes(x["size_bytes"].get<double>()), support::format_seconds(x["predicted_time_s"].get<double>()),
                                 x["gap_percent"].get<double>());
        return s;
    }

    void find_bound() {
        const auto t0 = Clock::now();
        try {
            bound_ = flow_bandwidth_bound(in_, limits_);
        } catch (const LimitReached& e) {
            bound_stopped_ = e.what();
            return;
        }
        bound_s_ = seconds_since(t0);
        if (!bound_)
            throw InputError(fmt::format("bandwidth: no flow bound for {}: the cut bound by max flow covers allgather, broadcast, "
                                         "multicast, scatter and their reversals (reduce_scatter, reduce, gather); for {} use "
                                         "pareto's enumerated cuts",
                                         in_.collective.to_string(), in_.collective.to_string()));
        // The drain rule (tree_packing.hpp, least_rounds): a cut with two or more processors outside
        // is attained at no C.
        outside_ = in_.collective.kind == CollectiveKind::allgather ? cut_outside(*bound_, topo_.processors()) : 1;
        if (outside_ >= 2)
            unreachable_ = fmt::format("not attained at any C: the cut leaves {} processors outside, so a chunk first crossing it in the "
                                       "last step cannot reach them all; R >= {} C + {}/{} (the drain rule, docs/synthesis.md)",
                                       outside_, bound_->rounds_per_chunk.text(), outside_ - 1, outside_);
    }

    /// The tree packing. Reduce-scatter: the allgather's packing reversed in time and direction
    /// (compiler/table/duality.hpp), on networks where every channel has a reverse of its capacity.
    void pack() {
        const bool by_reversal = in_.collective.kind == CollectiveKind::reduce_scatter && duality_problem(topo_, in_.model).empty();
        SynthInstance build = in_;
        if (by_reversal) build.collective = Collective::parse("allgather", topo_);
        why_ = args_.no_packing ? std::string("not asked (--no-packing)") : packing_problem(build);
        const auto t1 = Clock::now();
        if (why_.empty()) {
            PackingOptions po;
            po.target = bound_->rounds_per_chunk;
            po.outside = outside_;
            try {
                if (by_reversal)  // the allgather's own cut decides its drain
                    if (auto ab = flow_bandwidth_bound(build, limits_); ab && ab->certificate->stopped.empty())
                        po.outside = cut_outside(*ab, topo_.processors());
            } catch (const LimitReached&) {
            }
            po.chunks = chunks_for(bound_->rounds_per_chunk, args_.max_chunks, po.outside, topo_.processors());
            po.limits = limits_;
            po.stopped = &pack_stopped_;
            packed_ = pack_trees(build, po);
            if (!packed_) why_ = pack_stopped_.empty() ? "the packing stalled" : fmt::format("the packing stopped: {}", pack_stopped_);
            if (packed_ && by_reversal) reverse();
        }
        pack_s_ = seconds_since(t1);
    }

    void reverse() {
        packed_->table = reduce_scatter_from_allgather(packed_->table);
        packed_->steps = packed_->table.steps();
        packed_->rounds = static_cast<Step>(packed_->table.total_rounds());
        VerifyOptions vo;
        vo.deadline = limits_.deadline;
        const VerifyReport r = verify_direct(packed_->table, vo);
        if (r.verdict() == "unknown") {  // the time ran out in the check: not used
            pack_stopped_ = "time limit (verifying the reversed table)";
            why_ = fmt::format("the packing stopped: {}", pack_stopped_);
            packed_.reset();
            return;
        }
        COLLSCHED_ASSERT_MSG(r.holds(), "the reversed packing does not verify as a reduce-scatter");
        packed_->method = "the reversal (time and direction) of the allgather's " + packed_->method;
        packed_->least_rounds = least_rounds(bound_->rounds_per_chunk, packed_->chunks, 1);  // the reversed cut: no drain argued
    }

    std::string witness_comment() const {
        return fmt::format("{} on {}: a tree packing, {} steps, {} rounds, {} chunks, R/C = {}, verified by the direct checker.\n"
                                  "Bandwidth bound: R/C >= {} ({}).{}\nWritten by collsched bandwidth (docs/synthesis.md).",
                                  in_.collective.to_string(), topo_.spec(), packed_->steps, packed_->rounds, packed_->chunks,
                                  packed_->rounds_per_chunk().text(), bound_->rounds_per_chunk.text(), bound_->detail,
                                  optimal_ ? "\nProved bandwidth-optimal: R/C meets the bound." : "");
    }

    std::string json_report() const {
        const CutCertificate& cert = *bound_->certificate;
        nlohmann::ordered_json j;
        j["topology"] = topo_.spec();
        j["collective"] = in_.collective.to_string();
        j["model"] = to_string(in_.model);
        j["processors"] = topo_.processors();
        j["bound"] = {{"rounds_per_chunk", bound_->rounds_per_chunk.text()},
                      {"value", bound_->rounds_per_chunk.value()},
                      {"detail", bound_->detail},
                      {"certificate",
                       {{"inside", cert.inside},
                        {"routers_inside", cert.routers},
                        {"crossing", cert.crossing},
                        {"demand", cert.demand},
                        {"capacity", cert.capacity},
                        {"reversed", cert.reversed},
                        {"exact", cert.exact},
                        {"relaxations", cert.relaxations},
                        {"max_flows", cert.flows},
                        {"sinks", cert.sinks},
                        {"stopped", cert.stopped.empty() ? nlohmann::json(nullptr) : nlohmann::json(cert.stopped)}}},
                      {"attained", unreachable_.empty() ? nlohmann::json(nullptr) : nlohmann::json(false)},
                      {"unattained_why", unreachable_},
                      {"seconds", bound_s_}};
        if (packed_)
            j["schedule"] = {{"steps", packed_->steps},          {"rounds", packed_->rounds},
                             {"chunks", packed_->chunks},        {"rounds_per_chunk", packed_->rounds_per_chunk().text()},
                             {"depth", packed_->depth},          {"transfers", packed_->table.transfers.size()},
                             {"bandwidth_optimal", optimal_},    {"verified", true},
                             {"least_rounds_for_chunks", packed_->least_rounds},
                             {"optimal_for_chunks", packed_->rounds == packed_->least_rounds},
                             {"method", packed_->method},
                             {"stopped", pack_stopped_.empty() ? nlohmann::json(nullptr) : nlohmann::json(pack_stopped_)},
                             {"seconds", pack_s_}};
        else
            j["schedule"] = {{"none", why_}};
        if (times_) j["time"] = time_json();
        return j.dump() + "\n";
    }

    std::string text_report() const {
        const CutCertificate& cert = *bound_->certificate;
        std::string s = fmt::format("bandwidth {} on {} ({}), {} processors\n", in_.collective.to_string(), topo_.spec(), to_string(in_.model),
                                    topo_.processors());
        s += fmt::format("bound: R/C >= {} ({:.3f} s)\n  {}\n", bound_->rounds_per_chunk.text(), bound_s_, bound_->detail);
        s += fmt::format("  holds for any route and for routers under replicate=no and yes; {}\n",
                         !cert.stopped.empty() ? "the search stopped at a limit: a larger cut ratio may exist (see above)"
                         : cert.exact          ? "exact: the largest cut ratio of the model's capacity network"
                                               : "a lower bound on a relaxed network (see above)");
        if (!unreachable_.empty()) s += fmt::format("  {}\n", unreachable_);
        if (!packed_) return s + fmt::format("schedule: none ({})\n", why_) + (times_ ? time_text() : std::string());
        const double above = 100.0 * (packed_->rounds_per_chunk().value() / bound_->rounds_per_chunk.value() - 1.0);
        s += fmt::format("schedule: {} steps, {} rounds ({}), {} chunks, R/C = {}, trees at most {} deep, {} transfers, verified ({:.3f} s)\n"
                         "  {}\n",
                         packed_->steps, packed_->rounds, table_rounds_text(packed_->table), packed_->chunks, packed_->rounds_per_chunk().text(),
                         packed_->depth, packed_->table.transfers.size(), pack_s_,
                         optimal_ ? "proved bandwidth-optimal: R/C meets the bound (the cut above)"
                         : packed_->rounds == packed_->least_rounds
                             ? fmt::format("above the bound by {:.2f}%, proved optimal for {} chunks: R >= {} by the cut above", above,
                                           packed_->chunks, packed_->least_rounds)
                             : fmt::format("above the bound by {:.2f}% (for {} chunks the cut says R >= {})", above, packed_->chunks,
                                           packed_->least_rounds));
        s += fmt::format("  built by {}\n", packed_->method);
        if (!pack_stopped_.empty()) s += fmt::format("  the packing stopped ({}): the best table so far\n", pack_stopped_);
        if (times_) s += time_text();
        return s;
    }

    const BandwidthRequest& args_;
    const RunLimits limits_;  ///< --timeout for the whole run; the memory budget (MemoryBudget::standard)
    const SynthInstance in_;
    const Topology& topo_;
    std::optional<BandwidthBound> bound_;
    double bound_s_ = 0, pack_s_ = 0;
    std::uint32_t outside_ = 1;  ///< processors outside the bound's cut (allgather; else 1)
    std::string unreachable_;    ///< why the bound is attained at no C, or empty
    std::optional<PackedSchedule> packed_;
    std::string why_;  ///< no schedule: why
    std::string bound_stopped_, pack_stopped_;  ///< the limit that stopped the bound (before any cut) or the packing
    bool optimal_ = false;
    std::optional<TimeBounds> times_;  ///< --size
};

}  // namespace

BandwidthReport bandwidth_report(const BandwidthRequest& rq) { return BandwidthRun(rq).run(); }

}  // namespace collsched
