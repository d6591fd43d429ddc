#include "cli/input.hpp"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/formats/export_chakra.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/io/table_io.hpp"
#include "dsl/diagnostics.hpp"
#include "dsl/excerpt.hpp"

namespace collsched::tools {

void fail_with_diagnostics(const Diagnostics& diags, std::string_view what) {
    std::size_t n = diags.error_count();
    throw DiagnosticError(diags, fmt::format("{} error{} in {}{}", n, n == 1 ? "" : "s", diags.file(), what));
}

void print_error(const InputError& e, bool json) {
    const auto* d = dynamic_cast<const DiagnosticError*>(&e);
    std::fflush(stdout);
    if (!json) {
        if (d) std::fwrite(d->rendered.data(), 1, d->rendered.size(), stderr);
        std::fprintf(stderr, "collsched: error: %s\n", shorten_quotes(e.what()).c_str());  // long inputs quoted in part
        return;
    }
    nlohmann::ordered_json j;
    j["error"] = shorten_quotes(e.what());
    j["exit_code"] = 2;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    if (d)
        for (const Diagnostic& x : d->list) {
            nlohmann::ordered_json o;
            o["file"] = d->file;
            o["line"] = x.loc.line ? nlohmann::ordered_json(x.loc.line) : nlohmann::ordered_json(nullptr);
            o["column"] = x.loc.line ? nlohmann::ordered_json(x.loc.column) : nlohmann::ordered_json(nullptr);
            o["severity"] = x.severity == Severity::error ? "error" : x.severity == Severity::warning ? "warning" : "note";
            o["code"] = x.code;
            o["message"] = shorten_quotes(x.message);
            list.push_back(o);
        }
    j["diagnostics"] = list;
    std::string out = j.dump() + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
}

void print_stopped(const std::exception& e, bool json) {
    const std::string why = e.what();
    std::string out;
    if (json) {
        nlohmann::ordered_json j;
        j["status"] = why.starts_with("memory") ? "memory" : "timeout";
        j["stopped"] = why;
        j["exit_code"] = 3;
        out = j.dump() + "\n";
    } else {
        out = fmt::format("collsched: stopped before any result: {}\n", why);
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
}

void print_warnings(const Diagnostics& diags) {
    if (diags.warning_count() == 0) return;
    std::string text = diags.render();
    std::fflush(stdout);
    std::fwrite(text.data(), 1, text.size(), stderr);
}

namespace {

bool has_extension(const std::string& path, std::string_view ext) { return path.size() > ext.size() && path.ends_with(ext); }

/// The offset of the first byte no text file has: a NUL or another control byte but tab, line
/// feed, form feed and carriage return, or a byte that starts no valid UTF-8 character.
std::optional<std::size_t> first_binary_byte(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const auto b = static_cast<unsigned char>(text[i]);
        if (b < 0x80) {
            if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f') || b == 0x7f) return i;
            ++i;
            continue;
        }
        const std::size_t n = (b & 0xe0) == 0xc0 && b >= 0xc2 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 && b <= 0xf4 ? 4 : 0;
        if (n == 0 || i + n > text.size()) return i;
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return i;
        i += n;
    }
    return std::nullopt;
}

}  // namespace

SendTable load_input(const std::string& path, const std::vector<std::string>& defines, bool locations, bool strict,
                     const MscclImportOptions& msccl, ScheduleSource* schedule) {
    if (!msccl.topology.empty() && has_extension(path, ".et"))
        throw InputError("--topology applies to MSCCL-IR files and schedules only (tables and traces name theirs)");
    // Chakra traces: PREFIX.<rank>.et names the set; any rank's file reads the whole set (from
    // rank 0's, which names the topology), never as a schedule or table.
    std::string prefix;
    if (std::uint64_t rank = 0; chakra_trace_name(path, prefix, rank)) {
        if (!defines.empty()) throw InputError("-D applies to .sched schedules only, not to Chakra traces");
        return read_chakra(prefix);
    }
    CompileOptions options;
    options.record_locations = locations;
    options.warnings_are_errors = strict;
    options.topology = msccl.topology;  // a schedule's topology statement replaced (docs/dsl.md)
    Diagnostics diags;
    if (has_extension(path, ".sched")) {
        std::optional<SendTable> table = compile_file(path, defines, options, diags);
        if (!table) fail_with_diagnostics(diags);
        print_warnings(diags);
        if (schedule) {
            options.base_dir = std::filesystem::path(path).parent_path().string();  // as compile_file sets it
            *schedule = {diags.text(), path, defines, options};
        }
        return std::move(*table);
    }
    // Standard input and other extensions: a table or a schedule, told apart by the content
    // (a schedule saved as .txt is not CSV). .json and .csv files are tables, read in place
    // (TableFile: mapped, no copy for the fast JSON reader).
    const bool table_name = has_extension(path, ".json") || has_extension(path, ".csv");
    const std::string name = path == "-" ? "<stdin>" : path;
    // An MSCCL-IR program, or a table read by `parse`, or (nullopt) neither.
    auto program_or_table = [&](std::string_view text, auto&& parse) -> std::optional<SendTable> {
        if (looks_like_xml(text)) {
            if (!defines.empty()) throw InputError("-D applies to .sched schedules only, not to MSCCL-IR files");
            return parse_msccl_ir(text, name, msccl);
        }
        if (!msccl.topology.empty() && (table_name || looks_like_table(text)))
            throw InputError("--topology applies to MSCCL-IR files and schedules only (tables name theirs)");
        if (!table_name && !looks_like_table(text)) return std::nullopt;
        if (!defines.empty()) throw InputError("-D applies to .sched schedules only, not to table files");
        try {
            return parse();
        } catch (const InputError& e) {
            // Every error from a file names the file: messages of the stages a reader calls (a
            // topology spec, a collective, a model inside the table) do not know it.
            std::string_view what = e.what();
            if (what.starts_with(name)) throw;
            throw InputError(fmt::format("{}: {}", name, what));
        }
    };
    if (table_name && path != "-") {
        TableFile file(path);
        return std::move(*program_or_table(file.text(), [&] { return file.parse(); }));
    }
    std::string text = read_input_text(path, table_name ? "table" : "table or schedule");
    if (auto t = program_or_table(text, [&] { return parse_table(text, name); })) return std::move(*t);
    // Neither a table nor a program: binary data (a Chakra trace under another name, an image)
    // is refused at its first byte instead of being parsed as a schedule, 20 syntax errors later.
    if (auto at = first_binary_byte(text)) {
        const SourceLoc loc = location_of(text, *at);
        throw InputError(fmt::format("{}:{}:{}: binary data (byte 0x{:02x}), not a table or schedule", name, loc.line, loc.column,
                                     static_cast<unsigned char>(text[*at])));
    }
    if (path != "-") options.base_dir = std::filesystem::path(path).parent_path().string();
    std::optional<SendTable> table = compile_source(text, name, defines, options, diags);
    if (!table) fail_with_diagnostics(diags);
    print_warnings(diags);
    if (schedule) *schedule = {std::move(text), name, defines, options};
    return std::move(*table);
}

std::string output_format(const std::string& format, const std::string& output, bool dsl) {
    if (!format.empty()) return format;
    if (dsl && output.size() > 6 && output.ends_with(".sched")) return "dsl";
    if (const OutputFormat* f = format_of_path(output)) return std::string(f->name);
    return "json";
}

}  // namespace collsched::tools
