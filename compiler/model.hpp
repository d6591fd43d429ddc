/** \file
 * The model of DESIGN.md section 3: four orthogonal knobs (timing, ports, queues, replicate)
 * that fix what a legal send table is, and one restriction (inject=once, docs/semantics.md).
 * Parsed from `key=value,...` (the `--model` option), from
 * the table JSON, and printed back in both forms.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace collsched {

enum class Timing : std::uint8_t { hop, wormhole };
enum class Ports : std::uint8_t { multi, single, half };
enum class QueueKind : std::uint8_t { unbounded, none, bounded };

struct Model {
    Timing timing = Timing::hop;
    double ts = 1.0;   ///< wormhole start-up cost per round
    double tc = 0.0;   ///< wormhole cost per unit of payload
    Ports ports = Ports::multi;
    QueueKind queues = QueueKind::unbounded;
    std::uint32_t queue_bound = 0;  ///< B when queues == bounded
    bool replicate = false;
    bool inject_once = false;  ///< inject=once: an initial datum leaves a processor once, from its source
    bool operator==(const Model&) const = default;
};

std::string_view to_string(Timing);
std::string_view to_string(Ports);
std::string queues_to_string(const Model&);

/// `timing=hop,ports=multi,queues=none,replicate=no` (every key, canonical order; `,inject=once`
/// is appended only when set, so tables and outputs without it read as before).
std::string to_string(const Model&);

/// Applies `key=value` pairs (comma separated) on top of `base`; keys not given keep their
/// value. Throws InputError naming the bad key or value and the accepted ones.
Model apply_model_options(Model base, std::string_view options);

nlohmann::json to_json(const Model&);
/// Reads the "model" object of a table file on top of `base`. Throws InputError.
Model model_from_json(const nlohmann::json&, Model base);

}  // namespace collsched
