/** \file
 * The model of DESIGN.md section 3: four orthogonal knobs (timing, ports, queues, replicate)
 * that fix what a legal send table is, and one restriction (inject=once, docs/semantics.md).
 * Parsed from `key=value,...` (the `--model` option), from
 * the table JSON, and printed back in both forms.
 */
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "support/assert.hpp"
#include "support/error.hpp"

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
    /// combine=routers: routers may combine partials of one chunk (in-network reduction, as NVLink
    /// SHARP; docs/semantics.md, "Reductions"); default combine=processors: routers only forward.
    bool combine_routers = false;
    /// multicast=routers: a router sends one copy of a message on several channels in one step
    /// (NVLink SHARP's multimem store, a switch's multicast; docs/semantics.md, "Reductions");
    /// default multicast=no: each departure takes a copy of its own (under replicate=no).
    bool multicast_routers = false;
    bool operator==(const Model&) const = default;
};

std::string_view to_string(Timing);
std::string_view to_string(Ports);
std::string queues_to_string(const Model&);

/// `timing=hop,ports=multi,queues=none,replicate=no` (every key, canonical order; `,inject=once`,
/// `,combine=routers` and `,multicast=routers` are appended only when set, so tables and outputs without them read as
/// before).
std::string to_string(const Model&);

/// One knob of the model, by the name the `--model` option, table files and the DSL use.
struct ModelKey {
    std::string_view name;
    std::string_view values;         ///< what it accepts, for messages and --help
    std::string_view default_value;  ///< under Model{} (a topology's default model may differ)
    bool wormhole_only;              ///< a cost that only wormhole timing reads (ts, tc)
    void (*set)(Model&, std::string_view key, std::string_view value);  ///< throws InputError for a bad value
};

/// Every knob, in the canonical order.
std::span<const ModelKey> model_keys();
/// The knob called `name`, or null.
const ModelKey* find_model_key(std::string_view name);
/// "timing, ts, tc, ports, queues, replicate" (with `last_word`: "..., queues or replicate").
std::string model_key_names(std::string_view last_word = {});

/// A key that names no knob (a bad value is a plain InputError).
class UnknownModelKey : public InputError {
public:
    using InputError::InputError;
};

/// Sets one knob by its name. Throws UnknownModelKey or InputError naming the value expected.
void set_model_key(Model& m, std::string_view key, std::string_view value);

/// Applies `key=value` pairs (comma separated) on top of `base`; keys not given keep their
/// value. Throws InputError naming the bad key or value and the accepted ones.
Model apply_model_options(Model base, std::string_view options);

/// Why a model's combine=routers cannot be checked ("" when it can, or when it is off): in-network
/// reduction is defined under hop timing, replicate=no, and queues none or unbounded; so is
/// multicast=routers.
std::string combine_problem(const Model&);

nlohmann::json to_json(const Model&);
/// Reads the "model" object of a table file on top of `base`. Throws InputError.
Model model_from_json(const nlohmann::json&, Model base);

}  // namespace collsched
