// Every MSCCL++ plan the exporters write is read back and verified before it is written (docs/exports.md, "Writing
// MSCCL++ plans"): the plan's JSON from export_mscclpp.cpp (puts) or export_mscclpp_switch.cpp (switch channels).
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/interop/export_mscclpp_moves.hpp"
#include "compiler/interop/export_mscclpp_switch.hpp"
#include "compiler/interop/mscclpp_check.hpp"
#include "support/error.hpp"
#include "support/teardown.hpp"
#include "support/trace.hpp"

namespace collsched {

std::string table_to_mscclpp(const SendTable& t, const MscclppOptions& opt) {
    const bool through_switch = detail::uses_switch_functions(t);
    std::string text = (through_switch ? detail::switch_plan(t, opt) : detail::puts_plan(t, opt)) + "\n";
    trace("mscclpp plan: written, {} bytes", text.size());
    if (opt.deadline.passed()) throw LimitReached("time limit (the MSCCL++ plan is written, not yet read back and checked)");
    // every export is read back and verified before it is written; past the deadline the command ends, and the plan
    // read back is left to the operating system (support/teardown.hpp)
    auto held = std::make_shared<mscclpp::ReadResult>();
    mscclpp::ReadResult& read = *held;
    mscclpp::PlanReport rep;
    try {
        try {
            read = mscclpp::read_plan(text, "the plan", opt.deadline);
        } catch (const InputError& e) {
            throw InputError(fmt::format("the MSCCL++ plan written for {} on {} does not read back (a bug in collsched; please report it): {}",
                                         t.collective.to_string(), t.topology->spec(), e.what()));
        }
        trace("mscclpp plan: read back");
        if (opt.deadline.passed()) throw LimitReached("time limit (the MSCCL++ plan is read back, not yet checked)");
        rep = mscclpp::check_plan(read, {}, opt.deadline);
    } catch (const LimitReached&) {
        bury(std::move(held));
        throw;
    }
    trace("mscclpp plan: checked");
    if (!rep.holds()) {
        if (rep.unknown())  // a limit of the checker, not a fault of the plan: no plan is written unverified
            throw InputError(fmt::format("cannot write an MSCCL++ plan for {} on {}: the plan's data races are beyond the checker ({}): fewer pieces",
                                         t.collective.to_string(), t.topology->spec(), rep.race_note));
        std::string first = rep.findings.empty() ? "it could not be modelled" : mscclpp::format_finding("the plan", rep.findings.front());
        throw InputError(fmt::format("the MSCCL++ plan written for {} on {} does not verify (a bug in collsched; please report it): {}",
                                     t.collective.to_string(), t.topology->spec(), first));
    }
    if (opt.instances == 1 && !through_switch) {  // switch ops move nothing the movement report lists; the result check stands
        auto want = table_movement(t);
        std::vector<std::tuple<int, int, std::vector<std::pair<int, int>>>> have;
        for (const mscclpp::Movement& m : rep.movement) have.emplace_back(m.from, m.to, m.value);
        std::sort(have.begin(), have.end());
        if (have != want)
            throw InputError(fmt::format("the MSCCL++ plan written for {} on {} moves other data than the table ({} copies between GPUs "
                                         "against {} endpoint transfers; a bug in collsched)",
                                         t.collective.to_string(), t.topology->spec(), have.size(), want.size()));
    }
    if (opt.read_back) {  // the plan as it runs: its copies in the steps of its as-soon-as-possible run
        opt.read_back->reset();
        try {
            *opt.read_back = mscclpp::plan_table(read.plan, rep, t.topology);
        } catch (const InputError& e) {
            trace("mscclpp plan: no table to time ({})", e.what());
        }
    }
    return text;
}

void write_table_mscclpp(const SendTable& t, const MscclppOptions& opt, fmt::memory_buffer& out, const Flush& flush) {
    std::string text = table_to_mscclpp(t, opt);
    out.append(text.data(), text.data() + text.size());
    flush(out);
}

}  // namespace collsched
