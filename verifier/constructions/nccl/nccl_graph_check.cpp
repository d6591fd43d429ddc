// Checking an NCCL graph file on a machine (verifier/constructions/nccl/nccl_graph_check.hpp; docs/exports.md,
// "Reading an NCCL graph file"). NVIDIA/nccl 5067397c: src/graph/search.cc:891-964 (reading the
// channels), :1400-1414 (the NIC of a channel's GPU), src/graph/connect.cc:20-71 and :96-175
// (joining the boxes' rings and trees), src/init.cc:1280 (the channels that run).
#include "verifier/constructions/nccl/nccl_graph_check.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "compiler/formats/export_nccl_graph.hpp"
#include "support/error.hpp"

namespace collsched::nccl {

namespace {

constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

/// A path from u to v whose inner nodes are routers: the channel u -> v, else the fewest
/// channels through routers alone (breadth first, channels in their order). nullopt: none.
std::optional<std::vector<ChannelId>> router_path(const Topology& t, Node u, Node v) {
    if (u == v) return std::vector<ChannelId>{};
    if (auto c = t.find_channel(u, v)) return std::vector<ChannelId>{*c};
    std::vector<std::uint32_t> via(t.nodes(), none);
    std::deque<Node> queue{u};
    while (!queue.empty()) {
        const Node n = queue.front();
        queue.pop_front();
        for (ChannelId c : t.out_channels(n)) {
            const Node w = t.channel(c).to;
            if (w == u || via[idx(w)] != none) continue;
            via[idx(w)] = idx(c);
            if (w == v) {
                std::vector<ChannelId> path;
                for (Node x = v; x != u; x = t.channel(path.back()).from) path.push_back(ChannelId{via[idx(x)]});
                std::reverse(path.begin(), path.end());
                return path;
            }
            if (!t.is_processor(w)) queue.push_back(w);
        }
    }
    return std::nullopt;
}

/// One channel of the file as NCCL reads it: the box's GPUs in order (their CUDA devices) and
/// the nets in file order.
struct Chan {
    std::vector<std::uint32_t> gpus;
    std::vector<std::int64_t> nets;
    std::vector<XmlPlace> net_at;
    XmlPlace at;
};

class Checker {
public:
    Checker(const std::vector<NcclGraphSource>& f, const Topology& t) : src_(f), t_(t), b_(nccl_graph_boxes(t)) {}

    GraphCheck run() {
        out_.boxes = b_.count;
        out_.gpus_per_box = b_.per_box;
        if (src_.size() != 1 && src_.size() != b_.count)
            throw InputError(fmt::format("{}: {} graph files for {} boxes: one file every node reads, or one per node ({}.node0.xml to "
                                         ".node{}.xml)",
                                         src_.front().name, src_.size(), b_.count, "FILE", b_.count - 1));
        for (const NcclGraphSource& s : src_) {
            out_.files.push_back(s.name);
            out_.notes.insert(out_.notes.end(), s.file->notes.begin(), s.file->notes.end());
        }
        if (b_.inferred)
            out_.notes.push_back(fmt::format("{}: the machine file does not say its boxes (no \"boxes\"): {} box{} of {} GPU{} inferred, the "
                                             "processors joined by channels of at least a quarter of the fastest", t_.spec(), b_.count,
                                             b_.count == 1 ? "" : "es", b_.per_box, b_.per_box == 1 ? "" : "s"));
        ring_.resize(src_.size()), tree_.resize(src_.size());
        for (std::size_t s = 0; s < src_.size(); ++s) select(s);
        reduce();
        if (!out_.ring_graph && !out_.tree_graph)
            note(0, src_.front().file->graphs.front().at, "no ring graph (id 0) and no tree graph (id 1): NCCL uses neither from this file "
                                                          "and searches its own; nothing of it is checked");
        if (out_.ring_graph) rings();
        if (out_.tree_graph) trees();
        if (out_.ring_graph && out_.rings.size() == out_.channels_run) load(*out_.ring_graph);
        else out_.rings.clear();
        return std::move(out_);
    }

private:
    /// The source box k reads.
    std::size_t of(std::uint32_t k) const { return src_.size() == 1 ? 0 : k; }
    std::string at(std::size_t s, const XmlPlace& p) const { return fmt::format("{}:{}:{}", src_[s].name, p.line, p.col); }
    void finding(std::size_t s, const XmlPlace& p, std::string what) {
        out_.findings.push_back({what.starts_with("graph 1") ? 1 : 0, p, std::move(what), src_[s].name});
    }
    void note(std::size_t s, const XmlPlace& p, const std::string& what) { out_.notes.push_back(fmt::format("{}: {}", at(s, p), what)); }
    static std::string label(const NcclGraphXml& g) { return fmt::format("graph {} ({})", g.id, g.id == 0 ? "rings" : "trees"); }

