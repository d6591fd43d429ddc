// Hostile input, fourth generation (issue 57, "Done when": a fresh campaign over the surfaces of
// issues 43 to 45, new cases and a new seed): `collsched machine` (families, --nccl-topo,
// --nvidia-smi, --switches, --slow-link, --nic-down, --nic-gbps, --nvls, --sharp), NCCL topology
// XML in, NCCL graph files in and out, --size/--sizes strings, MSCCL++ --size-range, `collsched
// compose`, --library, --memory, long paths in messages, and the Python module. Every case runs
// the real executable (or python3 on the module) under the first generations' limits (4 GiB of
// address space, a kill at 120 s) and asserts the contract of docs/errors.md and the README's
// "Commands": exit 0/1/2/3; exit 2 is ONE line on standard error (`collsched: error: `, naming
// file:line:col where there is one), nothing on standard output and no output file; no crash, no
// hang. Two generators, seeded (kSeed): mutated NCCL topology XML, and `machine` option
// combinations; every file `machine` writes is read back by `topo` and by `verify --size` on a
// trivial table (every file the tool writes must be accepted by every reader).
// Inputs whose rule was still open in issue 57 item 8 ("accepted without a word") are asserted
// as "refused (exit 2, one line, the place) or said (exit 0 with a note on standard error)".
// The fast categories run in the default suite; the full machine product and the time limits are
// the ctest entry `hostile_fourth_slow` (label `slow`). This file holds the runner and the machine
// readers' categories; test_hostile_fourth_io.cpp the rest (tests/tools/hostile_probe.hpp). The
// campaign, with its case count:
//   build/tests/test_export_cli -tc='hostile fourth*' -s 2>&1 | grep 'hostile campaign'
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"
#include "tests/tools/hostile_case.hpp"
#include "tests/tools/hostile_probe.hpp"

using namespace collsched;
using collsched::test::slurp;
using collsched::test::source;
using namespace collsched::test::hostile;
using namespace collsched::test::hostile4;

namespace {

struct Ran {
    int code = -1;
    std::string out, err;
    double seconds = 0;
};

/// One command in `dir` under the campaign's limits ({D}: the directory, {C}: the executable).
Ran execute(const std::string& dir, const std::string& line, const std::string& env = "") {
    const std::string err = dir + "/.stderr";
#if defined(__SANITIZE_ADDRESS__)
    const std::string limit;
#else
    const std::string limit = "ulimit -v 4194304; ";
#endif
    const std::string cmd = fmt::format("cd '{}' && {}{} timeout -s KILL 120 {} 2>'{}'", dir, limit, env,
                                        replace_all(replace_all(line, "{D}", dir), "{C}", COLLSCHED_BINARY), err);
    const auto start = std::chrono::steady_clock::now();
    std::FILE* p = ::popen(("bash -c \"" + replace_all(replace_all(cmd, "\\", "\\\\"), "\"", "\\\"") + "\"").c_str(), "r");
    Ran r;
    if (!p) return r;
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = replace_all(slurp(err), dir + "/", "");
    r.out = replace_all(r.out, dir + "/", "");
    std::filesystem::remove(err);
    return r;
}

/// A table of no transfers for the machine in `file`: the readers' trivial input (verify answers
/// 0 or 1, never 2).
std::string trivial_table(const std::string& file) {
    return fmt::format(R"({{"format": "collsched.table/1", "topology": "graph:{}", "collective": "broadcast:0", "transfers": []}})", file);
}

/// Runs one probe in a fresh scratch directory and checks the contract.
void run_probe(const Probe& pr, const std::string& category) {
    const Case& c = pr.c;
    collsched::test::Scratch s("hostile_fourth");
    for (const auto& [name, text] : c.files) {
        std::filesystem::create_directories((s.dir / name).parent_path());
        std::ofstream out(s.dir / name, std::ios::binary);
        out << text;
    }
    const std::string dir = s.dir.string();
    INFO("case: [" << category << "] " << c.name);
    INFO("args: " << c.args);
    if (!c.setup.empty()) {
        const Ran set = execute(dir, c.setup);
        INFO("setup: " << c.setup << "\n" << set.err.substr(0, 1000));
        CHECK(set.code == 0);
        if (set.code != 0) return;
    }
    const Ran r = execute(dir, "{C} " + c.args, c.env);
    INFO("exit: " << r.code << " in " << r.seconds << " s");
    INFO("stderr: " << r.err.substr(0, 2000));
    INFO("stdout: " << r.out.substr(0, 500));
    const bool second = c.or_code >= 0 && r.code == c.or_code;
    if (pr.either)
        CHECK((r.code == 0 || r.code == 2 || second));
    else
        CHECK((r.code == c.code || second));
    const bool refused = r.code == 2;
    if (!c.message.empty() && (!pr.either || refused)) CHECK(r.err.find(c.message) != std::string::npos);
    if (!c.where.empty() && (!pr.either || refused)) CHECK(r.err.find(c.where) != std::string::npos);
    if (!pr.not_message.empty()) CHECK(r.err.find(pr.not_message) == std::string::npos);
    if (!c.out.empty() && !refused) CHECK(r.out.find(second ? c.or_out : c.out) != std::string::npos);
    if (c.max_seconds > 0) CHECK(r.seconds <= c.max_seconds);
    if (refused) {
        CHECK(r.out.empty());
        // one line: `collsched: error: ...\n` (CLI11's "Run with --help" second line is not the contract)
        CHECK(r.err.starts_with("collsched: error: "));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.ends_with("\n"));
        CHECK_MESSAGE(std::none_of(r.err.begin(), r.err.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t'; }),
                      "a raw control byte");
        for (const std::string& f : c.absent) CHECK_MESSAGE(!std::filesystem::exists(s.dir / f), f << " was written");
    }
    if (pr.either && pr.said && r.code == 0) {
        if (pr.said_in.empty())
            CHECK_MESSAGE(!r.err.empty(), "accepted without a word");
        else
            CHECK_MESSAGE((r.out + r.err).find(pr.said_in) != std::string::npos, "accepted without a word");
    }
    if (!pr.then.empty() && r.code == 0) {
        const Ran next = execute(dir, pr.then);
        INFO("then: " << pr.then << "\n" << next.err.substr(0, 1000));
        CHECK((next.code == 0 || next.code == 1));
        CHECK(next.err.find("error") == std::string::npos);
    }
    if (!pr.machine_file.empty() && r.code == 0) {
        // every file `machine` writes is accepted by every reader
        REQUIRE_MESSAGE(std::filesystem::exists(s.dir / pr.machine_file), pr.machine_file << " was not written");
        const Ran topo = execute(dir, "{C} topo graph:" + pr.machine_file);
        INFO("topo: " << topo.err.substr(0, 1000));
        CHECK(topo.code == 0);
        s.file("trivial.json", trivial_table(pr.machine_file));
        const Ran verify = execute(dir, "{C} verify trivial.json --sizes 1K,1G");
        INFO("verify: " << verify.err.substr(0, 1000));
        CHECK((verify.code == 0 || verify.code == 1));
        CHECK(verify.err.find("error") == std::string::npos);
    }
}

}  // namespace

