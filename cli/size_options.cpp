// Options for sizes, link speeds and the alpha-beta time (cli/size_options.hpp).
#include "cli/size_options.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "compiler/core/input_file.hpp"
#include "support/edit_distance.hpp"
#include "support/error.hpp"
#include "support/units.hpp"

namespace collsched::tools {

/// The largest buffer size: 2^53 bytes, above which a double does not count every byte.
constexpr double max_size_bytes = 9007199254740992.0;

namespace {

/// Whether a size the double reads as 2^53 bytes is 2^53: 2^53 + 1 written in digits rounds to
/// 2^53 (and was accepted), so digits, with or without "B", are compared as integers; other
/// spellings (a unit, a fraction) are taken as the double reads them.
bool exactly_2_53(std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == 'B')) s.remove_suffix(1);
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return true;
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    return ec == std::errc() && end == s.data() + s.size() && n == (std::uint64_t{1} << 53);
}

}  // namespace

std::vector<double> parse_sizes(std::string_view text) {
    std::vector<double> out;
    auto bad = [&](std::string_view why) {
        return InputError(fmt::format("bad size '{}': {} (sizes are like 1M, 4 KiB, 1K..1G doubling, 1K..1G:4, or a list 1K,1M)",
                                      text, why));
    };
    auto one = [&](std::string_view s) {
        std::string why;
        auto v = support::parse_bytes(s, &why);
        if (!v) throw bad(why);
        // a buffer holds whole bytes, and the time model counts them in doubles (docs/time.md)
        if (*v < 1) throw bad(fmt::format("'{}' is {} bytes; a size is at least 1 byte", s, *v));
        if (*v != std::floor(*v)) throw bad(fmt::format("'{}' is {} bytes; a size is a whole number of bytes", s, *v));
        // 2^53 + 1 written in digits reads as the double 2^53: compare the digits themselves there
        if (*v > max_size_bytes || (*v == max_size_bytes && !exactly_2_53(s)))
            throw bad(fmt::format("'{}' is more than 2^53 bytes (8192 TiB), the largest size whose every byte a double counts exactly", s));
        return *v;
    };
    std::string_view rest = text;
    if (rest.empty()) throw bad("empty");
    while (true) {
        std::size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        if (std::size_t dots = item.find(".."); dots != std::string_view::npos) {
            std::string_view hi_text = item.substr(dots + 2);
            double factor = 2;
            if (std::size_t colon = hi_text.find(':'); colon != std::string_view::npos) {
                std::string f(hi_text.substr(colon + 1));
                hi_text = hi_text.substr(0, colon);
                char* end = nullptr;
                factor = std::strtod(f.c_str(), &end);
                if (f.empty() || *end != 0 || !(factor > 1) || factor > 1e6) throw bad("the factor after ':' must be a number above 1");
            }
            double lo = one(item.substr(0, dots)), hi = one(hi_text);
            if (!(lo > 0) || hi < lo) throw bad("a range needs 0 < low <= high");
            for (double x = lo; x <= hi * (1 + 1e-12); x *= factor) {
                out.push_back(x);
                if (out.size() > 1000) throw bad("more than 1000 sizes");
            }
        } else {
            out.push_back(one(item));
        }
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    if (out.size() > 1000) throw bad("more than 1000 sizes");
    return out;
}

LinkSpeed parse_link(std::string_view text) {
    std::size_t comma = text.find(',');
    std::string why;
    auto fail = [&](std::string_view w) {
        return InputError(fmt::format("bad --link '{}': {} (expected a latency and a bandwidth per unit of capacity, e.g. "
                                      "\"500 ns, 50 GB/s\")", text, w));
    };
    if (comma == std::string_view::npos) throw fail("no comma");
    auto a = support::parse_seconds(text.substr(0, comma), &why);
    if (!a) throw fail(why);
    auto b = support::parse_bandwidth(text.substr(comma + 1), &why);
    if (!b) throw fail(why);
    return {*a, *b};
}

void add_size_option(CLI::App* cmd, std::vector<double>& sizes, std::string_view name, std::string_view help) {
    // Every command that takes sizes takes both spellings (issue 45): `name` is the one --help shows first.
    const std::string names = name == "--sizes" ? "--sizes,--size" : "--size,--sizes";
    cmd->add_option_function<std::string>(names, [&sizes](const std::string& s) { sizes = parse_sizes(s); },
                                          std::string(help))
        ->type_name("SIZES");
}

void add_link_option(CLI::App* cmd, std::optional<LinkSpeed>& link) {
    cmd->add_option_function<std::string>("--link", [&link](const std::string& s) { link = parse_link(s); },
                                          "Predicted time: one latency and bandwidth per unit of capacity for every channel and "
                                          "group instead of the topology's (e.g. \"500 ns, 50 GB/s\"; docs/time.md)")
        ->type_name("ALPHA,BW");
}

void add_executor_options(CLI::App* cmd, std::optional<ExecutorModel>& executor) {
    cmd->add_option_function<std::string>(
           "--executor",
           [&executor](const std::string& s) {
               const std::optional<ExecutorKind> k = parse_executor(s);
               if (!k) {
                   std::string best;
                   std::size_t d = 3;
                   for (std::string_view n : executor_names())
                       if (std::size_t e = support::edit_distance(s, n); e < d) d = e, best = n;
                   throw InputError(fmt::format("--executor: unknown executor \"{}\"{} (ideal, nccl, mscclpp, msccl)", s,
                                                best.empty() ? "" : fmt::format("; did you mean \"{}\"?", best)));
               }
               // a calibration keeps its constants; one of another executor is refused (CLI11 runs the callbacks in their
               // definition order, whatever the command line's, so each option checks the other)
               if (executor && executor->kind == *k) return;
               if (executor && !executor->calibration.empty())
                   throw InputError(fmt::format("--executor {}: the calibration given is of {} (it names its executor; give one of the two)", s,
                                                to_string(executor->kind)));
               executor = builtin_executor(*k);
           },
           "Predicted time: the executor whose costs it includes (docs/time.md, \"Executors\"): ideal (the network's share: links "
           "at peak, nothing for launches, synchronization or messages; the default), nccl, mscclpp or msccl (their launch, "
           "synchronization, per-message costs and link efficiencies, each constant with its source)")
        ->type_name("NAME");
    cmd->add_option_function<std::string>(
           "--calibration",
           [&executor](const std::string& path) {
               const std::string text = read_input_file(path, "calibration", std::uint64_t{16} << 20, "");
               const Calibration c = read_calibration(text, path);
               if (executor && executor->kind != c.executor)
                   throw InputError(fmt::format("--calibration {}: a calibration of {}, but --executor {} (it names its executor; give one of the two)",
                                                path, to_string(c.executor), to_string(executor->kind)));
               executor = calibrated(builtin_executor(c.executor), c);
           },
           "Predicted time: an executor calibrated for this machine (a collsched.calibration/1 file written by `collsched "
           "calibrate`); it names its executor")
        ->type_name("FILE");
}

void add_alpha_beta_options(CLI::App* cmd, AlphaBeta& ab) {
    auto nonneg = CLI::Validator(
        [](std::string& s) -> std::string {
            double v = 0;
            try {
                std::size_t used = 0;
                v = std::stod(s, &used);
                if (used != s.size()) return "expected a number";
            } catch (...) {
                return "expected a number";
            }
            return v >= 0 && v < 1e300 ? "" : "expected a finite number >= 0";
        },
        "NUMBER >= 0");
    cmd->add_option("--alpha", ab.alpha, "Alpha-beta time: the latency of a step")->check(nonneg);
    cmd->add_option("--beta", ab.beta, "Alpha-beta time: the time per unit of data on a link")->check(nonneg);
    add_size_option(cmd, ab.sizes, "--size",
                    "The collective's size M as NCCL counts it (allreduce: one rank's buffer; allgather: the output; "
                    "reduce_scatter and alltoall: one rank's input; docs/time.md, \"Sizes\"): prints the predicted time on the "
                    "topology's link speeds, synchronous and asynchronous, with nccl-tests' algbw and busbw; 1M, 4KiB, 1K..1G "
                    "(doubling) or a list 1K,1M; with --alpha and --beta also the alpha-beta time S*alpha + R*(D/C)*beta (D: "
                    "one datum's bytes at M)");
    add_link_option(cmd, ab.link);
    add_executor_options(cmd, ab.executor);
}

}  // namespace collsched::tools