    /// The graphs NCCL keeps from source s: for ids 0 and 1 the last of each (each `<graph>` of the id
    /// overwrites the fields the earlier one set, search.cc:958-964).
    void select(std::size_t s) {
        for (const NcclGraphXml& g : src_[s].file->graphs) {
            std::optional<NcclGraphXml>* slot = g.id == 0 ? &ring_[s] : g.id == 1 ? &tree_[s] : nullptr;
            if (!slot) {
                note(s, g.at, fmt::format("graph id {} is {}: not checked", g.id,
                                          g.id == 2   ? "CollNet chain's"
                                          : g.id == 3 ? "NVLS's"
                                          : g.id == 4 ? "CollNet direct's"
                                                      : "no graph NCCL searches (init.cc:1174-1210 ids 0 to 4); NCCL skips it"));
                continue;
            }
            if (*slot) note(s, g.at, fmt::format("a second graph of id {}: NCCL keeps the last one's fields (the earlier one at {})", g.id, at(s, (*slot)->at)));
            *slot = g;
            if (g.crossnic == 1)
                note(s, g.at, "crossnic=\"1\": NCCL skips this graph when NCCL_CROSS_NIC=0 (search.cc:934) and uses it by default (2)");
        }
        auto given = [&](std::size_t x) {
            return fmt::format("{} ring graph and {} tree graph", ring_[x] ? "a" : "no", tree_[x] ? "a" : "no");
        };
        for (std::size_t x = 0; x < s; ++x)
            if (bool(ring_[x]) != bool(ring_[s]) || bool(tree_[x]) != bool(tree_[s]))
                throw InputError(fmt::format("{}: gives {}, {} {}: a node whose file lacks a graph searches its own, which a graph file set "
                                             "does not say",
                                             src_[s].name, given(s), src_[x].name, given(x)));
    }

    /// NCCL all-gathers every rank's graph fields and takes per graph the least nchannels, sameChannels,
    /// bwIntra and bwInter and the widest typeIntra, typeInter and crossNic (init.cc:1436-1446), then runs
    /// min(ring, tree) channels (init.cc:1459).
    void reduce() {
        auto fold = [&](std::vector<std::optional<NcclGraphXml>>& gs, std::optional<NcclGraphXml>& out) {
            if (!gs.front()) return;
            out = gs.front();
            for (std::size_t s = 1; s < gs.size(); ++s) {
                const NcclGraphXml& g = *gs[s];
                if (g.nchannels != out->nchannels || g.speedintra != out->speedintra || g.speedinter != out->speedinter)
                    note(s, g.at, fmt::format("{}: nchannels {}, speedintra {:g}, speedinter {:g} and {} says {}, {:g}, {:g}: NCCL takes "
                                              "the least of each over the nodes (init.cc:1439-1442)",
                                              label(g), g.nchannels, g.speedintra, g.speedinter, src_[0].name, gs[0]->nchannels,
                                              gs[0]->speedintra, gs[0]->speedinter));
                out->nchannels = std::min(out->nchannels, g.nchannels);
                out->samechannels = std::min(out->samechannels, g.samechannels);
                out->speedintra = std::min(out->speedintra, g.speedintra);
                out->speedinter = std::min(out->speedinter, g.speedinter);
                out->crossnic = std::max(out->crossnic, g.crossnic);
                if (g.typeintra != out->typeintra || g.typeinter != out->typeinter)
                    note(s, g.at, fmt::format("{}: typeintra/typeinter {}/{} and {}/{} elsewhere: NCCL's tuner takes the widest path "
                                              "type (init.cc:1443-1444)", label(g), g.typeintra, g.typeinter, out->typeintra, out->typeinter));
            }
        };
        fold(ring_, out_.ring_graph);
        fold(tree_, out_.tree_graph);
        if (!out_.ring_graph) return;
        out_.channels_run = std::uint32_t(out_.ring_graph->nchannels);
        if (out_.tree_graph && out_.tree_graph->nchannels < out_.ring_graph->nchannels) {
            out_.channels_run = std::uint32_t(out_.tree_graph->nchannels);
            note(0, tree_[0]->at, fmt::format("the tree graph has {} channels and the ring graph {}: NCCL runs {} (init.cc:1280, 1459 "
                                              "comm->nChannels = min(tree, ring))",
                                              out_.tree_graph->nchannels, out_.ring_graph->nchannels, out_.channels_run));
        }
        if (!out_.tree_graph)
            note(0, ring_[0]->at, "no tree graph (id 1): NCCL searches one for the ring's channel count (init.cc:1184-1186); "
                                  "if it finds fewer, fewer rings run");
    }

