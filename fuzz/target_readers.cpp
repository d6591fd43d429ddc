// The bodies of the readers' own harnesses (fuzz_chakra, fuzz_msccl; docs/fuzzing.md): the Chakra
// trace reader on a whole trace set held in memory, and the MSCCL-IR reader alone.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/formats/export_chakra.hpp"
#include "compiler/interop/msccl_import.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/report.hpp"
#include "fuzz/targets.hpp"

namespace collsched::fuzz {

std::vector<std::string> split_trace_set(std::string_view input) {
    std::vector<std::string> files;
    while (true) {
        const std::size_t at = input.find(chakra_rank_separator);
        files.emplace_back(input.substr(0, at));
        if (at == std::string_view::npos) break;
        input.remove_prefix(at + chakra_rank_separator.size());
    }
    return files;
}

void run_chakra(std::string_view input) {
    const std::vector<std::string> files = split_trace_set(input);
    auto rank_file = [&](std::uint32_t r) -> std::string {
        if (r >= files.size()) throw InputError(fmt::format("/fuzz/t.{}.et: cannot open file (No such file or directory)", r));
        return files[r];
    };
    auto check_set = [&](std::uint32_t P) {
        if (files.size() != P) throw InputError(fmt::format("/fuzz/t.*.et: {} files for {} ranks", files.size(), P));
    };
    SendTable t;
    try {
        t = parse_chakra("/fuzz/t", rank_file, check_set);
    } catch (const InputError&) {
        return;
    }
    check_table(t);
    // What the reader accepts, the writer writes back as the same table.
    std::vector<ChakraFile> written;
    try {
        written = table_to_chakra(t, {"/fuzz/t", 1024 * std::uint64_t{t.collective.chunks}});
    } catch (const InputError&) {
        return;
    }
    std::vector<std::string> again;
    for (const ChakraFile& f : written)
        if (f.path.ends_with(".et") && f.path.find(".workload.") == std::string::npos) again.push_back(f.content);
    SendTable back;
    try {
        back = parse_chakra(
            "/fuzz/t",
            [&](std::uint32_t r) -> std::string {
                if (r >= again.size()) invariant_failed("the written trace set has too few ranks");
                return again[r];
            },
            [&](std::uint32_t P) {
                if (again.size() != P) invariant_failed("the written trace set has another number of ranks");
            });
    } catch (const InputError& e) {
        invariant_failed(fmt::format("the traces written from an accepted trace set are refused: {}", e.what()));
    }
    if (back.transfers != t.transfers || !(back.collective == t.collective) || !(back.model == t.model) ||
        back.step_rounds != t.step_rounds)
        invariant_failed("the traces written from an accepted trace set read back as another table");
}

/// A program the MSCCL-IR checker says holds is levelled into a table; the direct verifier, a
/// second witness that shares none of the checker's code, must find that table causal and
/// complete (capacity may not hold: the levelled run can put two chunks on one connection in a
/// step). A disagreement is a silent wrong answer of one of the two.
void run_msccl(std::string_view input) {
    SendTable t;
    try {
        t = parse_msccl_ir(input, "fuzz.xml");
    } catch (const InputError&) {
        return;
    }
    check_table(t);
    if (!small(t)) return;
    const VerifyReport r = verify_direct(t, {});
    for (Property p : {Property::causality, Property::completeness})
        if (r.status[static_cast<std::size_t>(p)] == Status::violated)
            invariant_failed(fmt::format("the MSCCL-IR checker says the program holds, but the direct verifier finds its table's {} "
                                         "violated:\n{}",
                                         to_string(p), format_report(r, t)));
}

}  // namespace collsched::fuzz