namespace collsched::test::hostile4 {

Probe probe(Case c) {
    Probe p;
    p.c = std::move(c);
    return p;
}

void run_probes(const std::string& category, const std::vector<Probe>& probes) {
    const auto start = std::chrono::steady_clock::now();
    for (const Probe& p : probes) run_probe(p, category);
    MESSAGE("hostile campaign: [" << category << "] " << probes.size() << " cases ("
                                  << fmt::format("{:.1f}", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) << " s)");
}

/// `file:line:col` of byte `at` of `text` (lines and columns from 1).
std::string place(const std::string& file, const std::string& text, std::size_t at) {
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const std::size_t start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t col = at - (start == std::string::npos || at == 0 ? 0 : start + 1) + 1;
    return fmt::format("{}:{}:{}", file, line, col);
}

std::string busid(int g) { return fmt::format("0000:{:02x}:00.0", 0x20 + g); }

std::string nccl_box(const Box& b) {
    std::string s = "<system version=\"1\">\n";
    for (int cpu = 0; cpu < (b.gpus > 1 ? 2 : 1); ++cpu) {
        s += fmt::format("  <cpu numaid=\"{}\" affinity=\"0000ffff\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">\n", cpu);
        for (int g = cpu; g < b.gpus; g += (b.gpus > 1 ? 2 : 1)) {
            s += fmt::format("    <pci busid=\"0000:{:02x}:01.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n", 0x80 + g);
            s += fmt::format("      <pci busid=\"{}\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n", busid(g));
            s += fmt::format("        <gpu dev=\"{}\" sm=\"{}\" rank=\"{}\" gdr=\"1\">\n", g, b.sm, g);
            if (b.links == Links::nvswitch)
                for (int sw = 0; sw < 4; ++sw)
                    s += fmt::format("          <nvlink target=\"0000:{:02x}:00.0\" count=\"{}\" tclass=\"0x068000\"/>\n", 5 + sw, b.per_link);
            if (b.links == Links::mesh)
                for (int h = 0; h < b.gpus; ++h)
                    if (h != g && (h == (g + 1) % b.gpus || g == (h + 1) % b.gpus || (b.gpus <= 4)))
                        s += fmt::format("          <nvlink target=\"{}\" count=\"{}\" tclass=\"0x030200\"/>\n", busid(h), b.per_link);
            s += "        </gpu>\n      </pci>\n";
            if (b.nics)
                s += fmt::format("      <pci busid=\"0000:{:02x}:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
                                 "        <nic>\n          <net name=\"mlx5_{}\" dev=\"{}\" speed=\"400000\" port=\"1\" latency=\"0.000000\" "
                                 "guid=\"0x{:x}\" maxconn=\"131072\" gdr=\"1\"/>\n        </nic>\n      </pci>\n",
                                 0xa0 + g, g, g, 0xa088c20300f1e2d0ull + unsigned(g));
            s += "    </pci>\n";
        }
        s += "  </cpu>\n";
    }
    return s + "</system>\n";
}

}  // namespace collsched::test::hostile4

// ------------------------------------------------------------------------------------------------
// NCCL topology XML: a box as NCCL dumps it (NCCL_TOPO_DUMP_FILE), then mutated by a seeded generator.

namespace {

/// The k-th occurrence (counting from 0, wrapping) of `needle` in `text`, npos for none.
std::size_t nth(const std::string& text, const std::string& needle, std::size_t k) {
    std::vector<std::size_t> at;
    for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) at.push_back(p);
    return at.empty() ? std::string::npos : at[k % at.size()];
}

/// Replaces the value of attribute `attr` at its k-th occurrence; "" drops the attribute; returns false without one.
bool set_attr(std::string& text, const std::string& attr, std::size_t k, const std::string* value, bool duplicate = false) {
    const std::size_t at = nth(text, " " + attr + "=\"", k);
    if (at == std::string::npos) return false;
    const std::size_t end = text.find('"', at + attr.size() + 3);
    const std::string whole = text.substr(at, end + 1 - at);
    if (duplicate)
        text.insert(end + 1, " " + attr + "=\"" + (value ? *value : std::string("7")) + "\"");
    else if (!value)
        text.erase(at, whole.size());
    else
        text.replace(at, whole.size(), " " + attr + "=\"" + *value + "\"");
    return true;
}

}  // namespace

