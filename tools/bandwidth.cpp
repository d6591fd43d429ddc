#include "tools/bandwidth.hpp"

#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "support/text.hpp"

namespace collsched::tools {

void AlphaBeta::check() const {
    if (given() && !(alpha && beta && size))
        throw InputError("the alpha-beta time needs all three of --alpha A, --beta B and --size M");
}

void add_alpha_beta_options(CLI::App* cmd, AlphaBeta& ab) {
    auto nonneg = CLI::Validator(
        [](std::string& s) -> std::string {
            double v = 0;
            try {
                std::size_t used = 0;
                v = std::stod(s, &used);
                if (used != s.size()) return "expected a number";
            } catch (...) {
                return "expected a number";
            }
            return v >= 0 && v < 1e300 ? "" : "expected a finite number >= 0";
        },
        "NUMBER >= 0");
    cmd->add_option("--alpha", ab.alpha, "Alpha-beta time: the latency of a step")->check(nonneg);
    cmd->add_option("--beta", ab.beta, "Alpha-beta time: the time per unit of data on a link")->check(nonneg);
    cmd->add_option("--size", ab.size, "Alpha-beta time: the buffer size M of one datum (a chunk is M/C)")->check(nonneg);
}

bool shows_bandwidth(const SendTable& t, const AlphaBeta& ab) { return t.uses_bandwidth_model() || ab.given(); }

std::string bandwidth_text(const SendTable& t, const AlphaBeta& ab, std::optional<Step> steps) {
    if (!shows_bandwidth(t, ab)) return "";
    const BandwidthCost c = bandwidth_cost(t, steps.value_or(t.steps()));
    std::string out = fmt::format("bandwidth: S = {}, R = {}, C = {}, R/C = {} rounds per chunk\n", support::count_of(c.steps, "step"),
                                  support::count_of(c.rounds, "round"), support::count_of(c.chunks, "chunk"), c.fraction());
    if (ab.alpha && ab.beta && ab.size)
        out += fmt::format("alpha-beta time: S*alpha + R*(M/C)*beta = {}*{} + {}*({}/{})*{} = {}\n", c.steps, *ab.alpha, c.rounds,
                           *ab.size, c.chunks, *ab.beta, c.time(*ab.alpha, *ab.beta, *ab.size));
    return out;
}

void add_bandwidth_json(nlohmann::ordered_json& j, const SendTable& t, const AlphaBeta& ab, std::optional<Step> steps) {
    if (!shows_bandwidth(t, ab)) return;
    const BandwidthCost c = bandwidth_cost(t, steps.value_or(t.steps()));
    nlohmann::ordered_json b;
    b["steps"] = c.steps;
    b["rounds"] = c.rounds;
    b["chunks"] = c.chunks;
    b["rounds_per_chunk"] = c.fraction();
    if (ab.alpha && ab.beta && ab.size) {
        b["alpha"] = *ab.alpha;
        b["beta"] = *ab.beta;
        b["size"] = *ab.size;
        b["time"] = c.time(*ab.alpha, *ab.beta, *ab.size);
    }
    j["bandwidth"] = b;
}

}  // namespace collsched::tools