    /// The channel's GPUs and nets as source s gives them, or nullopt after the findings that make
    /// it something other than one order of every GPU of a box.
    std::optional<Chan> channel(std::size_t s, const NcclGraphXml& g, std::size_t c) {
        const NcclGraphChannelXml& x = g.channels[c];
        const std::string who = fmt::format("{} channel {}", label(g), c);
        const std::uint32_t G = b_.per_box, P = t_.processors();
        const bool own = src_.size() > 1;  // one node's file: a rank is that node's
        Chan ch;
        ch.at = x.at;
        std::vector<XmlPlace> gpu_at;
        bool ok = true;
        for (const NcclGraphDevice& d : x.devices) {
            if (d.net) {
                ch.nets.push_back(d.dev);
                ch.net_at.push_back(d.at);
                continue;
            }
            if (d.rank) {
                if (b_.count > 1 && !own) {
                    finding(s, d.at, fmt::format("{}: rank=\"{}\": every node reads the same file and would put rank {} in its channel; "
                                                 "with {} boxes it belongs to one only (leave rank out: a GPU is found by dev on each "
                                                 "node, search.cc:906-918) [gpu]",
                                                 who, *d.rank, *d.rank, b_.count));
                    ok = false;
                } else if (*d.rank < 0 || *d.rank >= std::int64_t(P) || (own && b_.box[std::size_t(*d.rank)] != s)) {
                    finding(s, d.at, fmt::format("{}: rank=\"{}\": {} has ranks {} to {} [gpu]", who, *d.rank, own ? fmt::format("box {}", s) : "the machine",
                                                 own ? s * G : 0, own ? s * G + G - 1 : P - 1));
                    ok = false;
                } else {
                    ch.gpus.push_back(b_.local[std::size_t(*d.rank)]);
                    gpu_at.push_back(d.at);
                }
                continue;
            }
            if (d.dev < 0 || d.dev >= std::int64_t(G)) {
                finding(s, d.at, fmt::format("{}: <gpu dev=\"{:x}\">: a box of this machine has GPUs 0 to {:x}; NCCL stops with \"XML Import "
                                             "Channel : dev {} not found\" (search.cc:914-917) [gpu]",
                                             who, d.dev, G - 1, d.dev));
                ok = false;
                continue;
            }
            ch.gpus.push_back(std::uint32_t(d.dev));
            gpu_at.push_back(d.at);
        }
        if (!ok) return std::nullopt;
        if (ch.gpus.size() != G) {
            finding(s, x.at, fmt::format("{}: {} <gpu> elements, and a box has {} GPUs: NCCL reads {} per channel (search.cc:895), {} "
                                         "[ring]",
                                         who, ch.gpus.size(), G, G,
                                         ch.gpus.size() < G ? "the missing ones are positions it never wrote (rank 0)"
                                                            : "the ones past them are overwritten by the next channel"));
            return std::nullopt;
        }
        std::vector<std::size_t> first(G, none);
        for (std::size_t i = 0; i < G; ++i) {
            if (first[ch.gpus[i]] == none) {
                first[ch.gpus[i]] = i;
                continue;
            }
            std::string missing;
            for (std::uint32_t d = 0; d < G; ++d)
                if (std::find(ch.gpus.begin(), ch.gpus.end(), d) == ch.gpus.end()) missing += fmt::format("{}{:x}", missing.empty() ? "" : ", ", d);
            finding(s, gpu_at[i], fmt::format("{}: GPU {:x} twice (positions {} and {}), GPU {} never: the {} is not a cycle through every "
                                              "rank [ring]",
                                              who, ch.gpus[i], first[ch.gpus[i]], i, missing, g.id == 0 ? "ring" : "chain"));
            return std::nullopt;
        }
        if (!nets(s, g, c, ch, who)) return std::nullopt;
        return ch;
    }