namespace collsched::test::hostile4 {

std::vector<Probe> nccl_mutant_cases(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    const std::vector<std::string> attrs = {"busid", "class", "dev", "sm", "count", "target", "tclass", "speed", "link_width", "link_speed",
                                            "version", "rank", "numaid", "name"};
    const std::vector<std::pair<std::string, std::vector<std::string>>> bad_values = {
        {"sm", {"-1", "0", "59", "1000", "99999999999", "9.0", "", "0x5a", " 90"}},
        {"dev", {"-1", "1099511627776", "64", "1e1", "", "x"}},
        {"count", {"0", "-2", "4294967296", "1.5", "", "18"}},
        {"speed", {"-400000", "0", "nan", "1e300", "", "400000000000"}},
        {"link_width", {"0", "-16", "1024", "w"}},
        {"link_speed", {"x GT/s", "", "64.0 GT/s PCIe", "2.5 GT/s PCIe"}},
        {"class", {"0x03", "0x030201", "0xzz", "", "0x02"}},
        {"busid", {"", "zz", "0000:20:00.0", "0000:20:00.0:1"}},
        {"target", {"", "0000:ff:00.0", "0000:20:00.0"}},
        {"tclass", {"0x030200", "0x068000", "0x0", ""}},
        {"version", {"0", "1.0", "-1", ""}},
    };
    const std::vector<std::string> options = {"", "--gpu h100", "--boxes 2 --network rail", "--boxes 2 --network switch --nic-gbps 200",
                                              "--switches routers", "--boxes 4 --network fat-tree:2 --boxes-per-leaf 2"};
    std::vector<Probe> out;
    for (std::size_t i = 0; i < count; ++i) {
        Box b;
        const int sizes[] = {1, 2, 3, 4, 5, 8, 16};
        b.gpus = sizes[pick(7)];
        b.sm = std::vector<int>{70, 80, 90, 100}[pick(4)];
        b.links = static_cast<Links>(pick(3));
        b.nics = pick(4) != 0;
        b.per_link = 1 + static_cast<int>(pick(6));
        std::string text = nccl_box(b);
        std::string what;
        switch (pick(9)) {
            case 0: {  // an attribute dropped
                const std::string a = attrs[pick(attrs.size())];
                if (set_attr(text, a, pick(64), nullptr)) what = "drop " + a;
                break;
            }
            case 1: case 2: {  // an attribute out of range
                const auto& [a, values] = bad_values[pick(bad_values.size())];
                const std::string v = values[pick(values.size())];
                if (set_attr(text, a, pick(64), &v)) what = a + "=\"" + v + "\"";
                break;
            }
            case 3: {  // an attribute given twice
                const std::string a = attrs[pick(attrs.size())];
                const std::string v = std::to_string(pick(3));
                if (set_attr(text, a, pick(64), &v, true)) what = "duplicate " + a;
                break;
            }
            case 4: {  // an <nvlink> dropped (a mesh link one way), or to itself
                const std::size_t at = nth(text, "<nvlink ", pick(256));
                if (at == std::string::npos) break;
                const std::size_t start = text.rfind('\n', at) + 1, end = text.find('\n', at) + 1;
                if (pick(2) == 0) {
                    text.erase(start, end - start);
                    what = "an <nvlink> dropped";
                } else {
                    const std::size_t gpu = text.rfind("busid=\"", text.rfind("<gpu ", at));
                    const std::string own = text.substr(gpu + 7, 12);
                    text.insert(start, "          <nvlink target=\"" + own + "\" count=\"1\" tclass=\"0x030200\"/>\n");
                    what = "an <nvlink> to itself";
                }
                break;
            }
            case 5: {  // truncated
                const std::size_t cut = 1 + pick(text.size() - 1);
                text.resize(cut);
                what = fmt::format("cut at byte {}", cut);
                break;
            }
            case 6: {  // every GPU the same dev
                for (int g = 0; g < b.gpus; ++g) text = replace_all(text, fmt::format("<gpu dev=\"{}\"", g), "<gpu dev=\"0\"");
                what = "every dev=\"0\"";
                break;
            }
            case 7: {  // a character reference or a raw control byte in a value
                const std::vector<std::string> refs = {"&#0;", "&#1;", "&#x7f;", "&amp;", "&bogus;", "\x01", "&#99999999;"};
                const std::string r = refs[pick(refs.size())];
                const std::size_t at = nth(text, "=\"", pick(128));
                text.insert(at + 2, r);
                what = "reference " + replace_all(r, "\x01", "\\x01");
                break;
            }
            default:  // an element left open, or closed twice
                if (pick(2) == 0) {
                    text = replace_all(text, "</nic>", "");
                    what = "<nic> left open";
                } else {
                    const std::size_t at = nth(text, "</pci>", pick(64));
                    text.insert(at, "</pci>");
                    what = "</pci> twice";
                }
        }
        if (what.empty()) what = "as dumped";
        const std::string opt = options[pick(options.size())];
        Case c;
        c.name = fmt::format("#{} {} GPUs sm {} {} {}: {} ({})", i, b.gpus, b.sm,
                             b.links == Links::none ? "PCIe" : b.links == Links::mesh ? "mesh" : "NVSwitch", b.nics ? "with NICs" : "no NICs", what, opt);
        c.files = {{"x.xml", text}};
        c.args = "machine --nccl-topo x.xml " + opt + " -o m.json";
        c.where = "x.xml";  // its line and column where the problem has one; a box without NICs under a network has none
        c.absent = {"m.json"};
        Probe p = probe(c);
        p.either = true;
        p.machine_file = "m.json";
        out.push_back(p);
    }
    return out;
}

}  // namespace collsched::test::hostile4

