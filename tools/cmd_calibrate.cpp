// `collsched calibrate`: an executor model fitted on measured times (docs/time.md, "Calibration"):
// nccl-tests outputs of the user's machine (with --topology), or rows of a measurements table
// (runtime/executor/calibration/measurements.csv's format) for one machine.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiler/io/table_io.hpp"
#include "compiler/machines/machine.hpp"
#include "runtime/executor/measurements.hpp"
#include "support/error.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "verifier/time/calibration.hpp"

namespace collsched::tools {

namespace {

struct CalibrateArgs {
    std::vector<std::string> logs;
    std::string measurements, machine, topology, algorithm = "default", protocol, executor = "nccl", output;
    bool json = false, no_hold_out = false, tuner_plugin = false;
    double timeout = 120;
    std::uint64_t buffsize = 4194304;  // NCCL_BUFFSIZE: bytes, an integer
};

/// A published machine's name (the measurements' `machine` column) as a `collsched machine`
/// family: the box and its NICs. Names not here are reported as skipped.
struct KnownMachine {
    std::string_view name;     ///< as measurements.csv writes it (compared case-insensitively)
    std::string_view family;   ///< collsched machine FAMILY
    double nic_gbps = 0;       ///< 0: the family's
};
constexpr KnownMachine known_machines[] = {
    // ND H100 v5 is an HGX H100 box (NVSwitch with NVLink SHARP: Azure runs NVLS on it) with 8 NICs of 400 Gb/s: dgx-h100
    {"ND H100 v5", "dgx-h100", 0},   {"DGX H100", "dgx-h100", 0},  {"HGX H100", "dgx-h100", 0},
    {"ND H200 v5", "dgx-h200", 0}, {"ND A100 v4", "ndv4", 0},  {"DGX A100", "dgx-a100", 0},
    // GCP A3 Mega: 8 H100 with 8 NICs of 200 Gb/s (GPUDirect-TCPXO); the fit's network hop takes its TCP stack
    {"GCP A3 Mega", "dgx-h100", 200},
};

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    return true;
}

/// The machine file `collsched machine` writes for a family, boxes on rails, NVLS or not, read back.
std::shared_ptr<const Topology> family_topology(const KnownMachine& k, std::uint32_t boxes, bool nvls) {
    machines::Box box = machines::find_family(k.family);
    if (k.nic_gbps > 0) box.nic_gbit = k.nic_gbps;
    machines::MachineOptions o;
    o.boxes = static_cast<int>(boxes);
    o.network = machines::parse_network(boxes > 1 ? "rail" : "none");
    o.nvls = nvls;
    const std::string json = machines::write_machine_json(machines::build_machine(box, o));
    // the graph reader reads files: a private temporary one, removed at once
    std::string path = (std::filesystem::temp_directory_path() / "collsched-calibrate-XXXXXX.json").string();
    const int fd = mkstemps(path.data(), 5);
    if (fd < 0) throw InputError(fmt::format("calibrate: cannot create a temporary file in {}", std::filesystem::temp_directory_path().string()));
    const bool ok = ::write(fd, json.data(), json.size()) == static_cast<ssize_t>(json.size());
    ::close(fd);
    std::shared_ptr<const Topology> t;
    try {
        if (!ok) throw InputError(fmt::format("calibrate: cannot write the temporary machine file {}", path));
        t = Topology::parse("graph:" + path);
    } catch (...) {
        std::filesystem::remove(path);
        throw;
    }
    std::filesystem::remove(path);
    return t;
}

Protocol protocol_of(std::string_view s, std::string_view what) {
    if (s.empty() || s == "default") return Protocol::none;
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple})
        if (iequal(s, to_string(p))) return p;
    throw InputError(fmt::format("{}: unknown protocol \"{}\" (LL, LL128, Simple, default)", what, s));
}

std::string algorithm_of(std::string_view s, std::string_view what) {
    for (std::string_view a : {"default", "ring", "tree", "pat", "nvls", "nvls_tree"})
        if (iequal(s, a)) return std::string(a);
    throw InputError(fmt::format("{}: unknown algorithm \"{}\" (default, ring, tree, pat, nvls, nvls_tree)", what, s));
}