    /// The nets: none used with one box; else the first (into the box) and the second (out of it),
    /// NICs of every box that reads source s (a node numbers its own nets, in PCI order).
    bool nets(std::size_t s, const NcclGraphXml& g, std::size_t c, const Chan& ch, const std::string& who) {
        const XmlPlace& at = g.channels[c].at;
        if (b_.count == 1) {
            if (!ch.nets.empty()) note(s, at, fmt::format("{}: one box: NCCL uses no <net> (the {} given are read and unused)", who, ch.nets.size()));
            return true;
        }
        const std::size_t need = b_.per_box == 1 ? 1 : 2;
        if (ch.nets.size() < need || ch.nets.size() > 2) {
            finding(s, at, fmt::format("{}: {} <net> element{}: NCCL takes the NIC the channel's first GPU receives by from the first and "
                                       "the one its last GPU sends by from the second (search.cc:904, :1408-1410); {} [net]",
                                       who, ch.nets.size(), ch.nets.size() == 1 ? "" : "s",
                                       ch.nets.size() < need ? "a missing one is net 0, never written" : "a third is not used"));
            return false;
        }
        bool ok = true;
        for (std::size_t i = 0; i < ch.nets.size(); ++i)
            for (std::uint32_t k = 0; k < b_.count && ok; ++k)
                if (const std::int64_t n = ch.nets[i]; of(k) == s && (n < 0 || n >= std::int64_t(b_.nics[k].size()))) {
                    finding(s, ch.net_at[i], fmt::format("{}: <net dev=\"{:x}\">: box {} has {} NIC{}{}: NCCL finds no such net "
                                                         "(ncclTopoIdToNetDev fails) [net]",
                                                         who, n, k, b_.nics[k].size(), b_.nics[k].size() == 1 ? "" : "s",
                                                         b_.nics[k].size() < 2 ? "" : fmt::format(" (net 0 to {:x})", b_.nics[k].size() - 1)));
                    ok = false;
                }
        if (ok && g.crossnic == 0 && ch.nets.size() == 2 && ch.nets[0] != ch.nets[1])
            note(s, at, fmt::format("{}: enters by net {:x} and leaves by net {:x} while crossnic=\"0\"; NCCL does not check", who, ch.nets[0], ch.nets[1]));
        return ok;
    }

    std::string node(Node n) const {
        if (!t_.is_processor(n)) return fmt::format("router {}", t_.node_name(n));
        return fmt::format("processor {} (box {}, GPU {:x})", idx(n), b_.box[idx(n)], b_.local[idx(n)]);
    }
    std::string nic(std::uint32_t box, std::int64_t net) const {
        const Node n = b_.nics[box][std::size_t(net)];
        return fmt::format("net {:x} of box {} ({} {})", net, box, t_.is_processor(n) ? "beside processor" : "router",
                           t_.is_processor(n) ? std::to_string(idx(n)) : t_.node_name(n));
    }

    /// A hop inside box: a channel or a path through switches alone.
    std::optional<std::vector<ChannelId>> inside(std::size_t s, const XmlPlace& at, const std::string& who, Node u, Node v,
                                                 std::string_view why) {
        auto p = router_path(t_, u, v);
        if (!p)
            finding(s, at, fmt::format("{}: {} -> {}{}: the machine has no link between them (nor a path through switches alone) [link]", who,
                                    node(u), node(v), why));
        return p;
    }

    /// From GPU `from` of box k out by net `out` (of box k's numbering) to box l in by net `in` (box l's) to GPU
    /// `to`: to the NIC (over NVLink when it is another GPU's, NCCL's PXN), through the network (switches alone),
    /// and from the NIC to the GPU (modelled as the NIC's GPU forwarding over NVLink; NCCL receives through PCIe,
    /// which the machine does not describe). Findings at source s.
    std::optional<std::vector<ChannelId>> across(std::size_t s, const XmlPlace& at, const std::string& who, Node from, std::int64_t out,
                                                 Node to, std::int64_t in) {
        const Node a = b_.nics[b_.box[idx(from)]][std::size_t(out)], z = b_.nics[b_.box[idx(to)]][std::size_t(in)];
        auto p1 = inside(s, at, who, from, a, fmt::format(" (to net {:x}, NCCL's PXN)", out));
        if (!p1) return std::nullopt;
        auto p2 = router_path(t_, a, z);
        if (!p2) {
            finding(s, at, fmt::format("{}: {} -> {}: the machine has no path between them through switches alone [link]", who,
                                    nic(b_.box[idx(from)], out), nic(b_.box[idx(to)], in)));
            return std::nullopt;
        }
        auto p3 = inside(s, at, who, z, to, fmt::format(" (from net {:x})", in));
        if (!p3) return std::nullopt;
        if (z != to && t_.is_processor(z) && !receive_noted_) {
            receive_noted_ = true;
            note(s, at, fmt::format("{}: {} receives by net {:x}, beside {}: NCCL receives it through PCIe, which the machine does not "
                                 "describe; the time counts it as that GPU forwarding over its links",
                                 who, node(to), in, node(z)));
        }
        p1->insert(p1->end(), p2->begin(), p2->end());
        p1->insert(p1->end(), p3->begin(), p3->end());
        return p1;
    }