namespace {

/// NCCL topology XML whose answer is known: read (and read back), refused at the place, or (issue
/// 57 item 8, the rule decided by NCCL's reader) refused or said.
std::vector<Probe> nccl_known_cases() {
    std::vector<Probe> out;
    auto ok = [&](const std::string& name, const Box& b, const std::string& opt = "") {
        Probe p = probe(make(name, "machine --nccl-topo x.xml " + opt + " -o m.json", {{"x.xml", nccl_box(b)}}, "", 0, ""));
        p.machine_file = "m.json";
        out.push_back(p);
    };
    for (int g : {1, 2, 3, 6, 16})
        for (Links l : {Links::none, Links::nvswitch, Links::mesh}) {
            Box b;
            b.gpus = g;
            b.links = l;
            b.sm = l == Links::mesh ? 70 : 90;
            ok(fmt::format("{} GPUs, {} links, as dumped", g, int(l)), b);
            if (g > 1) ok(fmt::format("{} GPUs, {} links, 3 boxes on a switch", g, int(l)), b, "--boxes 3 --network switch");
        }
    // one box of one GPU written with routers, and with a NIC speed where the file gives one
    Box one;
    one.gpus = 1;
    ok("1 GPU, routers", one, "--switches routers");
    ok("1 GPU, 2 boxes on rails", one, "--boxes 2 --network rail");
    // a mesh link listed under one GPU only: NCCL would use it one way, the machine's links carry both
    for (int g : {2, 5}) {
        Box m;
        m.gpus = g;
        m.links = Links::mesh;
        m.sm = 80;
        std::string text = nccl_box(m);
        const std::string line = fmt::format("          <nvlink target=\"{}\" count=\"2\" tclass=\"0x030200\"/>\n", busid(0));
        const std::size_t gpu1 = text.find("<gpu dev=\"1\"");
        const std::size_t at = text.find(line, gpu1);
        REQUIRE(at != std::string::npos);
        text.erase(at, line.size());
        Case c = make(fmt::format("{} GPUs, GPU 0's link to GPU 1 listed one way only", g), "machine --nccl-topo x.xml -o m.json", {{"x.xml", text}}, "", 2,
                      "one way", "x.xml:", {"m.json"});
        out.push_back(probe(c));
        // the same file, but GPU 1 lists 3 where GPU 0 lists 2: read, the smaller taken, and said
        std::string uneven = nccl_box(m);
        const std::size_t u = uneven.find(line, uneven.find("<gpu dev=\"1\""));
        uneven.replace(u, line.size(), replace_all(line, "count=\"2\"", "count=\"3\""));
        Probe p = probe(make(fmt::format("{} GPUs, counts differ by direction", g), "machine --nccl-topo x.xml -o m.json", {{"x.xml", uneven}}, "", 0, ""));
        p.either = true;
        p.said = true;
        p.machine_file = "m.json";
        out.push_back(p);
    }
    // issue 57 item 8's kinds, in new places: refused with the place, or read and said
    struct Odd {
        std::string name, from, to;
    };
    Box h;
    h.gpus = 4;
    const std::string base = nccl_box(h);
    const std::vector<Odd> odd = {
        {"dev given twice on GPU 2", "<gpu dev=\"2\"", "<gpu dev=\"2\" dev=\"3\""},
        {"sm given twice on GPU 3", "<gpu dev=\"3\" sm=\"90\"", "<gpu dev=\"3\" sm=\"90\" sm=\"80\""},
        {"speed given twice", "speed=\"400000\" port=\"1\"", "speed=\"400000\" speed=\"100000\" port=\"1\""},
        {"sm=\"-7\" on GPU 1", "<gpu dev=\"1\" sm=\"90\"", "<gpu dev=\"1\" sm=\"-7\""},
        {"dev=\"-3\" on GPU 2", "<gpu dev=\"2\"", "<gpu dev=\"-3\""},
        {"dev=2^41 on GPU 0", "<gpu dev=\"0\"", "<gpu dev=\"2199023255552\""},
        {"GPUs 1 and 3 both dev=\"1\"", "<gpu dev=\"3\"", "<gpu dev=\"1\""},
        {"an NVSwitch <nvlink> without a target", "<nvlink target=\"0000:06:00.0\" ", "<nvlink "},
        {"&#0; in a busid", "busid=\"0000:21:00.0\"", "busid=\"0000:21:00.0&#0;\""},
        {"&#0; in a net name", "name=\"mlx5_2\"", "name=\"mlx&#0;5_2\""},
        {"rank given twice", "rank=\"1\"", "rank=\"1\" rank=\"2\""},
    };
    for (const Odd& o : odd) {
        std::string text = base;
        const std::size_t at = text.find(o.from);
        REQUIRE_MESSAGE(at != std::string::npos, o.from);
        text.replace(at, o.from.size(), o.to);
        Probe p = probe(make(o.name, "machine --nccl-topo x.xml -o m.json", {{"x.xml", text}}, "", 0, "", "x.xml:", {"m.json"}));
        p.either = true;
        // an <nvlink> to an NVSwitch has no target NCCL reads (docs/errors.md): nothing to say; the others are said or refused
        p.said = o.name != "an NVSwitch <nvlink> without a target";
        p.machine_file = "m.json";
        out.push_back(p);
    }
    return out;
}

// ------------------------------------------------------------------------------------------------
// `collsched machine` option combinations: every family x switches x network x faults. What is
// written is read back; what is refused is one line. Plain combinations (no fault, no NVLS, no
// SHARP) and a NIC speed must be written.

const std::vector<std::string> families = {"dgx1", "dgx2", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72",
                                           "ndv2", "ndv4", "ndv5", "mi300x", "amd4", "amd8", "pcie"};

}  // namespace

