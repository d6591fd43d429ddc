// Shared by the golden and round-trip tests: reading golden programs with their options.
//
// A golden program may start with a line `#! ARGS` giving command-line options for it:
// `-D name=value`, `--max-transfers N`, `--max-iterations N`.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/lower/lower.hpp"
#include "dsl/parser.hpp"

namespace collsched::test {

inline std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

inline bool update_golden() {
    const char* v = std::getenv("COLLSCHED_UPDATE_GOLDEN");
    return v && std::string(v) == "1";
}

inline std::filesystem::path golden_dir(const char* kind) {
    return std::filesystem::path(COLLSCHED_SOURCE_DIR) / "tests" / "golden" / kind;
}

/// The .sched files of tests/golden/<kind>, sorted.
inline std::vector<std::filesystem::path> golden_programs(const char* kind) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(golden_dir(kind)))
        if (e.path().extension() == ".sched") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

struct GoldenOptions {
    std::vector<std::string> defines;
    CompileOptions options;
};

inline GoldenOptions golden_options(const std::string& text) {
    GoldenOptions g;
    if (text.rfind("#!", 0) != 0) return g;
    std::istringstream line(text.substr(2, text.find('\n') - 2));
    std::string tok;
    while (line >> tok) {
        std::string value;
        line >> value;
        if (tok == "-D") g.defines.push_back(value);
        else if (tok == "--max-transfers") g.options.max_transfers = std::stoull(value);
        else if (tok == "--max-iterations") g.options.max_iterations = std::stoull(value);
    }
    return g;
}

/// Compiles `text` (named `name` in messages) with the options of its `#!` line.
inline std::optional<SendTable> compile_golden(const std::string& text, const std::string& name, Diagnostics& diags) {
    GoldenOptions g = golden_options(text);
    diags = Diagnostics(name, text);
    if (!parse_defines(g.defines, g.options.defines, diags)) return std::nullopt;
    auto program = dsl::parse(text, name, diags);
    if (!program) return std::nullopt;
    return compile(*program, g.options, diags);
}

}  // namespace collsched::test