/// A comma-separated list (NCCL_ALGO's and NCCL_PROTO's form); empty for an empty string.
std::vector<std::string> split_list(std::string_view s) {
    std::vector<std::string> out;
    for (std::size_t at = 0, end = 0; at <= s.size() && !s.empty(); at = end + 1) {
        end = std::min(s.find(',', at), s.size());
        out.emplace_back(s.substr(at, end - at));
    }
    return out;
}

/// The cases of nccl-tests outputs on --topology: every row's out-of-place time.
std::vector<CalibrationCase> log_cases(const CalibrateArgs& a, std::vector<std::string>& notes) {
    if (a.topology.empty()) throw InputError("calibrate: nccl-tests outputs need --topology (the machine they ran on: graph:FILE from `collsched machine`)");
    const std::shared_ptr<const Topology> topo = Topology::parse(a.topology);
    std::vector<CalibrationCase> cases;
    for (const std::string& file : a.logs) {
        const executor::NcclTestsRun run = executor::read_nccl_tests(read_input_text(file, "nccl-tests output"), file);
        const auto kind = executor::operation_row(run.operation).kind;
        if (!kind) throw InputError(fmt::format("{}: sendrecv_perf times no collective; calibrate reads the collectives' outputs", file));
        if (run.ranks != 0 && run.ranks != topo->processors())
            throw InputError(fmt::format("{}: {} ranks, but {} has {} processors", file, run.ranks, a.topology, topo->processors()));
        std::vector<std::string> empty;  // rows that time nothing: said, not fitted (they were left out silently)
        for (const executor::NcclTestsRow& r : run.rows) {
            if (r.size_bytes == 0 || r.out_of_place.time_us <= 0) {
                empty.push_back(fmt::format("{} B", r.size_bytes));
                continue;
            }
            CalibrationCase c;
            c.label = fmt::format("{} {}", std::filesystem::path(file).filename().string(), r.size_bytes);
            c.series = file;
            c.topology = topo;
            c.collective = *kind;
            c.size = static_cast<double>(r.size_bytes);
            c.measured = r.out_of_place.time_us * 1e-6;
            // NCCL_ALGO's and NCCL_PROTO's form: one, or a list NCCL's tuner (or the plugin) picks from
            for (const std::string& alg : split_list(a.algorithm)) c.algorithms.push_back(algorithm_of(alg, "--algorithm"));
            c.algorithm = c.algorithms.size() == 1 ? c.algorithms.front() : "default";
            if (c.algorithms.size() == 1 || c.algorithm == "default") c.algorithms.clear();
            for (const std::string& p : split_list(a.protocol)) c.protocols.push_back(protocol_of(p, "--protocol"));
            if (c.protocols.size() == 1) c.protocol = c.protocols.front(), c.protocols.clear();
            c.tuner_plugin = a.tuner_plugin;
            c.nccl_version = run.nccl_version;
            c.buffsize = static_cast<double>(a.buffsize);
            cases.push_back(std::move(c));
        }
        if (!empty.empty())
            notes.push_back(fmt::format("{}: {} row{} of size 0 or out-of-place time 0 not fitted (sizes {})", file, empty.size(),
                                        empty.size() == 1 ? "" : "s", fmt::join(empty, ", ")));
    }
    return cases;
}