namespace collsched::test::hostile4 {

std::vector<Probe> machine_option_cases(std::size_t sample, unsigned seed) {
    const std::vector<std::string> switches = {"", "--switches groups", "--switches routers"};
    const std::vector<std::string> networks = {"",
                                               "--boxes 2 --network switch",
                                               "--boxes 3 --network rail",
                                               "--boxes 4 --network fat-tree:2 --boxes-per-leaf 2",
                                               "--boxes 8 --network fat-tree3 --boxes-per-leaf 2 --leaves-per-pod 2",
                                               "--boxes 4 --network torus:2x2"};
    const std::vector<std::string> faults = {"", "--nic-gbps 800", "--slow-link 1-0:0.75", "--slow-link 0-2:0.1 --slow-link 2-3:0.9",
                                             "--nic-down 0", "--nvls", "--sharp", "--nvls --sharp --nic-gbps 50"};
    std::vector<Probe> all;
    for (const std::string& f : families)
        for (const std::string& s : switches)
            for (const std::string& n : networks)
                for (const std::string& x : faults) {
                    const std::string args = fmt::format("machine {} {} {} {} -o m.json", f, s, n, x);
                    Case c;
                    c.name = args;
                    c.args = args;
                    c.absent = {"m.json"};
                    Probe p = probe(c);
                    // a NIC down may cut a GPU off, a slow link may name no link, NVLS and SHARP need their hardware, a box
                    // without NICs takes no network, a fat tree's switches are routers: refused in one line, or written and read
                    p.either = true;
                    p.c.code = 0;
                    p.machine_file = "m.json";
                    all.push_back(p);
                }
    if (sample >= all.size()) return all;
    std::mt19937 rng(seed);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(sample);
    return all;
}

}  // namespace collsched::test::hostile4

