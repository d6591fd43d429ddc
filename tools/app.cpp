#include "tools/app.hpp"
#include "cli/runs.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dsl/excerpt.hpp"
#include "support/edit_distance.hpp"

namespace collsched::tools {

// CLI11 alone would only say "A subcommand is required" for `collsched foo`.
std::optional<std::string> unknown_subcommand(const CLI::App& app, const std::vector<std::string>& args) {
    if (args.empty() || args[0].empty() || args[0][0] == '-') return std::nullopt;
    std::string_view word = args[0];
    std::string best;
    std::size_t best_d = 3;  // at most two edits away
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->check_name(std::string(word))) return std::nullopt;
        std::size_t d = support::edit_distance(word, sub->get_name());
        if (d < best_d) best_d = d, best = sub->get_name();
    }
    return fmt::format("unknown subcommand '{}'{}; run `collsched --help` for the list", excerpt(word),
                       best.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", best));
}

namespace {

/// The closest of `names` to `word`, at most two edits away (or one for words of three letters
/// or fewer); else the one that begins the word or that the word begins, at least four letters of
/// it (`--protocol` for `--proto`, `--time` for `--timeout`), the nearest in length; "" if none.
std::string closest(std::string_view word, const std::vector<std::string>& names) {
    std::string best;
    std::size_t best_d = word.size() <= 5 ? 2 : 3;
    for (const auto& n : names) {
        std::size_t d = support::edit_distance(word, n);
        if (d < best_d) best_d = d, best = n;
    }
    if (!best.empty()) return best;
    auto letters = [](std::string_view x) { return x.substr(std::min(x.find_first_not_of('-'), x.size())).size(); };
    best_d = std::string::npos;
    for (const auto& n : names) {
        const std::string_view shorter = n.size() < word.size() ? std::string_view(n) : word;
        if (letters(shorter) < 4 || !(word.starts_with(n) || std::string_view(n).starts_with(word))) continue;
        const std::size_t d = n.size() > word.size() ? n.size() - word.size() : word.size() - n.size();
        if (d < best_d) best_d = d, best = n;
    }
    return best;
}

}  // namespace

std::string usage_message(const CLI::App& app, const CLI::Error& e) {
    std::string msg = e.what();
    if (e.get_exit_code() != static_cast<int>(CLI::ExitCodes::ExtrasError)) return msg;
    const CLI::App* cmd = &app;  // the subcommand being parsed, whose options are the candidates
    for (const CLI::App* sub : app.get_subcommands()) cmd = sub;
    std::vector<std::string> names;
    for (const CLI::App* a : {&app, cmd}) {
        for (const CLI::Option* o : a->get_options()) {
            for (const auto& l : o->get_lnames()) names.push_back("--" + l);
            for (const auto& s : o->get_snames()) names.push_back("-" + s);
        }
    }
    // CLI11 lists the unexpected words, last first: "... not expected: 4 --sise"
    std::string_view words = std::string_view(msg).substr(msg.find(": ") == std::string::npos ? 0 : msg.find(": ") + 2);
    std::string option;
    for (std::size_t b = 0; b < words.size();) {
        std::size_t e2 = words.find(' ', b);
        if (e2 == std::string_view::npos) e2 = words.size();
        std::string_view w = words.substr(b, e2 - b);
        if (w.size() > 1 && w[0] == '-' && !(w[1] >= '0' && w[1] <= '9')) option = std::string(w.substr(0, w.find('=')));
        b = e2 + 1;
    }
    if (option.empty()) return msg;
    const std::string best = closest(option, names);
    const std::string where = cmd == &app ? "collsched --help" : fmt::format("collsched {} --help", cmd->get_name());
    return best.empty() ? fmt::format("unknown option {} ({} lists the options)", excerpt(option), where)
                        : fmt::format("unknown option {}; did you mean {}?", excerpt(option), best);
}

void add_commands(CLI::App& app, Context& ctx) {
    app.require_subcommand(1);
    // Every option's --help shows its default ([16]); subcommands inherit this from the app.
    app.option_defaults()->always_capture_default();
    app.set_version_flag("--version", "collsched 0.1.0");
    // CLI11 echoes a bad value whole; a long one is quoted in part (dsl/excerpt.hpp).
    // An unknown option gets its closest name ("unknown option --sise; did you mean --size?").
    // Every message starts "collsched: error:", as the errors the commands raise do.
    app.failure_message([](const CLI::App* a, const CLI::Error& e) {
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::ExtrasError)) return shorten_quotes("collsched: error: " + usage_message(*a, e) + "\n");
        // one line, as every refusal (CLI11's simple() adds "Run with --help for more information.")
        return shorten_quotes(fmt::format("collsched: error: {}\n", e.what()));
    });
    add_demo_command(app, ctx);
    add_topo_command(app, ctx);
    add_verify_command(app, ctx);
    add_simulate_command(app, ctx);
    add_convert_command(app, ctx);
    add_mpirun_command(app, ctx);
    add_compile_command(app, ctx);
    add_optimize_command(app, ctx);
    add_probe_command(app, ctx);
    add_pareto_command(app, ctx);
    add_bandwidth_command(app, ctx);
    add_reproduce_command(app, ctx);
    add_bench_command(app, ctx);
    add_compare_command(app, ctx);
    add_machine_command(app, ctx);
    add_compose_command(app, ctx);
    add_calibrate_command(app, ctx);
    add_tune_command(app, ctx);
    add_deploy_command(app, ctx);
    add_completion_command(app, ctx);
}

int run_command(const std::vector<std::string>& args, std::string& out) {
    CLI::App app{"collsched"};
    Context ctx;
    ctx.out = [&out](std::string_view text) { out.append(text); };
    add_commands(app, ctx);
    if (auto unknown = unknown_subcommand(app, args)) throw InputError(*unknown);
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the arguments last first
    try {
        app.parse(reversed);
    } catch (const CLI::Success&) {
        throw InputError("--help and --version print to the terminal: run `collsched --help`");
    } catch (const CLI::ParseError& e) {
        throw InputError(shorten_quotes(usage_message(app, e)));
    }
    return ctx.exit_code;
}

}  // namespace collsched::tools
