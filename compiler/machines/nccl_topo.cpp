// NCCL's topology XML and `nvidia-smi topo -m` into a box (nccl_topo.hpp). Both readers fill the
// same facts (GPUs, NVLinks, NICs and their distances to the GPUs); assemble() turns the facts
// into a Box by NCCL's rules and says what it completed.
#include "compiler/machines/nccl_topo.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "compiler/interop/msccl_xml.hpp"
#include "compiler/machines/topo_facts.hpp"
#include "support/error.hpp"

namespace collsched::machines {

namespace {

using msccl::Elem;

struct GpuRow {
    const char* name;
    int sm;
};
// --gpu: the SM version NCCL reads from the "sm" attribute (CUDA compute capability x 10).
constexpr GpuRow gpu_rows[] = {{"v100", 70}, {"a100", 80}, {"h100", 90}, {"h200", 90}, {"b200", 100}, {"gb200", 100}};

std::string gpu_names() {
    std::string s;
    for (const auto& r : gpu_rows) s += (s.empty() ? "" : ", ") + std::string(r.name);
    return s;
}

const std::string* attr(const Elem& e, std::string_view key) {
    for (const auto& [k, v] : e.attrs)
        if (k == key) return &v;
    return nullptr;
}

class XmlReader {
public:
    XmlReader(std::string_view file) : file_(file) {}

    [[noreturn]] void fail(const Elem& e, const std::string& what) const {
        throw InputError(fmt::format("{}:{}:{}: {}", file_, e.line, e.col, what));
    }
    const std::string& need(const Elem& e, std::string_view key) const {
        const std::string* v = attr(e, key);
        if (!v) fail(e, fmt::format("<{}> has no {} attribute", e.name, key));
        return *v;
    }
    long integer(const Elem& e, std::string_view key, int base = 10) const {
        const std::string& s = need(e, key);
        std::string_view t = s;
        if (base == 16 && (t.starts_with("0x") || t.starts_with("0X"))) t.remove_prefix(2);
        long v = 0;
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
        if (t.empty() || ec != std::errc{} || p != t.data() + t.size())
            fail(e, fmt::format("<{}> {}=\"{}\": expected a{} number", e.name, key, s, base == 16 ? " hexadecimal" : " whole"));
        return v;
    }

    TopoFacts read(std::string_view text) {
        Elem root = msccl::parse_xml(text, file_, "NCCL topology XML");
        if (root.name != "system") fail(root, fmt::format("the root element is <{}>: NCCL's topology XML starts with <system version=\"1\">", root.name));
        if (integer(root, "version") != 1) fail(root, "NCCL reads topology XML version 1 only (src/graph/xml.cc ncclTopoXmlLoadSystem)");
        std::vector<const Elem*> path{&root};
        walk(root, path);
        return finish();
    }

private:
    struct Dev {
        const Elem* e;
        std::vector<const Elem*> path;  // ancestors, root first
    };

    void walk(const Elem& e, std::vector<const Elem*>& path) {
        for (const Elem& s : e.subs) {
            if (s.name == "pci") {
                const std::string& cls = need(s, "class");
                need(s, "busid");
                if (cls.starts_with("0x03")) gpus_.push_back({&s, path});
                const Elem* nic = nullptr;
                for (const Elem& x : s.subs)
                    if (x.name == "nic") nic = &x;
                if (nic) {
                    for (const Elem& n : nic->subs)
                        if (n.name == "net") nets_.push_back({&n, path, &s});
                } else if (cls.starts_with("0x02")) {
                    nets_.push_back({nullptr, path, &s});
                }
            } else if (s.name == "nic" && e.name == "cpu") {  // a NIC directly under a CPU
                for (const Elem& n : s.subs)
                    if (n.name == "net") nets_.push_back({&n, path, nullptr});
                continue;
            }
            if (s.name == "cpu" || s.name == "pci") {
                path.push_back(&s);
                walk(s, path);
                path.pop_back();
            }
        }
    }

    static std::string lower(std::string s) {
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    }

