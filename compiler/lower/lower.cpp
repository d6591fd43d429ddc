#include "compiler/lower/lower.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/lower/arbitrate.hpp"
#include "compiler/lower/check_holds.hpp"
#include "compiler/lower/evaluate.hpp"
#include "compiler/table/partials.hpp"
#include "compiler/core/input_file.hpp"
#include "compiler/lower/resolve.hpp"
#include "compiler/lower/stream.hpp"
#include "dsl/parser.hpp"

namespace collsched {

std::string_view to_string(LoweringPolicy p) {
    switch (p) {
        case LoweringPolicy::cut_through: return "cut-through";
        case LoweringPolicy::fifo: return "fifo";
        case LoweringPolicy::flood: return "flood";
        case LoweringPolicy::adaptive: return "adaptive";
    }
    return "?";
}

// The pipeline. Each pass reports all of its errors; the driver stops before the next pass when
// there were any. Reporter::report throws compiler::Stop after too many errors or at a limit.
std::optional<SendTable> compile(const dsl::ast::Program& program, const CompileOptions& options, Diagnostics& diags) {
    using namespace compiler;
    IR ir = resolve(program, options.defines, diags);  // names, types, placement
    if (diags.has_errors()) return std::nullopt;
    Reporter reporter(diags);
    try {
        Evaluated ev = evaluate(ir, options, reporter);  // run: declarations, sends, hops, claims
        if (diags.has_errors()) return std::nullopt;
        arbitrate(ev, reporter);  // fifo, flood, adaptive: when each send crosses each channel
        if (diags.has_errors()) return std::nullopt;
        std::vector<std::uint32_t> origins;
        const std::size_t channels = ev.topology->channels().size();
        std::vector<Transfer> transfers =
            options.record_locations ? ev.sink.take_sorted_with_origins(origins, channels) : ev.sink.take_sorted(channels);
        check_holds(transfers, ev, reporter,  // every send moves data its source holds
                    [&](std::span<const std::size_t> failed) { return pending_contexts(ir, options, reporter, failed); });
        if (diags.has_errors()) return std::nullopt;
        SendTable table = ev.header(true);
        table.transfers = std::move(transfers);
        table.normalize_rounds();
        table.transfer_origins = std::move(origins);
        table.origins = std::move(ev.origin_names);
        table.composites = std::move(ev.composites);  // canonicalize_composites sorts; the origins follow
        resolve_partials(table);                        // partial(p, c): what p's buffer holds when it sends
        table.canonicalize_composites();
        // What the table readers refuse (composite_problem) is refused here too, so that compile
        // never writes a table that verify refuses; the statements themselves say where (E048).
        if (std::string why = composite_problem(table); !why.empty()) {
            diags.error("E048", {}, why);
            return std::nullopt;
        }
        reporter.flush_warnings();
        return table;
    } catch (const Stop&) {
        return std::nullopt;
    }
}

bool compile_stream(std::string_view text, const std::string& name, const CompileOptions& options, Diagnostics& diags,
                    StepConsumer& consumer) {
    using namespace compiler;
    diags = Diagnostics(name, std::string(text));
    auto program = dsl::parse(text, name, diags);
    if (!program) return false;
    IR ir = resolve(*program, options.defines, diags);
    if (diags.has_errors()) return false;
    Reporter reporter(diags);
    try {
        Evaluated ev = evaluate(ir, options, reporter, &consumer);  // hands the steps over as they are final
        if (diags.has_errors()) return false;
        consumer.finish(ev.header(true));
        reporter.flush_warnings();
        return true;
    } catch (const Stop&) {
        return false;
    }
}

std::optional<SendTable> compile_text(std::string_view text, const std::string& name, const CompileOptions& options,
                                      Diagnostics& diags) {
    diags = Diagnostics(name, std::string(text));
    auto program = dsl::parse(text, name, diags);
    if (!program) return std::nullopt;
    return compile(*program, options, diags);
}

bool parse_defines(const std::vector<std::string>& defines, std::vector<Define>& out, Diagnostics& diags) {
    bool ok = true;
    for (const std::string& d : defines) {
        std::size_t eq = d.find('=');
        std::string_view name = std::string_view(d).substr(0, eq);
        bool name_ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                       std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
        std::int64_t v = 0;
        bool value_ok = false;
        if (eq != std::string::npos) {
            std::string_view text = std::string_view(d).substr(eq + 1);
            auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            value_ok = !text.empty() && ec == std::errc{} && p == text.data() + text.size();
        }
        if (!name_ok || !value_ok) {
            diags.error("E006", {}, fmt::format("-D {}: expected name=integer, for example -D n=16", d));
            ok = false;
            continue;
        }
        auto it = std::find_if(out.begin(), out.end(), [&](const Define& x) { return x.name == name; });
        if (it != out.end()) it->value = v;  // the last -D of a name wins
        else out.push_back({std::string(name), v});
    }
    return ok;
}

std::optional<SendTable> compile_source(std::string_view text, const std::string& name, const std::vector<std::string>& defines,
                                        CompileOptions options, Diagnostics& diags) {
    diags = Diagnostics(name, std::string(text));
    if (!parse_defines(defines, options.defines, diags)) return std::nullopt;
    auto program = dsl::parse(text, name, diags);
    if (!program) return std::nullopt;
    return compile(*program, options, diags);
}

std::vector<std::string> transfer_contexts(std::string_view text, const std::string& name, const std::vector<std::string>& defines,
                                           const CompileOptions& options, std::span<const Transfer> wanted) {
    using namespace compiler;
    std::vector<std::string> out(wanted.size());
    Diagnostics diags(name, std::string(text));
    CompileOptions run = options;
    run.defines.clear();
    if (!parse_defines(defines, run.defines, diags)) return out;
    auto program = dsl::parse(text, name, diags);
    if (!program) return out;
    IR ir = resolve(*program, run.defines, diags);
    if (diags.has_errors()) return out;
    Reporter reporter(diags);
    try {
        out = compiler::transfer_contexts(ir, run, reporter, wanted);
    } catch (const Stop&) {
        return std::vector<std::string>(wanted.size());
    }
    for (std::string& c : out)  // Env::context: " (when s = 2, k = 0)"
        if (c.starts_with(" (when ") && c.ends_with(")")) c = c.substr(7, c.size() - 8);
    return out;
}

std::optional<SendTable> compile_file(const std::string& path, const std::vector<std::string>& defines, CompileOptions options,
                                      Diagnostics& diags) {
    std::string text;
    if (std::string error = read_input_file(path, "schedule", max_input_bytes(), max_input_hint, text); !error.empty()) {
        diags = Diagnostics(path, "");
        diags.error("E005", {}, "cannot read the schedule file: " + error);
        return std::nullopt;
    }
    if (options.base_dir.empty()) options.base_dir = std::filesystem::path(path).parent_path().string();
    return compile_source(text, path, defines, std::move(options), diags);
}

}  // namespace collsched