/// The cases of a measurements table: NCCL's rows of one machine.
std::vector<CalibrationCase> table_cases(const CalibrateArgs& a) {
    if (a.machine.empty())
        throw InputError("calibrate --measurements needs --machine NAME (the table's `machine` column, e.g. \"ND H100 v5\"): a "
                         "calibration is for one machine");
    const KnownMachine* known = nullptr;
    for (const KnownMachine& k : known_machines)
        if (iequal(k.name, a.machine)) known = &k;
    if (!known) {
        std::string names;
        for (const KnownMachine& k : known_machines) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", k.name);
        throw InputError(fmt::format("calibrate: no machine file for \"{}\" (known: {})", a.machine, names));
    }
    const std::vector<executor::Measurement> rows =
        executor::read_measurements_csv(read_input_text(a.measurements, "measurements table"), a.measurements);
    std::map<std::pair<std::uint32_t, bool>, std::shared_ptr<const Topology>> machines;
    std::vector<CalibrationCase> cases;
    for (const executor::Measurement& m : rows) {
        if (!iequal(m.machine, a.machine) || m.library != "nccl") continue;
        const auto kind = executor::operation_row(m.operation).kind;
        if (!kind) continue;
        std::string alg;
        try {
            alg = algorithm_of(m.algorithm, "algorithm");
        } catch (const InputError&) {
            continue;  // a custom kernel, not one of NCCL's algorithms
        }
        const machines::Box& box = machines::find_family(known->family);
        if (m.gpus_per_box && *m.gpus_per_box != static_cast<std::uint32_t>(box.gpus)) continue;
        const bool nvls = m.intra == "nvswitch-nvls" || alg == "nvls" || alg == "nvls_tree";
        auto& topo = machines[{m.boxes, nvls}];
        if (!topo) topo = family_topology(*known, m.boxes, nvls);
        CalibrationCase c;
        c.label = fmt::format("row {}", m.id);
        c.series = fmt::format("{} {} {} x {} {} {} {}", m.source, m.locator, m.machine, m.boxes, executor::operation_row(m.operation).name,
                               alg, m.protocol);
        c.topology = topo;
        c.collective = *kind;
        c.size = m.size_bytes;
        c.measured = executor::time_seconds(m);
        c.algorithm = alg;
        c.protocol = protocol_of(m.protocol, fmt::format("{}: row {}", a.measurements, m.id));
        c.nccl_version = m.version;
        c.buffsize = static_cast<double>(a.buffsize);
        cases.push_back(std::move(c));
    }
    if (cases.empty()) throw InputError(fmt::format("calibrate: {} has no NCCL rows of \"{}\"", a.measurements, a.machine));
    return cases;
}

nlohmann::ordered_json report_json(const CalibrationReport& r) {
    nlohmann::ordered_json j;
    j["executor"] = r.model.name;
    j["calibration"] = nlohmann::ordered_json::parse(write_calibration(r.calibration));
    j["rounds"] = r.rounds;
    j["stopped_by_time_limit"] = r.cut;  // the constants are the best so far (exit 3)
    j["heldout_median"] = r.heldout_median;
    j["heldout_worst"] = r.heldout_worst;
    j["builtin_median"] = r.builtin_median;
    j["nccl_model_median"] = r.nccl_median;
    j["nccl_model_worst"] = r.nccl_worst;
    auto& rows = j["rows"] = nlohmann::ordered_json::array();
    for (const CalibrationResult& c : r.rows) {
        nlohmann::ordered_json x{{"label", c.label}, {"series", c.series}, {"size", c.size}, {"measured_s", c.measured}};
        if (!c.skipped.empty()) {
            x["skipped"] = c.skipped;
        } else {
            x["algorithm"] = c.algorithm;
            x["protocol"] = std::string(to_string(c.protocol));
            if (!c.layout.empty()) x["layout"] = c.layout;
            x["set"] = c.train ? "fit" : "held-out";
            x["builtin_s"] = c.builtin;
            x["fitted_s"] = c.fitted;
            if (c.nccl_model) x["nccl_model_s"] = *c.nccl_model;
        }
        rows.push_back(std::move(x));
    }
    return j;
}

void run_calibrate(const CalibrateArgs& a, Context& ctx) {
    if (a.logs.empty() == a.measurements.empty())
        throw InputError("calibrate: give nccl-tests outputs (LOG... with --topology) or --measurements FILE.csv with --machine, not both");
    const std::optional<ExecutorKind> ek = parse_executor(a.executor);
    if (!ek || *ek == ExecutorKind::ideal)
        throw InputError(fmt::format("--executor: \"{}\" cannot be calibrated (nccl, mscclpp, msccl)", a.executor));
    if (!a.topology.empty() && a.logs.empty()) throw InputError("calibrate: --topology goes with nccl-tests outputs; a table names its machines");
    CalibrationOptions o;
    o.executor = *ek;
    o.deadline = Deadline::after(a.timeout);
    o.hold_out = !a.no_hold_out;
    std::vector<CalibrationCase> cases;
    std::vector<std::string> notes;
    if (!a.logs.empty()) {
        cases = log_cases(a, notes);
        o.machine = a.topology;
        o.fitted_on = fmt::format("{} nccl-tests output{}", a.logs.size(), a.logs.size() == 1 ? "" : "s");
    } else {
        cases = table_cases(a);
        o.machine = a.machine;
        o.fitted_on = a.measurements;
    }
    CalibrationReport r;
    try {
        r = calibrate(cases, o);
    } catch (const InputError& e) {
        if (a.logs.empty()) throw InputError(fmt::format("{}: {}", a.measurements, e.what()));  // the table's rows ("row 246"): name the table
        throw;
    }
    if (!a.output.empty())
        write_output(a.output, [&](const Flush& flush, fmt::memory_buffer& buf) {
            buf.append(write_calibration(r.calibration));
            flush(buf);
        });
    if (a.json) {
        nlohmann::ordered_json j = report_json(r);
        if (!notes.empty()) j["notes"] = notes;
        ctx.print(j.dump(2) + "\n");
    } else {
        std::string text = calibration_text(r);
        for (const std::string& n : notes) text += "note: " + n + "\n";
        ctx.print(text);
    }
    ctx.exit_code = r.cut ? 3 : 0;  // the best constants so far, written and said
}

}  // namespace