    /// Channel c of every source's graph (`graphs`), nullopt after the findings where one is not a box's order.
    std::optional<std::vector<Chan>> all_channels(const std::vector<std::optional<NcclGraphXml>>& graphs, std::size_t c) {
        std::vector<Chan> out;
        bool ok = true;
        for (std::size_t s = 0; s < src_.size(); ++s) {
            std::optional<Chan> ch = channel(s, *graphs[s], c);
            ok = ok && ch;
            if (ch) out.push_back(std::move(*ch));
        }
        if (!ok) return std::nullopt;
        return out;
    }

    /// Box k's part of ring channel c: its GPUs in order and the nets its first GPU receives by and its last sends by.
    /// With crossnic="2" in box k's file, an even channel count and k odd, NCCL exchanges the rings of channels c and
    /// c^1 in that node (connect.cc:404-414, "Alternate rings to avoid crossing rails") while each rank still picks
    /// its net from channel c of its graph: index 0 for the channel's first GPU, else 1 (search.cc:1408-1410).
    struct Part {
        std::vector<std::uint32_t> gpus;
        std::int64_t in = 0, out = 0;
    };
    Part part(const std::vector<Chan>& ch, const std::vector<Chan>* pair, std::uint32_t k) const {
        const Chan& own = ch[of(k)];
        const bool swap = pair && ring_[of(k)]->crossnic == 2 && out_.channels_run % 2 == 0 && k % 2 == 1;
        Part p{swap ? (*pair)[of(k)].gpus : own.gpus, 0, 0};
        if (b_.count == 1) return p;
        auto net = [&](std::uint32_t gpu) { return own.nets[gpu == own.gpus.front() || own.nets.size() == 1 ? 0 : 1]; };
        p.in = net(p.gpus.front()), p.out = net(p.gpus.back());
        return p;
    }

    void rings() {
        const NcclGraphXml& g = *out_.ring_graph;
        for (std::size_t s = 0; s < src_.size(); ++s) {
            const NcclGraphXml& x = *ring_[s];
            if (x.pattern != nccl_pattern_ring)
                note(s, x.at, fmt::format("pattern=\"{}\" on the ring graph: NCCL connects rings from graph 0 whatever its pattern (connect.cc "
                                          "reads only the tree graph's)",
                                          x.pattern));
            if (x.pattern == nccl_pattern_nvls)
                finding(s, x.at, fmt::format("{}: pattern 5 (NVLS) makes ncclTopoGetNetDev pick the rings' NICs as NVLS heads "
                                             "(search.cc:1409-1413), not as the channels give them [net]",
                                             label(x)));
            channels_given(s, x, out_.channels_run);
        }
        const std::uint32_t K = b_.count;
        bool all = true;
        std::size_t given = g.channels.size();
        for (const auto& x : ring_) given = std::min(given, x->channels.size());
        std::vector<std::optional<std::vector<Chan>>> chans;
        for (std::size_t c = 0; c < given && c < out_.channels_run; ++c) chans.push_back(all_channels(ring_, c));
        for (std::size_t c = 0; c < chans.size(); ++c) {
            const std::size_t c2 = c ^ 1;
            if (!chans[c] || (c2 < chans.size() && !chans[c2])) {
                all = false;
                continue;
            }
            const std::string who = fmt::format("{} channel {}", label(g), c);
            std::vector<Part> parts;
            for (std::uint32_t k = 0; k < K; ++k) parts.push_back(part(*chans[c], c2 < chans.size() ? &*chans[c2] : nullptr, k));
            Ring r;
            for (std::uint32_t k = 0; k < K; ++k)
                for (std::uint32_t i : parts[k].gpus) r.order.push_back(b_.members[k][i]);
            bool ok = true;
            for (std::size_t i = 0; i < r.order.size() && ok; ++i) {
                const Node u = r.order[i], v = r.order[(i + 1) % r.order.size()];
                const std::uint32_t k = b_.box[idx(u)], l = b_.box[idx(v)];
                const XmlPlace& at = (*chans[c])[of(k)].at;
                std::optional<std::vector<ChannelId>> p;
                if (k == l) p = inside(of(k), at, who, u, v, "");
                else p = across(of(k), at, who, u, parts[k].out, v, parts[l].in);
                ok = bool(p);
                if (p) r.hops.push_back(std::move(*p));
            }
            all = all && ok;
            if (ok) out_.rings.push_back(std::move(r));
        }
        if (!all) out_.rings.clear();
    }

