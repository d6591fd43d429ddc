/** \file
 * What a verifier engine answers: per property a status, and for each violation a
 * counterexample that names the step, the channel or node, and the messages involved. Shared
 * by the direct checker and the Z3 engine so that `--engine both` can compare them.
 */
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"

namespace collsched {

/// The property families of DESIGN.md section 7, in report order.
enum class Property : std::uint8_t { capacity, ports, queues, replication, causality, routes, completeness };
inline constexpr std::size_t property_count = 7;
std::string_view to_string(Property);

enum class Status : std::uint8_t { holds, violated, unknown, skipped };
std::string_view to_string(Status);

struct Violation {
    Property property;
    Step step = 0;                      ///< 0 when the violation is not tied to a step (completeness)
    std::optional<ChannelId> channel;
    std::optional<Node> node;
    std::vector<MessageId> messages;
    std::string detail;                 ///< one sentence, with names resolved
    std::optional<std::uint32_t> group = {};  ///< capacity of a link group: its index in Topology::groups()
    std::string origin = {};            ///< `file:line:col` of the schedule statement behind it (DSL input), else empty
    std::string when = {};              ///< its loop values there, "s = 2, k = 0" (DSL input, tools/cmd_verify.cpp), else empty
};

/// Shared wording of the engines' counterexamples (so both engines say the same):
/// " x 2 rounds = 4" for a capacity in a step of more than one round, else "".
std::string times_rounds(std::uint64_t cap, std::uint32_t rounds);
/// "3 sends and 0 receives (...) but single-port allows one of each per step" (or per round).
std::string ports_detail(Ports ports, std::uint64_t sends, std::uint64_t receives, const std::string& messages, std::uint32_t rounds);
/// "3 messages (...) on its 7 channels together but capacity 2" (the report names the group before it).
std::string group_detail(const LinkGroup& g, std::uint64_t count, const std::string& messages, std::uint32_t rounds);
/// At most 8 message names, comma-separated, then ", ...".
std::string message_list(const Messages& ms, const std::vector<MessageId>& list);

struct VerifyOptions {
    bool fixed_routes = false;          ///< also require personalized messages to follow the topology's routes
    std::size_t max_violations = 20;    ///< counterexamples kept per property (all are counted)
    /// Threads of the direct checker's per-message pass: 0 picks (2 for tables of 2^18 transfers
    /// and more on a machine with 2 or more cores, else 1); the report is the same for any value.
    unsigned threads = 0;
    /// The direct checker stops here: the properties it has not found violated are then unknown,
    /// with a note (a schedule whose check did not end is not used). Default: none.
    Deadline deadline{};
    /// Also stop once the process's resident size reaches the memory budget (MemoryBudget::standard): the time
    /// objective's checks (verifier/time/candidates.cpp), where a reduction's check of a 12.6-million-transfer table
    /// holds 1.6 GB. Off by default: callers that assume a check ends (the synthesizers' own checks) get no unknown.
    bool memory_limit = false;
};

struct VerifyReport {
    std::string engine;
    std::array<Status, property_count> status{};
    std::array<std::uint64_t, property_count> violation_count{};
    std::vector<Violation> violations;  ///< at most max_violations per property, in property then step order
    Step steps = 0;                     ///< completion time T
    std::uint64_t transfers = 0;
    double cost = 0;                    ///< wormhole: sum over rounds of ts + tc * payload; hop: = steps
    double seconds = 0;
    std::vector<std::string> notes;     ///< remarks of the engine, e.g. why a property is unknown

    bool holds() const;
    std::string_view verdict() const;   ///< "holds", "violated" or "unknown"
};

/// The transfer a violation points at: the first one with its step, channel and first message
/// (violations without a channel, such as completeness, point at none). This is the hook that
/// maps counterexamples back to DSL source locations (Violation::origin).
std::optional<std::uint64_t> violation_transfer(const SendTable&, const Violation&);

/// Where transfer i of the table came from, as "file:line:col", or "" when unknown: from the
/// origins the lowering recorded (SendTable::transfer_origins, CompileOptions::record_locations)
/// or else from an `"at": "file:line:col"` extra field of a table file (SendTable::transfer_extras).
std::string transfer_origin(const SendTable&, std::uint64_t i);

/// Fills Violation::origin with transfer_origin() of the transfer each violation points at, so
/// counterexamples of a schedule name its `send` or `hop` statement.
void attach_origins(VerifyReport&, const SendTable&);

/// A claim of the table checked against its completion time T (`steps`): "holds" or "violated"
/// for `claim steps` and `bound lower`, "not checked" for queue and buffer claims (measured by
/// `collsched reproduce`), "" for a citation.
std::string claim_check(const Claim&, Step steps);

/// Human-readable report: a verdict line, one line per property, then the counterexamples.
std::string format_report(const VerifyReport&, const SendTable&);
/// `{"verdict": ..., "engine": ..., "steps": ..., "properties": {...}, "violations": [...], "seconds": ...}`.
nlohmann::ordered_json report_to_json(const VerifyReport&, const SendTable&);

/// A property on which one engine says holds (or skipped) and the other violated (or another of
/// holds/skipped). An unknown answer disagrees with nothing. A disagreement is a bug in one of
/// the engines: the direct checker and the Z3 engine decide the same properties
/// (docs/z3-engine.md, "Disagreement").
struct Disagreement {
    Property property;
    Status direct, z3;
};
std::vector<Disagreement> disagreements(const VerifyReport& direct, const VerifyReport& z3);

/// The two engines' reports taken together (`verify --engine both`): per property the common
/// status, "unknown" when either engine could not decide, "disagreement" otherwise; the verdict
/// is "disagreement", "violated", "unknown" or "holds", in that order of precedence.
struct Agreement {
    std::array<std::string, property_count> status;
    std::string verdict;
    bool unknown = false;
    std::vector<Disagreement> disagreements;
};
Agreement agreement(const VerifyReport& direct, const VerifyReport& z3);

}  // namespace collsched
