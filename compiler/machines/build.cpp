// build_machine(): a box replicated over a network, switches as link groups or routers, faults
// applied (docs/topologies.md, "collsched machine").
#include "compiler/machines/machine.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "support/error.hpp"

namespace collsched::machines {

namespace {

int parse_int(std::string_view s, std::string_view what) {
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < 1)
        throw InputError(fmt::format("network: bad {} '{}': expected a whole number of at least 1", what, s));
    return v;
}

const char* hop_words(int hops) { return hops == 2 ? "two" : hops == 3 ? "three" : "four"; }

/// Builds one machine; the members are the state the steps share.
class Builder {
public:
    Builder(const Box& box, const MachineOptions& o) : box_(box), o_(o), per_(box.gpus), k_(o.boxes), n_(box.gpus * o.boxes) {
        const NetKind kind = o.network.kind;
        fat_ = kind == NetKind::fat_tree || kind == NetKind::fat_tree3;
        routers_ = o.routers.value_or(fat_ || (box.nic_shared && kind != NetKind::none));
        if (fat_ && !routers_)
            throw InputError("a fat tree's leaves and spines are routers: drop --switches groups (routers are the default for fat trees)");
        if (k_ > 1 && kind == NetKind::none) throw InputError(fmt::format("{} boxes need a --network (switch, rail, fat-tree, torus)", k_));
        if (kind != NetKind::none && box.nics() == 0) throw InputError(fmt::format("{} has no NICs: it takes no --network", box.title));
        if (box.fabric == Fabric::mesh && o.units != Units::links)
            throw InputError(fmt::format("{} is a mesh of links: its capacities count links (--units links)", box.title));
        if (kind == NetKind::torus) {
            int product = 1;
            for (int d : o.network.torus) product *= d;
            if (product != k_) throw InputError(fmt::format("network torus: {} boxes in the torus but --boxes {}", product, k_));
        }
        if (o.nvls && box.nvls_efficiency <= 0)
            throw InputError(fmt::format("--nvls: {} has no NVLink SHARP (NVLS is on NVSwitch boxes of Hopper and later: dgx-h100, dgx-h200, "
                                         "dgx-b200, gb200-nvl72)", box.title));
        if (o.sharp && (kind == NetKind::none || kind == NetKind::torus))
            throw InputError(fmt::format("--sharp: {} has no switches between the boxes to reduce in (SHARP is a function of the "
                                         "InfiniBand switches: --network switch, rail, fat-tree or fat-tree3)",
                                         kind == NetKind::none ? "a machine without --network" : "a torus"));
        if (o.sharp && !routers_ && box.nic_shared)
            throw InputError(fmt::format("--sharp: {} shares one NIC per box; write its network as routers (--switches routers)", box.title));
        if (n_ > 4096) throw InputError(fmt::format("{} GPUs: graph files take at most 4,096 nodes", n_));
        const double pairs = 0.5 * n_ * (n_ - 1);
        if (!routers_ && kind == NetKind::single_switch && pairs > 4e6)
            throw InputError(fmt::format("{} GPUs on one switch as link groups need {:.0f} edges: use --switches routers", n_, pairs));
        m_.processors = n_;
        m_.boxes = k_;
    }

    Machine build() {
        if (routers_) build_routers();
        else build_groups();
        apply_faults();
        check_connected();
        if (m_.groups.empty() && m_.routers == 0) {  // the compact layout: the box's speed at the top
            m_.base_type = m_.types.front().name;
            if (!box_.speed_note.empty()) m_.types.front().speed.note = box_.speed_note;
        }
        if (o_.renumber) renumber(*o_.renumber);
        m_.note = o_.note ? (o_.note->empty() ? std::nullopt : o_.note) : std::optional(describe());
        return std::move(m_);
    }

private:
    int box_of(int g) const { return g / per_; }
    int nics_per_box() const { return box_.nics(); }
    /// The NIC (machine-wide number) GPU g hangs off, -1 if none.
    int nic_at(int g) const {
        if (box_.nic_shared) return box_of(g);
        auto it = std::find(box_.nic_gpus.begin(), box_.nic_gpus.end(), g % per_);
        return it == box_.nic_gpus.end() ? -1 : box_of(g) * nics_per_box() + static_cast<int>(it - box_.nic_gpus.begin());
    }
    double gpu_gbs() const { return box_.links * box_.link_gbs; }
    int switch_cap() const {
        return o_.units == Units::links ? box_.links : o_.units == Units::gpu ? 1 : o_.units_per_gpu;
    }
    double unit_gbs() const { return box_.fabric == Fabric::mesh ? box_.link_gbs : gpu_gbs() / switch_cap(); }
    std::string unit_note() const {
        if (box_.fabric == Fabric::mesh || o_.units == Units::links) return box_.link_note;
        if (o_.units == Units::gpu) return box_.gpu_note;
        return fmt::format("{}, per unit of {}", box_.gpu_note, o_.units_per_gpu);
    }
    void type(std::string name, Speed s) {
        for (auto& t : m_.types)
            if (t.name == name) return;
        m_.types.push_back({std::move(name), std::move(s)});
    }
    Speed nic_speed(double alpha, std::string note) const { return {alpha, box_.nic_gbit, "Gbit/s", std::move(note)}; }
    Edge edge(End u, End v, int cap, std::string t, int nu = -1, int nv = -1) const { return {u, v, cap, std::move(t), {}, nu, nv}; }
    static End P(int g) { return {g, -1}; }
    static End R(int r) { return {-1, r}; }