namespace {

/// Options of `machine` that are refused, one line each (CLI11's refusals included).
std::vector<Probe> machine_refusal_cases() {
    std::vector<Probe> out;
    struct Bad {
        std::string args, message;
    };
    const std::vector<Bad> bad = {
        {"dgx-h100 --nic-gbps nan --boxes 3 --network rail", "--nic-gbps"},
        {"dgx-b200 --nic-gbps -inf --boxes 2 --network switch", "--nic-gbps"},
        {"ndv5 --nic-gbps 100001 --boxes 2 --network rail", "--nic-gbps"},
        {"ndv4 --nic-gbps 0.5 --boxes 2 --network rail", "--nic-gbps"},
        {"mi300x --nic-gbps 1e999 --boxes 2 --network switch", "--nic-gbps"},
        {"dgx-h200 --boxes -2 --network rail", "--boxes"},
        {"dgx-h200 --boxes 4097 --network rail", "--boxes"},
        {"dgx-h200 --boxes 2.5 --network rail", "--boxes"},
        {"dgx2 --switches both", "--switches"},
        {"dgx2 --switches ''", "--switches"},
        {"dgx-a100 --units -1", "--units"},
        {"dgx-a100 --units 1001", "--units"},
        {"dgx-a100 --units nan", "--units"},
        {"amd8 --slow-link 0-1:nan", "--slow-link"},
        {"amd8 --slow-link 0-1:-0.5", "--slow-link"},
        {"amd8 --slow-link 0-1:1", "--slow-link"},
        {"amd8 --slow-link 0-0:0.5", "--slow-link"},
        {"amd8 --slow-link 0:0.5", "--slow-link"},
        {"amd8 --slow-link 0-8:0.5", "--slow-link"},
        {"amd8 --slow-link -1-2:0.5", "--slow-link"},
        {"dgx-h100 --boxes 2 --network rail --nic-down 16", "--nic-down"},
        {"dgx-h100 --boxes 2 --network rail --nic-down -1", "--nic-down"},
        {"dgx-h100 --boxes 2 --network rail --nic-down x", "--nic-down"},
        {"dgx-h100 --boxes 2 --network torus:3x1", ""},
        {"dgx-h100 --boxes 4 --network torus:2x2x0", ""},
        {"dgx-h100 --boxes 4 --network fat-tree:0", ""},
        {"dgx-h100 --boxes 4 --network fat-tree:nan", ""},
        {"dgx-h100 --boxes 4 --network ring", ""},
        {"dgx-h100 --boxes 4 --network fat-tree --boxes-per-leaf 0", ""},
        {"dgx-h100 --boxes 8 --network fat-tree3 --leaves-per-pod 0", ""},
        {"dgx-h100 --sharp", "SHARP"},
        {"dgx-h100 --boxes 4 --network torus:2x2 --sharp", ""},
        {"dgx1 --nvls", ""},
        {"amd4 --nvls --boxes 2 --network switch", ""},
        {"dgx-h100 --nccl-topo x.xml", ""},
        {"--nvidia-smi s.txt", "--gpu"},
        {"--nccl-topo x.xml --nvidia-smi s.txt --gpu a100", ""},
        {"dgx-h100 --note", "--note"},
        {"dgx-h100 --output", "--output"},
        {"dgx-h100 -o ''", ""},
        {"dgx-h100 -o nodir/m.json", ""},
        {"dgx-h100 dgx-a100", ""},
        {"DGX-H100", "dgx-h100"},
    };
    Box b;
    b.gpus = 2;
    for (const Bad& x : bad) {
        Case c = make("machine " + x.args, "machine " + x.args, {{"x.xml", nccl_box(b)}, {"s.txt", "\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV2\t X \n"}},
                      "", 2, x.message);
        out.push_back(probe(c));
    }
    return out;
}

// ------------------------------------------------------------------------------------------------
// nvidia-smi topo -m: new variations of the matrix.

std::vector<Probe> nvidia_smi_cases() {
    std::vector<Probe> out;
    auto matrix = [](int n, const std::function<std::string(int, int)>& cell, const std::string& tail = "") {
        std::string s;
        for (int j = 0; j < n; ++j) s += fmt::format("\tGPU{}", j);
        s += "\tCPU Affinity\tNUMA Affinity\n";
        for (int i = 0; i < n; ++i) {
            s += fmt::format("GPU{}", i);
            for (int j = 0; j < n; ++j) s += "\t" + (i == j ? std::string("X") : cell(i, j));
            s += "\t0-63\t0\n";
        }
        return s + tail;
    };
    auto ok = [&](const std::string& name, const std::string& text, const std::string& opt) {
        Probe p = probe(make(name, "machine --nvidia-smi s.txt " + opt + " -o m.json", {{"s.txt", text}}, "", 0, ""));
        p.machine_file = "m.json";
        out.push_back(p);
    };
    ok("1 GPU", matrix(1, [](int, int) { return std::string("NV1"); }), "--gpu h100");
    Probe nics = probe(make("1 GPU, 2 boxes on a switch (the matrix lists no NIC)", "machine --nvidia-smi s.txt --gpu a100 --boxes 2 --network switch --nic-gbps 100 -o m.json",
                            {{"s.txt", matrix(1, [](int, int) { return std::string("NV1"); })}}, "", 0, "", "", {"m.json"}));
    nics.either = true;
    nics.machine_file = "m.json";
    out.push_back(nics);
    ok("16 GPUs on NV18", matrix(16, [](int, int) { return std::string("NV18"); }), "--gpu h100");
    ok("6 GPUs on PIX and SYS", matrix(6, [](int i, int j) { return std::string((i / 2 == j / 2) ? "PIX" : "SYS"); }), "--gpu v100");
    ok("5 GPUs mixed NV and PHB", matrix(5, [](int i, int j) { return (i + j) % 2 ? std::string("NV2") : std::string("PHB"); }), "--gpu b200");
    Probe legend = probe(make("a legend with a stray line", "machine --nvidia-smi s.txt --gpu a100 -o m.json",
                              {{"s.txt", matrix(2, [](int, int) { return std::string("NV12"); }, "\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n")}},
                              "", 0, ""));
    legend.machine_file = "m.json";
    out.push_back(legend);
    // refused at the cell, one line
    const std::string asym = matrix(3, [](int i, int j) { return (i == 0 && j == 1) ? std::string("NV2") : std::string("NV1"); });
    Probe a = probe(make("asymmetric NV counts", "machine --nvidia-smi s.txt --gpu v100 -o m.json", {{"s.txt", asym}}, "", 0, "", "s.txt:", {"m.json"}));
    a.either = true;
    a.said = true;
    a.machine_file = "m.json";
    out.push_back(a);
    for (std::string cell : {"NV0", "NV-1", "NV99999999999", "NV1.5", "NV", "X", "\x01"}) {
        Case c = make("a cell '" + replace_all(cell, "\x01", "\\x01") + "'", "machine --nvidia-smi s.txt --gpu a100 -o m.json",
                      {{"s.txt", matrix(3, [&](int i, int j) { return (i == 1 && j == 2) ? cell : std::string("NV4"); })}}, "", 2, "", "s.txt:3:", {"m.json"});
        Probe p = probe(c);
        if (cell == "NV0") p.either = true, p.machine_file = "m.json";  // no NVLink between the two: may be read as PCIe
        out.push_back(p);
    }
    out.push_back(probe(make("a row missing", "machine --nvidia-smi s.txt --gpu a100 -o m.json", {{"s.txt", "\tGPU0\tGPU1\tGPU2\nGPU0\tX\tNV1\tNV1\nGPU1\tNV1\tX\tNV1\n"}},
                             "", 2, "", "s.txt:", {"m.json"})));
    // the matrix is square with X on its diagonal only (nvidia-smi prints it so): anything else at its place
    struct Bent {
        std::string name, text, where;
    };
    const std::vector<Bent> bent = {
        {"X between GPU0 and GPU1, both ways", "\tGPU0\tGPU1\nGPU0\tX\tX\nGPU1\tX\tX\n", "s.txt:2:8: "},
        {"a NIC row without its column", matrix(4, [](int, int) { return std::string("NV18"); }) + "NIC0\tSYS\tSYS\tSYS\tX\n", "s.txt:"},
        {"NV2 on the diagonal", "\tGPU0\tGPU1\nGPU0\tX\tNV2\nGPU1\tNV2\tNV2\n", "s.txt:3:10: "},
        {"the rows in reverse order", "\tGPU0\tGPU1\nGPU1\tNV2\tX\nGPU0\tX\tNV2\n", "s.txt:2:1: "},
        {"a row twice", "\tGPU0\tGPU1\nGPU0\tX\tNV2\nGPU0\tX\tNV2\nGPU1\tNV2\tX\n", "s.txt:3:1: "},
        {"a row more than the columns", "\tGPU0\nGPU0\tX\nGPU1\tX\n", "s.txt:3:1: "},
        {"a NIC column without its row", "\tGPU0\tGPU1\tNIC0\nGPU0\tX\tNV2\tPIX\nGPU1\tNV2\tX\tSYS\n", "s.txt:1:12: "},
        {"7 columns, 1 row", "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\nGPU0\tX\tNV1\tNV1\tNV1\tNV1\tNV1\tNV1\n", "s.txt:1:7: "},
    };
    for (const Bent& b : bent)
        out.push_back(probe(make(b.name, "machine --nvidia-smi s.txt --gpu h100 -o m.json", {{"s.txt", b.text}}, "", 2, "", b.where, {"m.json"})));
    out.push_back(probe(make("an empty file", "machine --nvidia-smi s.txt --gpu a100 -o m.json", {{"s.txt", "\n"}}, "", 2, "", "s.txt", {"m.json"})));
    out.push_back(probe(make("a directory", "machine --nvidia-smi . --gpu a100 -o m.json", {}, "", 2, "", "", {"m.json"})));
    return out;
}

}  // namespace