    /// nchannels against the channels given (search.cc:947-955 reads them all, runs nchannels).
    void channels_given(std::size_t s, const NcclGraphXml& g, std::size_t run) {
        if (g.channels.size() > 64)
            finding(s, g.at, fmt::format("{}: {} channels: NCCL writes each channel's nets into graph->inter[64 * 2] (graph.h:188) and "
                                         "passes its end [refused]",
                                         label(g), g.channels.size()));
        if (g.channels.size() < run)
            finding(s, g.at, fmt::format("{}: nchannels=\"{}\" and {} <channel> element{}: NCCL runs channels {} to {} with GPU lists it "
                                         "never read (rank 0 throughout) [refused]",
                                         label(g), g.nchannels, g.channels.size(), g.channels.size() == 1 ? "" : "s", g.channels.size(), run - 1));
        else if (g.channels.size() > std::size_t(g.nchannels))
            note(s, g.at, fmt::format("{}: {} <channel> elements and nchannels=\"{}\": NCCL reads them all and runs the first {}", label(g),
                                      g.channels.size(), g.nchannels, g.nchannels));
    }

    void trees() {
        const NcclGraphXml& g = *out_.tree_graph;
        for (std::size_t s = 0; s < src_.size(); ++s) {
            const NcclGraphXml& x = *tree_[s];
            if (x.pattern == nccl_pattern_nvls)
                finding(s, x.at, fmt::format("{}: pattern 5 (NVLS) makes ncclTopoGetNetDev pick the trees' NICs as NVLS heads "
                                             "(search.cc:1409-1413) [net]",
                                             label(x)));
            else if (x.pattern == nccl_pattern_ring || x.pattern == nccl_pattern_collnet_direct)
                note(s, x.at, fmt::format("pattern=\"{}\" on the tree graph: NCCL connects it as a balanced tree (pattern 1; connect.cc:55-56)",
                                          x.pattern));
            channels_given(s, x, std::size_t(g.nchannels));
        }
        const std::uint32_t G = b_.per_box, K = b_.count;
        // connect.cc:55-56: the GPU positions of a box's first and second child, by the pattern of that box's own file
        auto child_at = [&](std::uint32_t k, int type) {
            const int pattern = tree_[of(k)]->pattern;
            return type == 0 ? (pattern == nccl_pattern_tree ? 0u : 1u) : (pattern == nccl_pattern_split_tree ? 1u : 0u);
        };
        // the channels NCCL runs its trees on: min(tree, ring) (init.cc:1280, 1459), the tree graph's without a ring graph
        const std::size_t run = out_.ring_graph ? out_.channels_run : std::size_t(g.nchannels);
        bool all = true;
        for (std::size_t c = 0; c < std::size_t(g.nchannels); ++c) {
            bool given = true;
            for (const auto& x : tree_) given = given && c < x->channels.size();
            if (!given) {
                all = all && c >= run;
                continue;
            }
            const std::optional<std::vector<Chan>> ch = all_channels(tree_, c);
            if (!ch) {
                all = false;
                continue;
            }
            const std::string who = fmt::format("{} channel {}", label(g), c);
            bool ok = true;
            TreeLinks links;
            for (int tree = 0; tree < 2; ++tree) {
                links.parent[tree].assign(t_.processors(), -1);
                links.up[tree].assign(t_.processors(), {});
                links.down[tree].assign(t_.processors(), {});
            }
            // a link of both trees: child's parent, the path up to it and down from it
            auto link = [&](int tree, Node child, Node parent, std::optional<std::vector<ChannelId>> up, std::optional<std::vector<ChannelId>> down) {
                if (!up || !down) return false;
                links.parent[tree][idx(child)] = idx(parent);
                links.up[tree][idx(child)] = std::move(*up);
                links.down[tree][idx(child)] = std::move(*down);
                return true;
            };
            for (std::uint32_t k = 0; k < K && ok; ++k) {
                const Chan& x = (*ch)[of(k)];
                for (std::uint32_t i = 0; i + 1 < G && ok; ++i) {
                    const Node u = b_.members[k][x.gpus[i]], v = b_.members[k][x.gpus[i + 1]];
                    std::optional<std::vector<ChannelId>> down = inside(of(k), x.at, who, u, v, " (down the chain)");
                    std::optional<std::vector<ChannelId>> up = down ? inside(of(k), x.at, who, v, u, " (up the chain)") : std::nullopt;
                    ok = link(0, v, u, up, down) && link(1, v, u, up, down);
                }
            }
            if (ok && K == 1 && c < run) out_.trees.push_back(std::move(links));
            all = all && ok;
            if (!ok || K == 1) continue;
            for (std::uint32_t k = 0; k < K && ok; ++k)
                if (G == 1 && tree_[of(k)]->pattern != nccl_pattern_tree) {
                    finding(of(k), (*ch)[of(k)].at, fmt::format("{}: one GPU a box and pattern {}: connect.cc:55-56 takes a child at position 1 "
                                                                "of a chain of one [ring]",
                                                                who, tree_[of(k)]->pattern));
                    ok = false;
                }
            // a box's net at position 0, and at the others
            auto net_of = [&](std::uint32_t k, std::uint32_t pos) { return (*ch)[of(k)].nets[G == 1 || pos == 0 ? 0 : 1]; };
            for (int tree = 0; tree < 2 && ok; ++tree)
                for (std::uint32_t k = 0; k < K && ok; ++k) {
                    const DtreeUp up = dtree_up(int(K), tree, int(k));
                    if (up.parent < 0) continue;
                    const std::uint32_t p = std::uint32_t(up.parent), pos = child_at(p, up.child_type);
                    const Node child = b_.members[k][(*ch)[of(k)].gpus[0]], parent = b_.members[p][(*ch)[of(p)].gpus[pos]];
                    const XmlPlace& at = (*ch)[of(k)].at;
                    std::optional<std::vector<ChannelId>> to = across(of(k), at, who, child, net_of(k, 0), parent, net_of(p, pos));
                    std::optional<std::vector<ChannelId>> from = to ? across(of(k), at, who, parent, net_of(p, pos), child, net_of(k, 0)) : std::nullopt;
                    ok = link(tree, child, parent, std::move(to), std::move(from));
                }
            all = all && ok;
            if (ok && c < run) out_.trees.push_back(std::move(links));
        }
        if (!all || out_.trees.size() != run) out_.trees.clear();
    }