    TopoFacts finish() {
        TopoFacts f;
        f.file = std::string(file_);
        // GPUs in NCCL's device order when every GPU says its dev, else by PCI bus id
        std::vector<std::pair<std::string, Dev>> order;
        bool all_dev = !gpus_.empty();
        for (const Dev& d : gpus_) all_dev = all_dev && sub(*d.e, "gpu") && attr(*sub(*d.e, "gpu"), "dev");
        check_devs();
        for (const Dev& d : gpus_) {
            std::string key = all_dev ? fmt::format("{:08}", integer(*sub(*d.e, "gpu"), "dev")) : lower(need(*d.e, "busid"));
            order.emplace_back(key, d);
        }
        std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::map<std::string, int> index;  // bus id -> GPU
        for (const auto& [key, d] : order) {
            index[lower(need(*d.e, "busid"))] = static_cast<int>(f.gpus.size());
            FactGpu g;
            g.line = d.e->line;
            g.pcie_gbs = pci_gbs(*d.e);
            if (const Elem* x = sub(*d.e, "gpu")) {
                // NCCL reads sm with strtol and no check (src/graph/topo.cc ncclTopoAddGpu); no GPU has sm -1
                const long sm = integer(*x, "sm");
                if (sm < 10 || sm > 1000)
                    fail(*x, fmt::format("<gpu> sm=\"{}\": expected the CUDA compute capability x 10, 10 to 1000 (70 for V100, 90 for H100)", sm));
                g.sm = static_cast<int>(sm);
                g.described = true;
            }
            f.gpus.push_back(g);
        }
        f.order_by_dev = all_dev;
        for (const FactGpu& g : f.gpus) f.nvlinks_known = f.nvlinks_known || g.described;
        // NCCL connects a GPU to the target of each of its GPU <nvlink> one way, count x the link's
        // rate, adding up repeated entries (src/graph/topo.cc ncclTopoAddNvLinks, ncclTopoConnectNodes)
        std::map<std::pair<int, int>, std::pair<int, const Elem*>> listed;  // (from, to) -> links, first entry
        for (std::size_t i = 0; i < order.size(); ++i) {
            const Elem* x = sub(*order[i].second.e, "gpu");
            if (!x) continue;
            for (const Elem& l : x->subs) {
                if (l.name != "nvlink") continue;
                const long count = integer(l, "count");
                if (count < 1 || count > 64) fail(l, fmt::format("<nvlink> count={}: expected 1 to 64", count));
                const std::string cls = need(l, "tclass");
                if (cls == "0x068000") {
                    f.gpus[i].switch_links += static_cast<int>(count);
                } else if (cls.starts_with("0x03")) {
                    auto it = index.find(lower(need(l, "target")));
                    if (it == index.end()) fail(l, fmt::format("<nvlink> target=\"{}\" is no GPU of this file", need(l, "target")));
                    auto& [links, first] = listed[{static_cast<int>(i), it->second}];
                    links += static_cast<int>(count);
                    if (!first) first = &l;
                }  // to a CPU (POWER9's NVLink to the host): not a GPU-to-GPU link
            }
        }
        for (const auto& [pair, entry] : listed) {
            const auto [u, v] = pair;
            const auto& [links, where] = entry;
            if (u == v) {  // NCCL joins the GPU to itself: a link that no path between two GPUs takes
                f.said.push_back(fmt::format("line {}: GPU {} lists {} NVLink{} to itself: no path between two GPUs uses {}, left out",
                                             where->line, u, links, links == 1 ? "" : "s", links == 1 ? "it" : "them"));
                continue;
            }
            auto back = listed.find({v, u});
            if (back == listed.end())
                fail(*where, fmt::format("<nvlink> from GPU {} to GPU {} is listed one way only: NCCL would use it from {} to {} only "
                                         "(src/graph/topo.cc ncclTopoAddNvLinks connects the listing GPU to its target), and a machine "
                                         "file's links carry both ways: list it under both GPUs, as NCCL's dump does", u, v, u, v));
            if (u > v) continue;
            const int both = std::min(links, back->second.first);
            if (links != back->second.first)
                f.said.push_back(fmt::format("line {}: GPU {} lists {} NVLinks to GPU {}, GPU {} lists {} back: the box takes {} both ways",
                                             where->line, u, links, v, v, back->second.first, both));
            f.direct[{u, v}] = both;
        }
        for (const Net& n : nets_) {
            FactNic nic;
            const Elem* where = n.net ? n.net : n.pci;
            nic.line = where->line;
            if (n.net) {
                nic.name = attr(*n.net, "name") ? *attr(*n.net, "name") : "";
                if (attr(*n.net, "speed")) nic.mbps = static_cast<double>(integer(*n.net, "speed"));
                if (nic.mbps <= 0 && attr(*n.net, "speed")) nic.mbps = 10000;  // NCCL: "Some NICs define speed = -1"
            }
            if (n.pci) nic.pcie_gbs = pci_gbs(*n.pci);
            std::vector<const Elem*> p = n.path;
            for (const auto& [key, d] : order) nic.distance.push_back(distance(p, d.path));
            f.nics.push_back(nic);
        }
        return f;
    }

