#include "tools/input.hpp"

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include "compiler/lower.hpp"
#include "compiler/table_io.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched::tools {

SendTable load_input(const std::string& path, const std::vector<std::string>& defines) {
    if (path.size() >= 6 && path.ends_with(".sched")) {
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
    try {
        return read_table(path);
    } catch (const InputError& e) {
        // Every error from a file names the file: messages of the stages a reader calls (a
        // topology spec, a collective, a model inside the table) do not know it.
        std::string_view what = e.what();
        if (what.starts_with(path)) throw;
        throw InputError(fmt::format("{}: {}", path, what));
    }
}

}  // namespace collsched::tools