    /// Rings per channel and group, the busiest, and the least bandwidth a ring gets inside boxes
    /// and between them; and the file's speeds (the least over the nodes) against it.
    void load(const NcclGraphXml& g) {
        std::vector<std::uint32_t> on_channel(t_.channels().size(), 0), on_group(t_.groups().size(), 0);
        for (const Ring& r : out_.rings)
            for (const auto& hop : r.hops)
                for (ChannelId c : hop) {
                    ++on_channel[idx(c)];
                    for (std::uint32_t grp : t_.groups_of(c)) ++on_group[grp];
                }
        GraphLoad& l = out_.load;
        for (std::uint32_t c = 0; c < on_channel.size(); ++c)
            if (on_channel[c] > l.channel_rings) l.channel_rings = on_channel[c], l.busiest_channel = ChannelId{c};
        for (std::uint32_t grp = 0; grp < on_group.size(); ++grp)
            if (on_group[grp] > l.group_rings) l.group_rings = on_group[grp], l.busiest_group = grp;
        double intra = std::numeric_limits<double>::infinity(), inter = intra;
        for (const Ring& r : out_.rings)
            for (std::size_t i = 0; i < r.hops.size(); ++i) {
                double bw = std::numeric_limits<double>::infinity();
                for (ChannelId c : r.hops[i]) {
                    bw = std::min(bw, t_.speed(c).bandwidth / on_channel[idx(c)]);
                    for (std::uint32_t grp : t_.groups_of(c)) bw = std::min(bw, t_.group_bandwidth(grp) / on_group[grp]);
                }
                const bool between = b_.box[idx(r.order[i])] != b_.box[idx(r.order[(i + 1) % r.order.size()])];
                (between ? inter : intra) = std::min(between ? inter : intra, bw);
            }
        l.intra_Bps = std::isfinite(intra) ? intra : 0;
        l.inter_Bps = std::isfinite(inter) ? inter : 0;
        auto compare = [&](std::string_view key, double stated, double got, std::string_view where) {
            if (got > 0 && stated > got / 1e9 * (1 + 1e-6))
                note(0, ring_[0]->at, fmt::format("{}=\"{:g}\": a ring gets at most {:.4g} GB/s on this machine's links {}; NCCL's tuner "
                                                  "(tuning.cc) expects more than the links give",
                                                  key, stated, got / 1e9, where));
        };
        compare("speedintra", g.speedintra, l.intra_Bps, "inside a box");
        if (b_.count > 1) compare("speedinter", g.speedinter, l.inter_Bps, "between boxes");
    }