    /// A GPU's dev is its CUDA device number: NCCL reads it into an int with strtol (2^40 would
    /// wrap, -1 is no device) and graph files find GPUs by it (src/graph/search.cc), so each is
    /// 0 to 2^31 - 1 and names one GPU.
    void check_devs() const {
        std::map<long, const Elem*> seen;
        for (const Dev& d : gpus_) {
            const Elem* x = sub(*d.e, "gpu");
            if (!x || !attr(*x, "dev")) continue;
            const long dev = integer(*x, "dev");
            if (dev < 0 || dev > 2147483647L) fail(*x, fmt::format("<gpu> dev=\"{}\": expected a CUDA device number, 0 to 2147483647", dev));
            auto [it, fresh] = seen.emplace(dev, x);
            if (!fresh)
                fail(*x, fmt::format("<gpu> dev=\"{}\" is also the GPU's at line {}: a CUDA device number names one GPU (NCCL's graph "
                                     "files find GPUs by it)", dev, it->second->line));
        }
    }
    static const Elem* sub(const Elem& e, std::string_view name) {
        for (const Elem& s : e.subs)
            if (s.name == name) return &s;
        return nullptr;
    }
    /// Hops between two devices through their lowest common ancestor (0: same PCI switch).
    static int distance(const std::vector<const Elem*>& a, const std::vector<const Elem*>& b) {
        std::size_t common = 0;
        while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
        return static_cast<int>(a.size() + b.size() - 2 * common);
    }
    double pci_gbs(const Elem& e) const {
        const std::string* speed = attr(e, "link_speed");
        int width = attr(e, "link_width") ? static_cast<int>(integer(e, "link_width")) : 0;
        auto gbs = pci_peak_gbs(speed ? *speed : "", width);
        return gbs ? *gbs : *pci_peak_gbs("8 GT/s", width);  // NCCL's fallback: Gen3
    }

    struct Net {
        const Elem* net;                 // <net>, or null for a skeleton's NIC
        std::vector<const Elem*> path;   // ancestors of the NIC's PCI device
        const Elem* pci;                 // the NIC's <pci>, null for a <nic> under a CPU
    };
    std::string_view file_;
    std::vector<Dev> gpus_;
    std::vector<Net> nets_;
};

}  // namespace

int gpu_sm(std::string_view gpu) {
    for (const auto& r : gpu_rows)
        if (gpu == r.name) return r.sm;
    throw InputError(fmt::format("--gpu {}: expected one of {}", gpu, gpu_names()));
}

double nccl_nvlink_gbs(int sm) {
    // src/graph/topo.h: SM60_NVLINK_BW 18.0, SM70 20.0, SM80 20.0, SM86 12.0, SM90 20.6, SM100 40.1
    return sm >= 100 ? 40.1 : sm >= 90 ? 20.6 : sm == 86 ? 12.0 : sm >= 80 ? 20.0 : sm >= 70 ? 20.0 : sm >= 60 ? 18.0 : 20.0;
}

double nvlink_peak_gbs(int sm) { return sm >= 100 ? 50 : sm == 86 ? 14.0625 : sm >= 70 ? 25 : 20; }

std::optional<double> pci_peak_gbs(std::string_view link_speed, int width) {
    // NCCL's rate per lane (15, 30, 60, 120, 240, 480 / 80 GB/s) is 75 % of Gen1's and Gen2's after 8b/10b (0.25,
    // 0.5 GB/s) and 76.2 % of Gen3 to Gen6's after 128b/130b (0.984375 GB/s a Gen3 lane, doubling)
    const std::optional<double> n = nccl_pci_gbs(link_speed, width);
    if (!n) return std::nullopt;
    const double per_lane = *n / (width == 0 ? 16 : width);
    return (width == 0 ? 16 : width) * (per_lane < 0.5 ? per_lane * 4 / 3 : per_lane / 0.75 * 0.984375);
}

int nccl_max_nvlinks(int sm) { return sm < 60 ? 0 : sm < 70 ? 4 : sm < 80 ? 6 : sm < 90 ? 12 : 18; }

std::optional<double> nccl_pci_gbs(std::string_view link_speed, int width) {
    // src/graph/topo.cc kvDictPciGen: x100 Mb/s per lane; bw = width * speed / 80 (width 0 read as 16)
    static const std::pair<std::string_view, int> gens[] = {
        {"2.5 GT/s", 15},       {"5 GT/s", 30},         {"8 GT/s", 60},         {"16 GT/s", 120},       {"32 GT/s", 240},
        {"2.5 GT/s PCIe", 15},  {"5.0 GT/s PCIe", 30},  {"8.0 GT/s PCIe", 60},  {"16.0 GT/s PCIe", 120}, {"32.0 GT/s PCIe", 240},
        {"64.0 GT/s PCIe", 480}};
    if (width == 0) width = 16;
    for (const auto& [name, speed] : gens)
        if (name == link_speed) return width * speed / 80.0;
    return std::nullopt;
}

TopoBox read_nccl_topo(std::string_view text, std::string_view file, const TopoHints& hints) {
    return assemble(XmlReader(file).read(text), hints);
}

}  // namespace collsched::machines