    /// The box's own links: all pairs on the switch (groups mode) or the mesh.
    std::vector<Edge> box_edges(int b) const {
        std::vector<Edge> out;
        const int base = b * per_;
        if (box_.fabric == Fabric::mesh) {
            for (const auto& e : box_.mesh) out.push_back(edge(P(base + e[0]), P(base + e[1]), e[2], box_.link_type));
        } else {
            for (int u = 0; u < per_; ++u)
                for (int v = u + 1; v < per_; ++v) out.push_back(edge(P(base + u), P(base + v), switch_cap(), box_.link_type));
        }
        return out;
    }

    /// The boxes next to box b in the torus (wrap-around, each once).
    std::vector<int> torus_neighbours(int b) const {
        const auto& dims = o_.network.torus;
        std::vector<int> coord(dims.size()), out;
        for (int d = static_cast<int>(dims.size()) - 1, x = b; d >= 0; --d) coord[d] = x % dims[d], x /= dims[d];
        for (std::size_t d = 0; d < dims.size(); ++d) {
            for (int step : {1, -1}) {
                auto c = coord;
                c[d] = (c[d] + step + dims[d]) % dims[d];
                int id = 0;
                for (std::size_t e = 0; e < dims.size(); ++e) id = id * dims[e] + c[e];
                if (id != b && std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
            }
        }
        return out;
    }

    void build_groups() {
        const NetKind kind = o_.network.kind;
        type(box_.link_type, {box_.link_alpha_us, unit_gbs(), "GB/s", unit_note()});
        if (o_.nvls) type("nvls", {box_.link_alpha_us / 2, unit_gbs(), "GB/s", nvls_note()});
        std::vector<Edge> net;
        for (int u = 0; u < n_; ++u) {
            for (int v = u + 1; v < n_; ++v) {
                if (box_of(u) == box_of(v)) continue;
                const int nu = nic_at(u), nv = nic_at(v);
                if (nu < 0 || nv < 0) continue;
                bool linked = kind == NetKind::single_switch || box_.nic_shared;
                if (kind == NetKind::rail) linked = linked || u % per_ == v % per_;
                if (kind == NetKind::torus) {
                    auto nb = torus_neighbours(box_of(u));
                    linked = u % per_ == v % per_ && std::find(nb.begin(), nb.end(), box_of(v)) != nb.end();
                }
                if (linked) net.push_back(edge(P(u), P(v), 1, box_.nic_type, nu, nv));
            }
        }
        if (!net.empty()) type(box_.nic_type, nic_speed(box_.nic_alpha_us, box_.nic_name + ", " + box_.nic_where));
        if (kind == NetKind::single_switch) {  // one order for the box's links and the switch's: by (u, v)
            std::vector<Edge> all;
            for (int b = 0; b < k_; ++b)
                for (auto& e : box_edges(b)) all.push_back(std::move(e));
            for (auto& e : net) all.push_back(std::move(e));
            std::stable_sort(all.begin(), all.end(), [](const Edge& a, const Edge& b) {
                return std::pair(a.u.proc, a.v.proc) < std::pair(b.u.proc, b.v.proc);
            });
            m_.edges = std::move(all);
        } else {
            for (int b = 0; b < k_; ++b)
                for (auto& e : box_edges(b)) m_.edges.push_back(std::move(e));
            for (auto& e : net) m_.edges.push_back(std::move(e));
        }
        if (o_.nvls) {  // per box a router r1.b, the NVSwitch, and a channel from each of its GPUs
            for (int g = 0; g < n_; ++g) m_.edges.push_back(edge(P(g), R(box_of(g)), switch_cap(), "nvls"));
            m_.routers = k_;
            add_switch_functions(0);
        }
        if (o_.sharp) add_sharp_routers();
        add_groups(kind == NetKind::torus);
    }

    std::string nvls_note() const {
        const std::string hop = fmt::format("{} NVLink hop over the two hops GPU-switch-GPU", speed_text(box_.link_alpha_us, "us"));
        if (o_.units == Units::links) return fmt::format("one {} link into the NVSwitch used for NVLS ({})", box_.link_name, hop);
        return fmt::format("{} into the NVSwitch used for NVLS, per unit of {} ({})", box_.gpu, switch_cap(), hop);
    }

    /// The boxes' NVSwitches, routers first .. first + k - 1, reduce and multicast (`--nvls`).
    void add_switch_functions(int first) {
        for (int b = 0; b < k_; ++b)
            m_.switches.push_back({first + b, box_.nvls_efficiency,
                                   fmt::format("NVSwitch with NVLink SHARP (NVLS); efficiency: NCCL's nvlsEfficiency for {}", box_.nvls_arch)});
    }

    std::string sharp_note() const {
        return fmt::format("{} switch with SHARP (NVIDIA SHARPv3 on Quantum-2 NDR): reduces and multicasts at the port's line rate, "
                           "{} per port; efficiency {:g} assumed (NVIDIA gives line rate, no measured fraction)",
                           box_.nic_name, speed_text(box_.nic_gbit, "Gbit/s"), sharp_efficiency);
    }

    /// Routers first .. last - 1, the network's switches, reduce and multicast (`--sharp`).
    void add_sharp_functions(int first, int last) {
        for (int r = first; r < last; ++r) m_.switches.push_back({r, sharp_efficiency, sharp_note()});
    }

    /// `--sharp` in the groups layout: the network's switches (one per rail, or the one switch)
    /// become routers after the NVSwitches, each NIC joined to its switch by a channel of the
    /// NIC's speed (type sharp) that the NIC's groups cover with its direct channels.
    void add_sharp_routers() {
        const int first = m_.routers, count = o_.network.kind == NetKind::rail ? nics_per_box() : 1;
        type("sharp", nic_speed(box_.nic_alpha_us / 2, fmt::format("{}, a hop NIC to the SHARP switch (NCCL's network hop {} over the "
                                                                  "two hops)", box_.nic_short, speed_text(box_.nic_alpha_us, "us"))));
        sharp_router_.assign(n_, -1);
        for (int g = 0; g < n_; ++g)
            if (const int nic = nic_at(g); nic >= 0) {
                sharp_router_[g] = first + (count == 1 ? 0 : nic % nics_per_box());
                m_.edges.push_back(edge(P(g), R(sharp_router_[g]), 1, "sharp", nic));
            }
        m_.routers = first + count;
        add_sharp_functions(first, first + count);
    }

    /// Groups: per GPU on a switch its out and in groups; per NIC its out and in groups over its
    /// network channels (not in a torus, whose links are separate ports).
    void add_groups(bool torus) {
        std::vector<std::vector<int>> local(n_), remote(n_);
        for (const Edge& e : m_.edges) {
            if (e.u.proc < 0 || e.v.proc < 0) continue;  // a GPU's channel to its NVSwitch (--nvls)
            auto& list = box_of(e.u.proc) == box_of(e.v.proc) ? local : remote;
            list[e.u.proc].push_back(e.v.proc), list[e.v.proc].push_back(e.u.proc);
        }
        const std::string nv = speed_text(unit_gbs(), "GB/s"), ib = speed_text(box_.nic_gbit, "Gbit/s");
        auto channels = [](int g, const std::vector<int>& peers, bool out) {
            std::vector<std::pair<End, End>> c;
            for (int o : peers) c.push_back(out ? std::pair(P(g), P(o)) : std::pair(P(o), P(g)));
            std::sort(c.begin(), c.end());
            return c;
        };
        // --nvls: a GPU's channel to its box's NVSwitch uses the same links as its direct ones
        auto with_switch = [&](int g, std::vector<std::pair<End, End>> c, bool out) {
            if (o_.nvls) c.push_back(out ? std::pair(P(g), R(box_of(g))) : std::pair(R(box_of(g)), P(g)));
            return c;
        };
        for (int g = 0; g < n_; ++g) {
            if (box_.fabric == Fabric::switched && (per_ > 1 || o_.nvls)) {  // a box of one GPU has no switch traffic to share
                const int cap = switch_cap();
                if (remote[g].empty() && !o_.nvls) {
                    m_.groups.push_back({fmt::format("gpu{}.out", g), cap, g, -1, {}, nv});
                    m_.groups.push_back({fmt::format("gpu{}.in", g), cap, -1, g, {}, nv});
                } else {
                    m_.groups.push_back({fmt::format("gpu{}.out", g), cap, -1, -1, with_switch(g, channels(g, local[g], true), true), nv});
                    m_.groups.push_back({fmt::format("gpu{}.in", g), cap, -1, -1, with_switch(g, channels(g, local[g], false), false), nv});
                }
            }
            const int fabric = sharp_router_.empty() ? -1 : sharp_router_[g];
            auto with_fabric = [&](std::vector<std::pair<End, End>> c, bool out) {  // --sharp: the NIC's channel to its switch
                if (fabric >= 0) c.push_back(out ? std::pair(P(g), R(fabric)) : std::pair(R(fabric), P(g)));
                return c;
            };
            if (!torus && !box_.nic_shared && (!remote[g].empty() || fabric >= 0)) {
                m_.groups.push_back({fmt::format("nic{}.out", g), 1, -1, -1, with_fabric(channels(g, remote[g], true), true), ib, nic_at(g)});
                m_.groups.push_back({fmt::format("nic{}.in", g), 1, -1, -1, with_fabric(channels(g, remote[g], false), false), ib, nic_at(g)});
            }
        }
        if (torus || !box_.nic_shared) return;
        for (int b = 0; b < k_; ++b) {  // a shared NIC: one group over all the box's network channels
            Group out{fmt::format("nic{}.out", b), 1, -1, -1, {}, ib, b}, in{fmt::format("nic{}.in", b), 1, -1, -1, {}, ib, b};
            for (int g = b * per_; g < (b + 1) * per_; ++g)
                for (int o : remote[g]) out.channels.emplace_back(P(g), P(o)), in.channels.emplace_back(P(o), P(g));
            std::sort(out.channels.begin(), out.channels.end());
            std::sort(in.channels.begin(), in.channels.end());
            if (!out.channels.empty()) m_.groups.push_back(std::move(out)), m_.groups.push_back(std::move(in));
        }
    }

    void build_routers() {
        const NetKind kind = o_.network.kind;
        int next = 0;
        const bool sw = box_.fabric == Fabric::switched;
        const int sw_base = next;
        if (sw) next += k_;
        const bool shared = box_.nic_shared && kind != NetKind::none;
        const int nic_base = next;
        if (shared) next += k_;
        std::string sw_type;
        if (sw) {
            sw_type = box_.switch_name == "NVSwitch" ? "nvswitch" : "pcieswitch";
            const std::string hop = box_.link_type == "pcie" ? "PCI" : "NVLink";
            type(sw_type, {box_.link_alpha_us / 2, unit_gbs(), "GB/s",
                           fmt::format("GPU to its box's {}, per unit of {} ({} per GPU; NCCL's {} hop {} over the two hops)",
                                       box_.switch_name, switch_cap(), speed_text(gpu_gbs(), "GB/s"), hop,
                                       speed_text(box_.link_alpha_us, "us"))});
            for (int g = 0; g < n_; ++g) m_.edges.push_back(edge(P(g), R(sw_base + box_of(g)), switch_cap(), sw_type));
            if (o_.nvls) add_switch_functions(sw_base);
        } else {
            type(box_.link_type, {box_.link_alpha_us, unit_gbs(), "GB/s", unit_note()});
            for (int b = 0; b < k_; ++b)
                for (auto& e : box_edges(b)) m_.edges.push_back(std::move(e));
        }
        if (shared) {
            type("pcie", {0.5, box_.pcie_gbs, "GB/s",
                          fmt::format("{} each way, a hop to the box's NIC (NCCL's PCI hop 1 us over the two hops)", box_.pcie_name)});
            for (int g = 0; g < n_; ++g) m_.edges.push_back(edge(P(g), R(nic_base + box_of(g)), 1, "pcie"));
        }
        if (kind == NetKind::none) {  // one box: its NICs lead nowhere (a shared NIC has no GPU to hang off)
            m_.routers = next;
            return;
        }
        // every NIC's end: the GPU it hangs off, or the box's NIC router
        std::vector<End> nic_end;
        for (int b = 0; b < k_; ++b)
            for (int j = 0; j < nics_per_box(); ++j) nic_end.push_back(shared ? R(nic_base + b) : P(b * per_ + box_.nic_gpus[j]));
        const int hops = kind == NetKind::fat_tree ? 3 : kind == NetKind::fat_tree3 ? 4 : 2;
        const std::string alpha = speed_text(box_.nic_alpha_us, "us");
        const std::string what = kind == NetKind::single_switch ? "a hop NIC to switch"
                                 : kind == NetKind::rail        ? "a hop NIC to rail switch"
                                 : kind == NetKind::fat_tree    ? (shared ? "a hop NIC to leaf or leaf to spine" : "a hop GPU NIC to leaf or leaf to spine")
                                                                : "a hop NIC to leaf, leaf to spine or spine to core";
        const std::string why = hops == 2 ? fmt::format("NCCL's network hop {} over the two hops", alpha)
                                          : fmt::format("assumed: NCCL's {} over {} hops", alpha, hop_words(hops));
        const std::string ib = box_.nic_type;
        if (kind == NetKind::torus) {
            type(ib, nic_speed(box_.nic_alpha_us, box_.nic_name + ", " + box_.nic_where + ", direct links between neighbours"));
            for (int b = 0; b < k_; ++b)
                for (int c : torus_neighbours(b))
                    if (c > b)
                        for (int j = 0; j < nics_per_box(); ++j) {
                            const int x = b * nics_per_box() + j, y = c * nics_per_box() + j;
                            m_.edges.push_back(edge(nic_end[x], nic_end[y], 1, ib, x, y));
                        }
        } else {
            type(ib, nic_speed(box_.nic_alpha_us / hops, fmt::format("{}, {} ({})", box_.nic_short, what, why)));
            const int first = next;
            network_routers(nic_end, next, ib);
            if (o_.sharp) add_sharp_functions(first, next);
        }
        m_.routers = next;
    }

    /// The switches of a network as routers, numbered from `next`; every NIC one hop from its
    /// switch, leaves to spines (and spines to a core) with the oversubscribed capacity.
    void network_routers(const std::vector<End>& nic_end, int& next, const std::string& ib) {
        const NetKind kind = o_.network.kind;
        const int nics = static_cast<int>(nic_end.size()), per_box = nics_per_box();
        if (kind == NetKind::single_switch) {
            const int s = next++;
            for (int x = 0; x < nics; ++x) m_.edges.push_back(edge(nic_end[x], R(s), 1, ib, x));
            return;
        }
        if (kind == NetKind::rail) {
            const int base = next;
            next += per_box;
            for (int x = 0; x < nics; ++x) m_.edges.push_back(edge(nic_end[x], R(base + x % per_box), 1, ib, x));
            return;
        }
        const int bpl = o_.boxes_per_leaf, leaves = (k_ + bpl - 1) / bpl, leaf0 = next;
        next += leaves;
        std::vector<int> up(leaves, 0);
        for (int x = 0; x < nics; ++x) {
            const int l = x / per_box / bpl;
            m_.edges.push_back(edge(nic_end[x], R(leaf0 + l), 1, ib, x));
            ++up[l];
        }
        for (int& u : up) u = static_cast<int>(std::ceil(u / o_.network.oversubscription - 1e-9));
        if (kind == NetKind::fat_tree) {
            const int spine = next++;
            for (int l = 0; l < leaves; ++l) m_.edges.push_back(edge(R(leaf0 + l), R(spine), up[l], ib));
            return;
        }
        const int lpp = o_.leaves_per_pod, pods = (leaves + lpp - 1) / lpp, pod0 = next;
        next += pods;
        const int core = next++;
        std::vector<int> pod_up(pods, 0);
        for (int l = 0; l < leaves; ++l) {
            m_.edges.push_back(edge(R(leaf0 + l), R(pod0 + l / lpp), up[l], ib));
            pod_up[l / lpp] += up[l];
        }
        for (int p = 0; p < pods; ++p) m_.edges.push_back(edge(R(pod0 + p), R(core), pod_up[p], ib));
    }

    static End parse_end(const std::string& s, int processors, int routers, std::string_view option) {
        auto number = [](std::string_view t) {
            int v = -1;
            auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
            return (t.empty() || ec != std::errc{} || p != t.data() + t.size()) ? -1 : v;
        };
        if (s.starts_with("r1.")) {
            int r = number(std::string_view(s).substr(3));
            if (r >= 0 && r < routers) return R(r);
        } else if (int g = number(s); g >= 0 && g < processors) {
            return P(g);
        }
        throw InputError(fmt::format("{}: '{}' is no node of this machine (processors 0..{}{})", option, s, processors - 1,
                                     routers ? fmt::format(", routers r1.0..r1.{}", routers - 1) : ""));
    }

    /// The link u-v of a fault (either way round); InputError when there is none.
    Edge& link_of(const Fault& f, std::string_view option) {
        const End u = parse_end(f.u, n_, m_.routers, option), v = parse_end(f.v, n_, m_.routers, option);
        auto it = std::find_if(m_.edges.begin(), m_.edges.end(),
                               [&](const Edge& e) { return (e.u == u && e.v == v) || (e.u == v && e.v == u); });
        if (it == m_.edges.end()) throw InputError(fmt::format("{} {}-{}: there is no link {}-{} in this machine", option, f.u, f.v, f.u, f.v));
        return *it;
    }

    double type_speed(const std::string& name) const {
        return std::find_if(m_.types.begin(), m_.types.end(), [&](const LinkType& lt) { return lt.name == name; })->speed.bandwidth;
    }
    std::string type_unit(const std::string& name) const {
        return std::find_if(m_.types.begin(), m_.types.end(), [&](const LinkType& lt) { return lt.name == name; })->speed.unit;
    }

    /// Edge e at `fraction` of its type's speed; `option` names the fault when e is slowed twice.
    void slow(Edge& e, double fraction, std::string_view option) {
        if (e.bandwidth) throw InputError(fmt::format("{}: the link {}-{} is slowed twice", option, end_name(e.u), end_name(e.v)));
        e.bandwidth = speed_text(type_speed(e.type) * fraction, type_unit(e.type));
    }
    static std::string end_name(const End& e) { return e.proc >= 0 ? std::to_string(e.proc) : fmt::format("r1.{}", e.router); }

    void check_nic(const Fault& f, std::string_view option) const {
        const int nics = k_ * nics_per_box();
        if (f.nic >= nics) throw InputError(fmt::format("{} {}: this machine has NICs 0..{}", option, f.nic, nics - 1));
        if (o_.network.kind == NetKind::none) throw InputError(fmt::format("{}: a machine of one box has no network", option));
    }

    void apply_faults() {
        for (int g = 0; g < n_ && !box_.gpu_links.empty(); ++g)  // the topology file's missing NVLinks
            if (const int have = box_.gpu_links[g % per_]; have < box_.links) {
                slow_gpu({Fault::Kind::slow_gpu, -1, g, "", "", static_cast<double>(have) / box_.links});
                m_.faults.push_back(fmt::format("GPU {} has {} of {} NVLinks to the {} (the topology file's)", g, have, box_.links, box_.switch_name));
            }
        for (const Fault& f : o_.faults) {
            switch (f.kind) {
                case Fault::Kind::nic_down: check_nic(f, "--nic-down"), remove_nic(f.nic); break;
                case Fault::Kind::slow_nic: slow_nic(f); break;
                case Fault::Kind::slow_gpu: slow_gpu(f); break;
                case Fault::Kind::slow_link: slow(link_of(f, "--slow-link"), f.fraction, "--slow-link"); break;
                case Fault::Kind::link_down: {
                    const Edge& e = link_of(f, "--link-down");
                    remove_channels(e.u, e.v, true);
                    break;
                }
                case Fault::Kind::one_way: {
                    Edge& e = link_of(f, "--one-way");
                    if (e.one_way) throw InputError(fmt::format("--one-way {}-{}: the link is one way already", f.u, f.v));
                    if (e.u != parse_end(f.u, n_, m_.routers, "--one-way")) std::swap(e.u, e.v), std::swap(e.nic_u, e.nic_v);
                    e.one_way = true;
                    remove_channels(e.v, e.u, false);
                    break;
                }
            }
            m_.faults.push_back(fault_text(f));
        }
    }

    /// NIC f.nic at f.fraction: its network links and its groups.
    void slow_nic(const Fault& f) {
        check_nic(f, "--slow-nic");
        bool any = false;
        for (Edge& e : m_.edges)
            if (e.nic_u == f.nic || e.nic_v == f.nic) slow(e, f.fraction, "--slow-nic"), any = true;
        for (Group& g : m_.groups)
            if (g.nic == f.nic) g.bandwidth = speed_text(box_.nic_gbit * f.fraction, "Gbit/s"), any = true;
        if (!any) throw InputError(fmt::format("--slow-nic {}: the NIC has no links (is it down?)", f.nic));
    }

    /// GPU f.gpu's port into its box (its NVLinks, its channel to the NVSwitch) at f.fraction:
    /// every link of the box's own type at the GPU, and the GPU's groups.
    void slow_gpu(const Fault& f) {
        if (f.gpu >= n_) throw InputError(fmt::format("--slow-gpu {}: this machine has GPUs 0..{}", f.gpu, n_ - 1));
        bool any = false;
        for (Edge& e : m_.edges)
            if ((e.u.proc == f.gpu || e.v.proc == f.gpu) && e.nic_u < 0 && e.nic_v < 0 && e.type != "pcie" && e.type != "sharp")
                slow(e, f.fraction, "--slow-gpu"), any = true;
        const double unit = box_.fabric == Fabric::mesh ? box_.link_gbs : gpu_gbs() / switch_cap();
        for (Group& g : m_.groups)
            if (g.name == fmt::format("gpu{}.out", f.gpu) || g.name == fmt::format("gpu{}.in", f.gpu))
                g.bandwidth = speed_text(unit * f.fraction, "GB/s");
        if (!any) throw InputError(fmt::format("--slow-gpu {}: the GPU has no links in its box", f.gpu));
    }

    /// Takes the channel u -> v (and v -> u when `both`) out of the groups, and the link out of
    /// the edges when it has no channel left.
    void remove_channels(End u, End v, bool both) {
        for (Group& g : m_.groups)
            std::erase_if(g.channels, [&](const std::pair<End, End>& c) { return c == std::pair(u, v) || (both && c == std::pair(v, u)); });
        std::erase_if(m_.groups, [](const Group& g) { return g.out_of < 0 && g.into < 0 && g.channels.empty(); });
        if (both) std::erase_if(m_.edges, [&](const Edge& e) { return (e.u == u && e.v == v) || (e.u == v && e.v == u); });
    }

    static std::string fault_text(const Fault& f) {
        switch (f.kind) {
            case Fault::Kind::nic_down: return fmt::format("NIC {} down", f.nic);
            case Fault::Kind::slow_nic: return fmt::format("NIC {} at {:g} of its speed", f.nic, f.fraction);
            case Fault::Kind::slow_gpu: return fmt::format("GPU {}'s links in its box at {:g} of their speed", f.gpu, f.fraction);
            case Fault::Kind::slow_link: return fmt::format("link {}-{} at {:g} of its speed", f.u, f.v, f.fraction);
            case Fault::Kind::link_down: return fmt::format("link {}-{} down", f.u, f.v);
            case Fault::Kind::one_way: return fmt::format("link {}-{} one way ({} -> {} only)", f.u, f.v, f.u, f.v);
        }
        return {};
    }

    /// A NIC down: its network links go, and with them their channels in every group.
    void remove_nic(int nic) {
        // a NIC given down twice was accepted and written once, while a NIC slowed twice is refused: both are refused
        // (by the NICs given, not by the links left: a rail link joins two NICs, and the first down takes it)
        if (std::ranges::find(down_, nic) != down_.end()) throw InputError(fmt::format("--nic-down {}: the NIC is down already (given twice?)", nic));
        down_.push_back(nic);
        std::erase_if(m_.edges, [&](const Edge& e) { return e.nic_u == nic || e.nic_v == nic; });
        std::erase_if(m_.groups, [&](const Group& g) { return g.nic == nic; });
        std::vector<std::pair<End, End>> left;
        for (const Edge& e : m_.edges) left.emplace_back(e.u, e.v), left.emplace_back(e.v, e.u);
        std::sort(left.begin(), left.end());
        for (auto& g : m_.groups)
            std::erase_if(g.channels, [&](const std::pair<End, End>& c) { return !std::binary_search(left.begin(), left.end(), c); });
        std::erase_if(m_.groups, [](const Group& g) { return g.out_of < 0 && g.into < 0 && g.channels.empty(); });
    }

    /// Processor g becomes perm[g] (a permutation drawn from `seed`): every edge, group and
    /// channel list; the boxes are then no longer consecutive, so the file declares none.
    void renumber(unsigned seed) {
        std::vector<int> perm(n_);
        std::iota(perm.begin(), perm.end(), 0);
        std::mt19937 rng(seed);
        std::shuffle(perm.begin(), perm.end(), rng);
        auto map = [&](End& e) {
            if (e.proc >= 0) e.proc = perm[e.proc];
        };
        for (Edge& e : m_.edges) map(e.u), map(e.v);
        for (Group& g : m_.groups) {
            if (g.out_of >= 0) g.out_of = perm[g.out_of];
            if (g.into >= 0) g.into = perm[g.into];
            for (auto& [a, b] : g.channels) map(a), map(b);
            std::sort(g.channels.begin(), g.channels.end());
        }
        std::stable_sort(m_.edges.begin(), m_.edges.end(), [](const Edge& a, const Edge& b) { return std::pair(a.u, a.v) < std::pair(b.u, b.v); });
        m_.boxes = 0;
    }

    /// Every processor reaches processor 0 and is reached from it, over the channels (a one-way
    /// link is one channel).
    void check_connected() const {
        const int nodes = n_ + m_.routers;
        std::vector<std::vector<int>> fwd(nodes), back(nodes);
        auto id = [&](const End& e) { return e.proc >= 0 ? e.proc : n_ + e.router; };
        for (const Edge& e : m_.edges) {
            fwd[id(e.u)].push_back(id(e.v)), back[id(e.v)].push_back(id(e.u));
            if (!e.one_way) fwd[id(e.v)].push_back(id(e.u)), back[id(e.u)].push_back(id(e.v));
        }
        for (const auto* adj : {&fwd, &back}) {
            std::vector<bool> seen(nodes, false);
            std::vector<int> stack{0};
            seen[0] = true;
            while (!stack.empty()) {
                int x = stack.back();
                stack.pop_back();
                for (int y : (*adj)[x])
                    if (!seen[y]) seen[y] = true, stack.push_back(y);
            }
            for (int x = 0; x < n_; ++x)
                if (!seen[x])
                    throw InputError(fmt::format("the faults cut processor {} off from processor 0 ({}): the machine is not connected", x,
                                                 adj == &fwd ? "it cannot be reached" : "it cannot send to it"));
        }
    }

    std::string describe() const {
        std::string s = fmt::format("{} x {}: {} {} per box", k_, box_.title, per_, box_.gpu);
        if (box_.fabric == Fabric::switched)
            s += fmt::format(" on {} ({} {} links of {} each way per GPU)", box_.switch_name, box_.links, box_.link_name,
                             speed_text(box_.link_gbs, "GB/s"));
        else
            s += fmt::format(" in a mesh of {} links of {} each way", box_.link_name, speed_text(box_.link_gbs, "GB/s"));
        const auto& net = o_.network;
        const std::string nics = fmt::format("{} NIC{} of {} per box ({})", nics_per_box(), nics_per_box() == 1 ? "" : "s",
                                             speed_text(box_.nic_gbit, "Gbit/s"), box_.nic_name);
        switch (net.kind) {
            case NetKind::none: break;
            case NetKind::single_switch: s += fmt::format("; {} into one non-blocking switch", nics); break;
            case NetKind::rail: s += fmt::format("; {}, rail-optimized: NIC j of every box on rail switch j", nics); break;
            case NetKind::fat_tree:
                s += fmt::format("; {} into leaf switches of {} boxes, every leaf joined to one spine ({:g}:1 oversubscribed)", nics,
                                 o_.boxes_per_leaf, net.oversubscription);
                break;
            case NetKind::fat_tree3:
                s += fmt::format("; {} into leaf switches of {} boxes, pods of {} leaves, one core ({:g}:1 oversubscribed at the leaves)",
                                 nics, o_.boxes_per_leaf, o_.leaves_per_pod, net.oversubscription);
                break;
            case NetKind::torus: {
                std::string dims;
                for (int d : net.torus) dims += (dims.empty() ? "" : "x") + std::to_string(d);
                s += fmt::format("; {}, NIC j of every box linked to NIC j of its neighbours in a {} torus", nics, dims);
                break;
            }
        }
        if (o_.nvls)
            s += fmt::format("; NVLink SHARP: every box's NVSwitch (router r1.b) reduces and multicasts at {:g} of the links' bandwidth",
                             box_.nvls_efficiency);
        if (o_.sharp)
            s += fmt::format("; InfiniBand SHARP: the network's switches (routers r1.{}..r1.{}) reduce and multicast at the port's line rate",
                             m_.switches[o_.nvls ? k_ : 0].router, m_.routers - 1);
        s += routers_ ? "; switches as routers" : "; switches as link groups";
        if (box_.fabric == Fabric::switched)
            s += o_.units == Units::links ? "; capacities count links" : fmt::format("; capacity {} per GPU", switch_cap());
        for (const std::string& f : m_.faults) s += "; " + f;
        if (o_.renumber) s += fmt::format("; processors renumbered (seed {})", *o_.renumber);
        return s;
    }

    const Box& box_;
    const MachineOptions& o_;
    int per_, k_, n_;
    bool fat_ = false, routers_ = false;
    std::vector<int> sharp_router_;  ///< --sharp, groups layout: per GPU its NIC's switch (-1: no NIC)
    std::vector<int> down_;          ///< the NICs --nic-down took down so far
    Machine m_;
};

}  // namespace

Network parse_network(std::string_view text) {
    Network n;
    std::size_t colon = text.find(':');
    std::string_view kind = text.substr(0, colon), arg = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
    const bool has_arg = colon != std::string_view::npos;
    if (kind == "none" || kind == "switch" || kind == "rail") {
        if (has_arg) throw InputError(fmt::format("network '{}' takes no argument", kind));
        n.kind = kind == "none" ? NetKind::none : kind == "switch" ? NetKind::single_switch : NetKind::rail;
    } else if (kind == "fat-tree" || kind == "fat-tree3") {
        n.kind = kind == "fat-tree" ? NetKind::fat_tree : NetKind::fat_tree3;
        if (has_arg) {
            double o = 0;
            auto [p, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), o);
            if (arg.empty() || ec != std::errc{} || p != arg.data() + arg.size() || !(o >= 1) || o > 1000)
                throw InputError(fmt::format("network {}: bad oversubscription '{}': expected a ratio from 1 to 1000 (2 for 2:1)", kind, arg));
            n.oversubscription = o;
        }
    } else if (kind == "torus") {
        n.kind = NetKind::torus;
        if (arg.empty()) throw InputError("network torus needs its sizes: torus:AxB or torus:AxBxC (boxes per dimension)");
        for (std::size_t b = 0; b <= arg.size();) {
            std::size_t x = arg.find('x', b);
            if (x == std::string_view::npos) x = arg.size();
            n.torus.push_back(parse_int(arg.substr(b, x - b), "torus size"));
            b = x + 1;
        }
        if (n.torus.size() > 3) throw InputError("network torus: at most 3 dimensions");
    } else {
        throw InputError(fmt::format("unknown network '{}': expected none, switch, rail, fat-tree[:O], fat-tree3[:O] or torus:AxB[xC]", text));
    }
    return n;
}

Machine build_machine(const Box& box, const MachineOptions& options) {
    if (options.boxes < 1) throw InputError("--boxes: at least 1");
    return Builder(box, options).build();
}

}  // namespace collsched::machines
