#include "tools/input.hpp"

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "compiler/export_chakra.hpp"
#include "compiler/lower.hpp"
#include "compiler/table_io.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched::tools {

namespace {

/// The file's text when it is an MSCCL-IR program (first non-blank character '<'), else nullopt.
std::optional<std::string> msccl_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;  // the table reader names the problem
    char c = 0;
    while (in.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
    }
    if (!in || c != '<') return std::nullopt;
    in.seekg(0);
    std::ostringstream text;
    text << in.rdbuf();
    return std::move(text).str();
}

}  // namespace

SendTable load_input(const std::string& path, const std::vector<std::string>& defines, const MscclImportOptions& msccl) {
    const bool sched = path.size() >= 6 && path.ends_with(".sched");
    if (!sched) {
        if (auto xml = msccl_text(path)) {
            if (!defines.empty()) throw InputError("-D applies to .sched schedules only, not to MSCCL-IR files");
            return parse_msccl_ir(*xml, path, msccl);
        }
    }
    if (!msccl.topology.empty()) throw InputError("--topology applies to MSCCL-IR files only (tables and schedules name theirs)");
    if (!sched && is_chakra_trace(path)) {
        if (!defines.empty()) throw InputError("-D applies to .sched schedules only, not to Chakra traces");
        return read_chakra(path.substr(0, path.size() - 5));
    }
    if (sched) {
        Diagnostics diags;
        CompileOptions options;
        options.record_locations = true;  // counterexamples name the send or hop behind them
        std::optional<SendTable> table = compile_file(path, defines, options, diags);
        if (!table) {
            std::string text = diags.render();
            std::fflush(stdout);
            std::fwrite(text.data(), 1, text.size(), stderr);
            std::size_t n = diags.error_count();
            throw InputError(fmt::format("{} error{} in {}", n, n == 1 ? "" : "s", path));
        }
        return std::move(*table);
    }
    if (!defines.empty()) throw InputError("-D applies to .sched schedules only, not to table files");
    return read_table(path);
}

}  // namespace collsched::tools