    const std::vector<NcclGraphSource>& src_;
    const Topology& t_;
    NcclBoxes b_;
    GraphCheck out_;
    std::vector<std::optional<NcclGraphXml>> ring_, tree_;  ///< per source, the graphs NCCL keeps
    bool receive_noted_ = false;
};

}  // namespace

GraphCheck check_nccl_graphs(const std::vector<NcclGraphSource>& files, const Topology& topo) {
    if (files.empty()) throw InputError("no NCCL graph file");
    if (topo.processors() < 2) throw InputError(fmt::format("{}: an NCCL graph needs at least 2 GPUs", topo.spec()));
    return Checker(files, topo).run();
}

GraphCheck check_nccl_graph(const NcclGraphFile& file, std::string_view name, const Topology& topo) {
    return check_nccl_graphs({{&file, std::string(name)}}, topo);
}

std::uint64_t nccl_graph_transfers(const GraphCheck& g, CollectiveKind kind, std::uint32_t processors) {
    std::uint64_t L = 1;
    for (const Ring& r : g.rings)
        for (const auto& h : r.hops) L = std::max<std::uint64_t>(L, h.size());
    const std::uint64_t span = kind == CollectiveKind::allreduce ? 2 * (processors - 1) : processors - 1;
    return span * processors * g.rings.size() * L;
}

SendTable nccl_graph_table(std::shared_ptr<const Topology> topo, const Model& model, CollectiveKind kind, const GraphCheck& g,
                           Deadline deadline) {
    if (g.rings.empty()) throw InputError("the graph file gives no rings that hold: no time");
    return ring_table(std::move(topo), model, kind, g.rings, 1, deadline);
}

SendTable nccl_graph_tree_table(std::shared_ptr<const Topology> topo, const Model& model, const GraphCheck& g, std::uint32_t pieces,
                                Deadline deadline) {
    if (g.trees.empty() || !g.holds()) throw InputError("the graph file gives no trees that hold: no time");
    return tree_table_of(std::move(topo), model, g.trees, pieces, deadline);
}

namespace {

/// Data per channel of t, in datums: every transfer moves its chunks (a bundle its parts) of C.
std::vector<double> channel_data(const SendTable& t) {
    const Messages ms = t.messages();
    std::vector<double> d(t.topology->channels().size(), 0.0);
    for (const Transfer& x : t.transfers) {
        d[idx(x.channel)] += static_cast<double>(ms.part_count(x.message)) / t.collective.chunks;
    }
    return d;
}

}  // namespace

std::string nccl_runs_more(const SendTable& t, const std::string& xml, Deadline deadline) {
    return nccl_runs_more(t, std::vector<std::string>{xml}, deadline);
}

std::string nccl_runs_more(const SendTable& t, const std::vector<std::string>& xmls, Deadline deadline) {
    const CollectiveKind kind = t.collective.kind;
    if (kind != CollectiveKind::allgather && kind != CollectiveKind::reduce_scatter && kind != CollectiveKind::allreduce) return "";
    std::vector<NcclGraphFile> files;
    std::vector<NcclGraphSource> set;
    for (std::size_t k = 0; k < xmls.size(); ++k)
        files.push_back(read_nccl_graph(xmls[k], xmls.size() == 1 ? "the graph file" : fmt::format("the graph file of node {}", k)));
    for (std::size_t k = 0; k < xmls.size(); ++k)
        set.push_back({&files[k], xmls.size() == 1 ? "the graph file" : fmt::format("the graph file of node {}", k)});
    const GraphCheck g = check_nccl_graphs(set, *t.topology);
    if (!g.holds()) return "NCCL's reader finds the graph file written for it does not hold: " + g.findings.front().what;
    const SendTable nccl = nccl_graph_table(t.topology, t.model, kind, g, deadline);
    const std::vector<double> ours = channel_data(t), theirs = channel_data(nccl);
    for (std::size_t c = 0; c < ours.size(); ++c)
        if (theirs[c] > ours[c] * (1 + 1e-9) + 1e-12) {
            const Channel& ch = t.topology->channels()[c];
            return fmt::format("NCCL runs the file as its ring, which moves {:.4g} of a datum from {} to {} where the table moves {:.4g} "
                               "(the table leaves out transfers NCCL makes, as a datum delivered only by NCCL's PXN relay): time the file "
                               "(verify FILE.xml) for what NCCL runs",
                               theirs[c], t.topology->node_name(ch.from), t.topology->node_name(ch.to), ours[c]);
        }
    return "";
}

}  // namespace collsched::nccl
