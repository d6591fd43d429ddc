#include "tools/input.hpp"

#include <fmt/format.h>

#include "compiler/table_io.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched::tools {

SendTable load_input(const std::string& path, const std::vector<std::string>& defines) {
    if (path.size() >= 6 && path.ends_with(".sched"))
        throw InputError(fmt::format("{}: schedules are not supported yet (the DSL lands with issue 3)", path));
    if (!defines.empty()) throw InputError("-D applies to .sched schedules only, not to table files");
    return read_table(path);
}

}  // namespace collsched::tools