TEST_CASE("hostile fourth: NCCL topology XML, a seeded generator of mutants (refused at the place, or written and read back)") {
    run_probes("nccl xml mutants", nccl_mutant_cases(80));
}

TEST_CASE("hostile fourth: NCCL topology XML whose answer is known: 1 to 16 GPUs, meshes, one-way links, item 8's kinds") {
    run_probes("nccl xml known", nccl_known_cases());
}

TEST_CASE("hostile fourth: machine option combinations, a seeded sample (every file written is read back)") {
    run_probes("machine options", machine_option_cases(48));
}

TEST_CASE("hostile fourth: machine options that are refused, one line each") { run_probes("machine refusals", machine_refusal_cases()); }

TEST_CASE("hostile fourth: nvidia-smi topo -m matrices") { run_probes("nvidia-smi", nvidia_smi_cases()); }

// ------------------------------------------------------------------------------------------------
// Slow (label `slow`, ctest entry hostile_fourth_slow): the full machine product, a larger
// generated XML set, and the time and memory limits of issue 57 item 4 in new instances.

namespace {

std::vector<Probe> limit_cases() {
    std::vector<Probe> out;
    auto timed = [&](const std::string& args, double timeout, const std::string& setup = "") {
        Case c = make(args, args, {}, setup, 3, "");
        c.or_code = 0;
        c.max_seconds = timeout + 4;  // the docs' hard limit within 1 s, plus a loaded 2-core machine's slack
        out.push_back(probe(c));
    };
    timed("optimize --topology ebft:512 --collective alltoall --timeout 6", 6);
    timed("optimize --topology ebft:256 --collective alltoall --model ports=single --timeout 8", 8);
    timed("optimize --topology " + collsched::test::machine("h100nvls8x8") + " --collective allreduce --size 1K..4G:8 --timeout 6", 6);
    timed("optimize --topology " + collsched::test::machine("h100sharp16x8") + " --collective reduce_scatter --sizes 1M,256M,1G --timeout 6", 6);
    // the NVLS provider's 256-piece tables on 16 x 8 (9.4 million transfers) were built past the limit: 20.9 to 25.9 s at --timeout 10
    timed("optimize --topology " + collsched::test::machine("h100sharp16x8") + " --collective allreduce --sizes 1M,1G --timeout 10", 10);
    timed("optimize --topology " + collsched::test::machine("h100nvls16x8") + " --collective allreduce --sizes 4M,2G --timeout 8", 8);
    timed("compose --topology " + collsched::test::machine("h100rail16x8") + " --collective reduce_scatter --size 256M --timeout 1", 1);
    timed("compose --topology " + collsched::test::machine("h100rail8x8") + " --collective allgather --size 1G --timeout 2", 2);
    // a 300 MB JSON file that is not a catalog, under --timeout 2 and the default budget
    Case big = make("optimize --size --library on a 300 MB JSON file that is not a catalog, --timeout 2",
                    "optimize --topology ring:4 --collective allgather --size 1M --timeout 2 --library big.json",
                    {{"gen.py", "import sys\nw = sys.stdout.write\nw('[')\nfor i in range(10000000):\n    w('{\"n\": [1, 2, 3, 4, 5, 6, 7, 8]},')\nw('{}]')\n"}},
                    "python3 gen.py > big.json", 0, "");
    big.or_code = 3;
    big.max_seconds = 2 + 4;
    Probe pb = probe(big);
    pb.either = true;  // read with a note ("library: big.json: ..."), refused, or stopped at the limit (exit 3)
    out.push_back(pb);
    return out;
}

}  // namespace

TEST_CASE("hostile fourth: slow: every machine option combination, 600 generated XML mutants, time limits" * doctest::test_suite("hostile_fourth_slow") *
          doctest::skip()) {
    run_probes("machine options (all)", machine_option_cases(1u << 20));
    run_probes("nccl xml mutants (600, seed + 2)", nccl_mutant_cases(600, kSeed + 2));
    run_probes("limits", limit_cases());
}
