// `--size-range A..B` of the MSCCL++ export (docs/exports.md): the plan's min_message_size and
// max_message_size, as the executor reads them; and the writers' refusal of a range that serves no size.
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/interop/export_mscclpp_switch.hpp"
#include "support/error.hpp"
#include "support/units.hpp"

namespace collsched {

void parse_size_range(const std::string& text, MscclppOptions& opt) {
    auto bad = [&](std::string_view why) {
        return InputError(fmt::format("bad --size-range '{}': {} (expected A..B with 0 <= A <= B, e.g. 1M..64M, either side may be left "
                                      "out; NCCL's sizes, docs/time.md \"Sizes\")",
                                      text, why));
    };
    const auto dots = text.find("..");
    if (dots == std::string::npos) throw bad("not A..B");
    auto side = [&](std::string_view s, std::uint64_t none) -> std::uint64_t {
        if (s.empty()) return none;
        // a plain count of bytes exactly, up to 2^64 - 1 (a double rounds 2^64 - 1, the default maximum, up to 2^64)
        if (s.find_first_not_of("0123456789") == std::string_view::npos) {
            std::uint64_t n = 0;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
            if (ec != std::errc{} || end != s.data() + s.size()) throw bad(fmt::format("{} is above 2^64 - 1 bytes", s));
            return n;
        }
        std::string why;
        auto v = support::parse_bytes(s, &why);
        if (!v) throw bad(why.empty() ? fmt::format("{} is not a size", s) : why);
        if (*v != std::floor(*v)) throw bad(fmt::format("{} is not a whole number of bytes", s));
        if (*v >= 18446744073709551616.0) throw bad("above 2^64 bytes");
        return std::uint64_t(*v);
    };
    const std::uint64_t lo = side(std::string_view(text).substr(0, dots), 0);
    const std::uint64_t hi = side(std::string_view(text).substr(dots + 2), ~std::uint64_t(0));
    if (lo > hi) throw bad("the low end is above the high end");
    // the executor reads min_message_size as an int (nlohmann's value() with the default 0, plan.cc:132, 250): the low
    // 32 bits, sign-extended; a low end it would read as another size is refused here, not written
    const std::uint64_t as_read = std::uint64_t(std::int64_t(std::int32_t(std::uint32_t(lo))));
    if (as_read != lo)
        throw bad(fmt::format("the MSCCL++ executor reads min_message_size as a 32-bit int and would take {} as {}; a low end is below "
                              "2147483648 (2 GiB) or from 18446744071562067968 (2^64 - 2^31)",
                              lo, as_read));
    opt.min_message_size = lo;
    opt.max_message_size = hi;
}

void detail::refuse_plan(const SendTable& t, std::string_view why) {
    throw InputError(fmt::format("cannot write an MSCCL++ plan for {} on {}: {}", t.collective.to_string(), t.topology->spec(), why));
}

void detail::check_size_range(const SendTable& t, const MscclppOptions& opt, std::uint64_t input_chunks) {
    const std::uint64_t lo = opt.min_message_size, hi = opt.max_message_size;
    if (lo > hi) detail::refuse_plan(t, fmt::format("--size-range {}..{} is empty", lo, hi));
    const bool ag = t.collective.kind == CollectiveKind::allgather;
    const std::uint64_t P = t.topology->processors(), unit = 16 * input_chunks * (ag ? P : 1);
    const std::uint64_t first = lo == 0 ? unit : (lo + unit - 1) / unit * unit;  // the executor takes no empty call
    if (first < lo || first > hi)
        detail::refuse_plan(t, fmt::format("--size-range {}..{} holds no size the plan can serve: the executor takes multiples of {} bytes "
                              "({}16-byte units times {} input chunks{})",
                              lo, hi, unit, ag ? "the output: " : "", input_chunks, ag ? fmt::format(" times {} GPUs", P) : ""));
}

}  // namespace collsched