void add_calibrate_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "calibrate",
        "Fit an executor model (launch, link efficiencies, network hop) to measured times: nccl-tests outputs of your machine "
        "(LOG... --topology graph:M.json) or a measurements table's rows of one machine (--measurements FILE.csv --machine NAME). "
        "Prints every row's measured and predicted time and error, the held-out error beside NCCL's own model's; -o writes the "
        "calibration that --calibration reads (docs/time.md, \"Calibration\").\nExit code: 0 fitted, 2 bad input, 3 time limit (before the tables were built: nothing written; during the fit: the best constants so far, printed and written, and said).");
    auto a = std::make_shared<CalibrateArgs>();
    cmd->add_option("LOG", a->logs, "nccl-tests outputs (all_reduce_perf, all_gather_perf, reduce_scatter_perf, ...) as they print them")
        ->check(file_option());
    cmd->add_option("--topology", a->topology, "The machine the outputs ran on (graph:FILE, e.g. from `collsched machine`)");
    cmd->add_option("--measurements", a->measurements,
                    "A measurements table (runtime/executor/calibration/measurements.csv's columns)")
        ->check(file_option());
    cmd->add_option("--machine", a->machine, "With --measurements: the machine whose rows are fitted (its `machine` column)");
    cmd->add_option("--algorithm", a->algorithm,
                    "What the outputs ran (NCCL_ALGO): default (NCCL's tuner's pick, by NCCL's model), ring, tree, pat, nvls, "
                    "nvls_tree, or a list NCCL picked from (ring,tree)")
        ->check([](const std::string& s) {
            try {
                const std::vector<std::string> list = split_list(s);
                for (const std::string& alg : list)
                    if (algorithm_of(alg, "--algorithm") == "default" && list.size() > 1)
                        return std::string("--algorithm: \"default\" stands alone (a list names the algorithms NCCL picked from)");
            } catch (const InputError& e) {
                return std::string(e.what());
            }
            return std::string();
        });
    cmd->add_option("--protocol", a->protocol, "The protocol they ran (NCCL_PROTO): LL, LL128, Simple, or a list NCCL picked from (LL,Simple; default: NCCL's pick of all)");
    cmd->add_flag("--tuner-plugin", a->tuner_plugin,
                  "The outputs ran with NCCL_TUNER_PLUGIN: each row is predicted as the executor model's fastest of the algorithms "
                  "and protocols allowed (the plugin's pick), not NCCL's model's");
    cmd->add_option("--buffsize", a->buffsize,
                    "The outputs' NCCL_BUFFSIZE in bytes (default 4194304, NCCL's): NCCL's tree in Simple forwards chunks of an eighth of it")
        ->check(CLI::Range(std::uint64_t{65536}, std::uint64_t{1} << 30));
    cmd->add_option("--executor", a->executor, "The executor whose constants are fitted: nccl (default), msccl, mscclpp");
    cmd->add_flag("--no-hold-out", a->no_hold_out, "Fit on every row (default: every other size of each sweep is held out and reported)");
    cmd->add_option("--timeout", a->timeout, "Seconds for the whole run (default 120): the fit stops with its best constants")
        ->check(seconds_option(false));
    cmd->add_option("-o,--output", a->output, "Write the calibration (collsched.calibration/1) to this file")->check(file_option());
    cmd->add_flag("--json", a->json, "Print one JSON object instead of text");
    cmd->callback([&ctx, a] { run_calibrate(*a, ctx); });
}

}  // namespace collsched::tools
