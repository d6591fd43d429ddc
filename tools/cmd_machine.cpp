// `collsched machine FAMILY|--nccl-topo FILE|--nvidia-smi FILE [--boxes K] [--network N] ...`:
// writes a machine file (the graph JSON of docs/formats.md; docs/topologies.md, "collsched machine").
#include <charconv>
#include <cstdio>

#include <fmt/format.h>

#include "compiler/io/table_io.hpp"
#include "compiler/machines/machine.hpp"
#include "compiler/machines/nccl_topo.hpp"
#include "support/error.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"

namespace collsched::tools {

namespace {

struct MachineArgs {
    std::string family, nccl_topo, smi_topo, network, switches, units = "links", gpu, output = "-";
    std::optional<std::string> note;
    int boxes = 1, boxes_per_leaf = 4, leaves_per_pod = 4;
    std::optional<double> nic_gbps;
    std::vector<int> nics_down;
    std::vector<std::string> slow_links, slow_nics, slow_gpus, links_down, one_way;
    std::optional<unsigned> renumber;
    bool list = false, nvls = false, sharp = false;
};

double parse_fraction(const std::string& whole, const std::string& frac, std::string_view option) {
    double f = 0;
    auto [p, ec] = std::from_chars(frac.data(), frac.data() + frac.size(), f);
    if (frac.empty() || ec != std::errc{} || p != frac.data() + frac.size() || !(f > 0) || !(f < 1))
        throw InputError(fmt::format("{} '{}': the fraction must be above 0 and below 1", option, whole));
    return f;
}

/// "U-V" (`with_fraction` false) or "U-V:F" with 0 < F < 1, as `option` takes it.
machines::Fault parse_link_fault(const std::string& s, std::string_view option, machines::Fault::Kind kind, bool with_fraction) {
    const auto colon = with_fraction ? s.rfind(':') : s.size(), dash = s.find('-');
    machines::Fault f;
    f.kind = kind;
    if (colon == std::string::npos || dash == std::string::npos || dash > colon || (!with_fraction && s.find(':') != std::string::npos))
        throw InputError(fmt::format("{} '{}': expected U-V{}, e.g. 0-8{} (processors or routers r1.N)", option, s,
                                     with_fraction ? ":FRACTION" : "", with_fraction ? ":0.5" : ""));
    f.u = s.substr(0, dash), f.v = s.substr(dash + 1, colon - dash - 1);
    if (with_fraction) f.fraction = parse_fraction(s, s.substr(colon + 1), option);
    return f;
}

/// "J:F": NIC or GPU J at a fraction 0 < F < 1 of its speed.
machines::Fault parse_part_fault(const std::string& s, std::string_view option, machines::Fault::Kind kind) {
    const auto colon = s.rfind(':');
    int part = -1;
    if (colon != std::string::npos) {
        auto [p, ec] = std::from_chars(s.data(), s.data() + colon, part);
        if (ec != std::errc{} || p != s.data() + colon) part = -1;
    }
    if (part < 0)
        throw InputError(fmt::format("{} '{}': expected {}:FRACTION, e.g. 3:0.5", option, s, kind == machines::Fault::Kind::slow_nic ? "NIC" : "GPU"));
    machines::Fault f;
    f.kind = kind;
    (kind == machines::Fault::Kind::slow_nic ? f.nic : f.gpu) = part;
    f.fraction = parse_fraction(s, s.substr(colon + 1), option);
    return f;
}

machines::MachineOptions machine_options(const MachineArgs& a) {
    machines::MachineOptions o;
    o.boxes = a.boxes;
    o.network = machines::parse_network(a.network.empty() ? "none" : a.network);
    if (a.units == "links") o.units = machines::Units::links;
    else if (a.units == "gpu") o.units = machines::Units::gpu;
    else {
        int v = 0;
        auto [p, ec] = std::from_chars(a.units.data(), a.units.data() + a.units.size(), v);
        if (ec != std::errc{} || p != a.units.data() + a.units.size() || v < 1 || v > 1000)
            throw InputError(fmt::format("--units '{}': expected links, gpu or a capacity per GPU from 1 to 1000", a.units));
        o.units = machines::Units::fixed, o.units_per_gpu = v;
    }
    if (!a.switches.empty()) o.routers = a.switches == "routers";
    o.boxes_per_leaf = a.boxes_per_leaf, o.leaves_per_pod = a.leaves_per_pod;
    using K = machines::Fault::Kind;
    for (int nic : a.nics_down) o.faults.push_back({K::nic_down, nic, -1, "", "", 1});
    for (const auto& s : a.slow_nics) o.faults.push_back(parse_part_fault(s, "--slow-nic", K::slow_nic));
    for (const auto& s : a.slow_gpus) o.faults.push_back(parse_part_fault(s, "--slow-gpu", K::slow_gpu));
    for (const auto& s : a.slow_links) o.faults.push_back(parse_link_fault(s, "--slow-link", K::slow_link, true));
    for (const auto& s : a.links_down) o.faults.push_back(parse_link_fault(s, "--link-down", K::link_down, false));
    for (const auto& s : a.one_way) o.faults.push_back(parse_link_fault(s, "--one-way", K::one_way, false));
    o.renumber = a.renumber;
    o.note = a.note;
    o.nvls = a.nvls;
    o.sharp = a.sharp;
    return o;
}

std::string family_list() {
    std::string s = "Families (collsched machine FAMILY):\n";
    for (const machines::Box& b : machines::families()) {
        std::string fabric = b.fabric == machines::Fabric::switched
                                 ? fmt::format("{} on {}, {} x {} GB/s per GPU", b.gpus, b.switch_name, b.links, b.link_gbs)
                                 : fmt::format("{} in a mesh of {} links of {} GB/s", b.gpus, b.link_name, b.link_gbs);
        std::string nics = b.nics() ? fmt::format("{} NIC{} of {} Gb/s", b.nics(), b.nics() == 1 ? "" : "s", b.nic_gbit) : "no NICs";
        s += fmt::format("  {:<12} {}: {} {}; {}\n", b.family, b.title, fabric, b.gpu, nics);
        for (const auto& src : b.sources) s += fmt::format("  {:<12}   source: {}\n", "", src);
    }
    s += "Networks (--network): none, switch, rail, fat-tree[:O], fat-tree3[:O] (O: oversubscription at the leaves), torus:AxB[xC]\n";
    return s;
}

void run_machine(const MachineArgs& a, Context& ctx) {
    if (a.list) {
        ctx.print(family_list());
        ctx.exit_code = 0;
        return;
    }
    const int sources = !a.family.empty() + !a.nccl_topo.empty() + !a.smi_topo.empty();
    if (sources != 1) throw InputError("collsched machine: give one of FAMILY, --nccl-topo FILE or --nvidia-smi FILE (--list names the families)");
    const auto options = machine_options(a);
    machines::Box box;
    std::vector<std::string> notes;  // what the reader completed: said once the machine is built (a refusal is one line)
    if (!a.family.empty()) {
        if (!a.gpu.empty()) throw InputError("--gpu completes a topology file (--nccl-topo, --nvidia-smi): a family names its GPU");
        box = machines::find_family(a.family);
        if (a.nic_gbps) box.nic_gbit = *a.nic_gbps;
    } else {
        machines::TopoHints hints{a.gpu, a.nic_gbps, options.network.kind != machines::NetKind::none};
        if (!a.gpu.empty()) machines::gpu_sm(a.gpu);  // a bad --gpu is refused before the file is read
        const std::string& file = a.nccl_topo.empty() ? a.smi_topo : a.nccl_topo;
        const std::string text = read_input_text(file, a.nccl_topo.empty() ? "nvidia-smi topo -m output" : "NCCL topology file");
        auto read = a.nccl_topo.empty() ? machines::read_smi_topo(text, file, hints) : machines::read_nccl_topo(text, file, hints);
        for (const auto& said : read.completed) notes.push_back(fmt::format("collsched: {}: {}\n", file, said));
        box = std::move(read.box);
    }
    const std::string json = machines::write_machine_json(machines::build_machine(box, options));
    for (const std::string& n : notes) std::fputs(n.c_str(), stderr);
    if (a.output == "-") {
        ctx.print(json);
    } else {
        write_output(a.output, [&](const Flush& flush, fmt::memory_buffer& buf) {
            buf.append(json);
            flush(buf);
        });
    }
    ctx.exit_code = 0;
}

}  // namespace

void add_machine_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "machine",
        "Write a machine file (a graph file with link groups and speeds): a family of boxes (dgx-h100, ndv5, gb200-nvl72, ...; "
        "--list) or one box read from NCCL's topology XML or `nvidia-smi topo -m`, replicated over a network, with faults.\n"
        "Exit code: 0 written, 2 bad input.");
    auto a = std::make_shared<MachineArgs>();
    cmd->add_option("FAMILY", a->family, "The box: dgx1, dgx2, dgx-a100, dgx-h100, dgx-h200, dgx-b200, gb200-nvl72, ndv2, ndv4, ndv5, mi300x, "
                                         "amd4, amd8, pcie (--list says what each is and where its figures come from)");
    cmd->add_flag("--list", a->list, "List the families and networks with their figures' sources");
    cmd->add_option("--nccl-topo", a->nccl_topo, "One box from NCCL's topology XML (NCCL_TOPO_DUMP_FILE's output, NCCL_TOPO_FILE's input)");
    cmd->add_option("--nvidia-smi", a->smi_topo, "One box from the output of `nvidia-smi topo -m` (needs --gpu)");
    cmd->add_option("--gpu", a->gpu, "The GPU of a topology file that does not say it: v100, a100, h100, h200, b200, gb200");
    cmd->add_option("--nic-gbps", a->nic_gbps, "The NICs' speed in Gb/s where the input does not say it (or over a family's)")
        ->check(number_option(1, 100000));
    cmd->add_option("--boxes", a->boxes, "How many boxes")->check(count_option(1, 4096));
    cmd->add_option("--network", a->network,
                    "Between the boxes: none (one box), switch (one non-blocking switch), rail (NIC j of every box on rail switch j), "
                    "fat-tree[:O] and fat-tree3[:O] (two and three tiers, O:1 oversubscribed at the leaves), torus:AxB[xC]");
    cmd->add_option("--switches", a->switches,
                    "Switches as link groups (SCCL's model, processor-only graphs) or routers (default: groups, routers for fat trees "
                    "and for boxes whose NIC is shared)")
        ->check(CLI::IsMember({"groups", "routers"}));
    cmd->add_option("--units", a->units, "Capacity of a GPU into its box's switch: links (NVLinks, the default), gpu (1) or a number");
    cmd->add_option("--boxes-per-leaf", a->boxes_per_leaf, "Fat trees: boxes under one leaf switch")->check(count_option(1, 4096));
    cmd->add_option("--leaves-per-pod", a->leaves_per_pod, "Three-tier fat trees: leaves under one spine")->check(count_option(1, 4096));
    cmd->add_option("--nic-down", a->nics_down, "A NIC down (machine-wide number: box x NICs per box + j); repeatable")
        ->check(count_option(0, 1 << 20));
    cmd->add_option("--slow-link", a->slow_links, "A link at a fraction of its speed: U-V:F (processors, or routers r1.N), e.g. 0-8:0.5; repeatable");
    cmd->add_option("--slow-nic", a->slow_nics, "A NIC at a fraction of its speed: J:F (machine-wide number, as --nic-down), e.g. 3:0.5; repeatable");
    cmd->add_option("--slow-gpu", a->slow_gpus,
                    "A GPU's port into its box at a fraction of its speed: G:F (all its NVLinks, or k of n links failed: F = (n-k)/n), "
                    "e.g. 0:0.5; repeatable");
    cmd->add_option("--link-down", a->links_down, "A link gone: U-V (processors, or routers r1.N: a switch port); repeatable");
    cmd->add_option("--one-way", a->one_way, "A link that carries only U -> V: U-V (processors or routers r1.N); repeatable");
    cmd->add_option("--renumber", a->renumber,
                    "Number the processors by a permutation drawn from SEED (the same machine; its file then declares no boxes)");
    cmd->add_flag("--nvls", a->nvls,
                  "NVLink SHARP: every box's NVSwitch a router (r1.b) that reduces and multicasts, NCCL's nvlsEfficiency "
                  "(0.85 Hopper, 0.74 Blackwell), joined to each GPU by a channel (type nvls) on the GPU's own links");
    cmd->add_flag("--sharp", a->sharp,
                  "InfiniBand SHARP: the network's switches (rail switches, the one switch, a fat tree's leaves and spines) reduce and "
                  "multicast at the NIC's line rate (NVIDIA SHARPv3 on Quantum-2 NDR, efficiency 1); in the groups layout each becomes "
                  "a router after the NVSwitches, joined to its NICs by a channel (type sharp) inside the NIC's groups. Refused for "
                  "a machine without switches between its boxes (one box, a torus)");
    cmd->add_option("--note", a->note, "The file's note (default: a description of the machine; \"\" for none)");
    cmd->add_option("-o,--output", a->output, "Output file (default: standard output)");
    cmd->callback([&ctx, a] { run_machine(*a, ctx); });
}

}  // namespace collsched::tools
