/** \file
 * What `collsched tune` and `collsched deploy` read alike: the machine, with a did-you-mean among
 * the machine files beside it, and `--collectives` (cli/tune_args.hpp).
 */
#include "cli/tune_args.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "support/edit_distance.hpp"
#include "support/error.hpp"
#include "verifier/time/nccl_tuner.hpp"

namespace collsched::tools {

namespace {

/// The closest machine file to a spec that names none: among the .json files of its folder (a bare
/// name: of schedules/machines), within a third of its length. "" when none is close, and for a
/// file that is there (its own error is the answer, never a hint that names it again).
std::string machine_hint(const std::string& spec) {
    const bool graph = spec.starts_with("graph:");
    if (!graph && spec.find(':') != std::string::npos) return "";
    const std::filesystem::path path = graph ? spec.substr(6) : spec;
    std::error_code exists;
    if (graph && std::filesystem::exists(path, exists)) return "";
    const std::filesystem::path dir = graph ? (path.has_parent_path() ? path.parent_path() : ".") : "schedules/machines";
    const std::string want = path.stem().string();
    std::string best;
    std::size_t d = want.size() / 3 + 1;
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec))
        if (f.path().extension() == ".json")
            if (std::size_t e = support::edit_distance(want, f.path().stem().string()); e < d) d = e, best = (dir / f.path().filename()).string();
    return best.empty() ? "" : "graph:" + best;
}

}  // namespace

std::shared_ptr<const Topology> read_machine(const std::string& spec) {
    try {
        return Topology::parse(spec);
    } catch (const InputError& e) {
        const std::string hint = machine_hint(spec);
        if (hint.empty()) throw;
        throw InputError(fmt::format("--topology: {}; did you mean {}?", e.what(), hint));
    }
}

/// `--collectives a,b,...`: the collectives NCCL's tuner covers, by collsched's names or plugin.c's.
std::vector<CollectiveKind> parse_collectives(const std::string& text) {
    std::vector<CollectiveKind> out;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t comma = std::min(text.find(',', at), text.size());
        const std::string name = text.substr(at, comma - at);
        at = comma + 1;
        std::optional<CollectiveKind> found;
        std::string best, names;
        std::size_t d = 3;
        for (CollectiveKind k : tuner_collectives) {
            const std::string_view ours = collective_row(k).name, theirs = tuner_collective_name(k);
            names += (names.empty() ? "" : ", ") + std::string(ours);
            if (name == ours || name == theirs) found = k;
            if (std::size_t e = support::edit_distance(name, ours); e < d) d = e, best = ours;
        }
        if (!found)
            throw InputError(fmt::format("--collectives: \"{}\" is not a collective NCCL's tuner covers{} ({})", name,
                                         best.empty() ? "" : fmt::format("; did you mean \"{}\"?", best), names));
        if (std::find(out.begin(), out.end(), *found) == out.end()) out.push_back(*found);
    }
    return out;
}

}  // namespace collsched::tools
