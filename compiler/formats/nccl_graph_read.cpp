// Reading NCCL graph files as NCCL's reader does (compiler/formats/nccl_graph_read.hpp; NVIDIA/nccl
// src/graph/xml.cc:1215-1265 and src/graph/search.cc:891-964, commit 5067397c).
#include "compiler/formats/nccl_graph_read.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "compiler/interop/msccl_xml.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

using msccl::Elem;

// src/graph/xml.h:22-24: names and values of at most MAX_STR_LEN - 1 characters, at most
// MAX_ATTR_COUNT attributes read (the rest ignored), MAX_SUBS children loaded per element;
// src/graph/topo.h:212: NCCL_GRAPH_XML_MAX_NODES elements loaded in all.
constexpr std::size_t max_str = 254, max_attrs = 16, max_subs = 640, max_nodes = 65536;

// search.cc:887-889 kvDictLinkType
constexpr std::array<std::string_view, 9> link_types = {"LOC", "NVL", "NVB", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"};

class Reader {
public:
    explicit Reader(std::string_view name) : name_(name) {}

    NcclGraphFile read(std::string_view text) {
        Elem root = msccl::parse_xml(text, name_, "NCCL graph XML");
        if (root.name != "graphs")
            fail(root, fmt::format("the root element is <{}>: an NCCL graph file is <graphs version=\"1\"> (src/graph/xml.cc "
                                   "ncclTopoGetXmlGraphFromFile loads nothing else)",
                                   root.name));
        limits(root);
        if (integer(root, "version") != 1)
            fail(root, fmt::format("version=\"{}\": NCCL reads graph files of version 1 only (NCCL_GRAPH_XML_VERSION, xml.cc:1240)",
                                   *attr(root, "version")));
        NcclGraphFile f;
        std::size_t loaded = 1;
        for (const Elem& g : root.subs) {
            if (g.name != "graph") {
                skipped(f, g, "<graphs>");
                continue;
            }
            f.graphs.push_back(graph(g, f, loaded));
        }
        if (root.subs.size() > max_subs) fail(root.subs[max_subs], fmt::format("more than {} graphs (xml.h MAX_SUBS)", max_subs));
        if (loaded > max_nodes) fail(root, fmt::format("more than {} elements (NCCL_GRAPH_XML_MAX_NODES, topo.h:212)", max_nodes));
        if (f.graphs.empty()) fail(root, "no <graph> element: NCCL loads nothing from this file and searches its own channels");
        return f;
    }

private:
    [[noreturn]] void fail(const Elem& e, const std::string& what) const {
        throw InputError(fmt::format("{}:{}:{}: {}", name_, e.line, e.col, what));
    }

    /// xml.cc's fixed sizes, for every element NCCL loads.
    void limits(const Elem& e) const {
        if (e.name.size() > max_str) fail(e, fmt::format("an element name of {} characters; NCCL's reader takes at most {}", e.name.size(), max_str));
        for (const auto& [k, v] : e.attrs)
            if (k.size() > max_str || v.size() > max_str)
                fail(e, fmt::format("<{}> {}: a name or value of more than {} characters (xml.h MAX_STR_LEN)", e.name, k.substr(0, 40), max_str));
    }

    /// An attribute among the first MAX_ATTR_COUNT (NCCL ignores the others, xml.cc:120-122).
    static const std::string* attr(const Elem& e, std::string_view key) {
        for (std::size_t i = 0; i < e.attrs.size() && i < max_attrs; ++i)
            if (e.attrs[i].first == key) return &e.attrs[i].second;
        return nullptr;
    }

    const std::string& need(const Elem& e, std::string_view key) const {
        if (const std::string* v = attr(e, key)) return *v;
        for (const auto& [k, v] : e.attrs)
            if (k == key)
                fail(e, fmt::format("<{}> {} is attribute {} or later: NCCL reads only the first {} (xml.cc:120-122)", e.name, key,
                                    max_attrs + 1, max_attrs));
        fail(e, fmt::format("<{}> has no {} attribute, which NCCL requires (src/graph/search.cc ncclTopoGetGraphFromXmlSub)", e.name, key));
    }

    /// strtol(str, NULL, base) on the whole value: base 0 takes 0x.. hexadecimal, 0.. octal,
    /// else decimal; base 16 an optional 0x. A value strtol would read only in part is refused.
    std::int64_t integer(const Elem& e, std::string_view key, int base = 0) const {
        const std::string& s = need(e, key);
        std::string_view t = s;
        const bool minus = t.starts_with('-');
        if (minus || t.starts_with('+')) t.remove_prefix(1);
        int b = base;
        if ((b == 0 || b == 16) && (t.starts_with("0x") || t.starts_with("0X"))) t.remove_prefix(2), b = 16;
        else if (b == 0 && t.size() > 1 && t.starts_with('0')) t.remove_prefix(1), b = 8;
        else if (b == 0) b = 10;
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, b);
        if (t.empty() || ec != std::errc{} || p != t.data() + t.size() || v > 0x7fffffff)
            fail(e, fmt::format("<{}> {}=\"{}\": expected a {}number (NCCL's strtol would read {})", e.name, key, s,
                                base == 16 ? "hexadecimal " : "whole ", base == 16 ? "its leading hexadecimal digits" : "its leading digits"));
        return minus ? -v : v;
    }

    double number(const Elem& e, std::string_view key) const {
        const std::string& s = need(e, key);
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v) || v < 0)
            fail(e, fmt::format("<{}> {}=\"{}\": expected a number of GB/s at least 0", e.name, key, s));
        return v;
    }

    std::string link_type(const Elem& e, std::string_view key) const {
        const std::string& s = need(e, key);
        for (std::string_view t : link_types)
            if (s == t) return s;
        fail(e, fmt::format("<{}> {}=\"{}\": NCCL knows LOC, NVL, NVB, PIX, PXB, P2C, PXN, PHB and SYS (search.cc:887-889 "
                            "kvDictLinkType; another name fails ncclTopoGetGraphFromXmlSub)",
                            e.name, key, s));
    }

    void skipped(NcclGraphFile& f, const Elem& e, std::string_view in) const {
        f.notes.push_back(fmt::format("{}:{}:{}: <{}> in {} is skipped by NCCL's reader (xml.cc loads only <graph>, <channel>, <net> "
                                      "and <gpu>)",
                                      name_, e.line, e.col, e.name, in));
    }

    NcclGraphXml graph(const Elem& e, NcclGraphFile& f, std::size_t& loaded) const {
        limits(e);
        ++loaded;
        NcclGraphXml g;
        g.at = {e.line, e.col};
        g.id = int(integer(e, "id"));
        g.crossnic = int(integer(e, "crossnic"));
        if (g.crossnic < 0 || g.crossnic > 2) fail(e, fmt::format("crossnic=\"{}\": NCCL writes 0, 1 or 2", g.crossnic));
        g.pattern = int(integer(e, "pattern"));
        if (g.pattern < nccl_pattern_balanced_tree || g.pattern > nccl_pattern_collnet_direct)
            fail(e, fmt::format("pattern=\"{}\": NCCL_TOPO_PATTERN_* are 1 balanced tree, 2 split tree, 3 tree, 4 ring, 5 NVLS, "
                                "6 CollNet direct (src/include/graph.h:160-169)",
                                g.pattern));
        g.nchannels = int(integer(e, "nchannels"));
        if (g.nchannels < 1 || g.nchannels > nccl_max_graph_channels)
            fail(e, fmt::format("nchannels=\"{}\": NCCL uses a graph of 1 to {} channels (below 1 it ignores the graph and searches, "
                                "search.cc:1121; above {} the duplicated channels pass MAXCHANNELS 64, connect.cc ncclTopoPreset)",
                                g.nchannels, nccl_max_graph_channels, nccl_max_graph_channels));
        g.speedintra = number(e, "speedintra");
        g.speedinter = number(e, "speedinter");
        if (attr(e, "latencyinter")) g.latencyinter = number(e, "latencyinter");
        g.typeintra = link_type(e, "typeintra");
        g.typeinter = link_type(e, "typeinter");
        g.samechannels = int(integer(e, "samechannels"));
        std::size_t channels = 0;
        for (const Elem& c : e.subs) {
            if (c.name != "channel") {
                skipped(f, c, "<graph>");
                continue;
            }
            if (++channels > max_subs) fail(c, fmt::format("more than {} channels in a graph (xml.h MAX_SUBS)", max_subs));
            g.channels.push_back(channel(c, f, loaded));
        }
        return g;
    }

    NcclGraphChannelXml channel(const Elem& e, NcclGraphFile& f, std::size_t& loaded) const {
        limits(e);
        ++loaded;
        NcclGraphChannelXml c;
        c.at = {e.line, e.col};
        for (const Elem& d : e.subs) {
            if (d.name != "net" && d.name != "gpu") {
                skipped(f, d, "<channel>");
                continue;
            }
            limits(d);
            ++loaded;
            if (c.devices.size() == max_subs) fail(d, fmt::format("more than {} devices in a channel (xml.h MAX_SUBS)", max_subs));
            NcclGraphDevice x;
            x.net = d.name == "net";
            x.at = {d.line, d.col};
            x.dev = integer(d, "dev", 16);
            if (!x.net && attr(d, "rank")) x.rank = integer(d, "rank");
            for (const Elem& inner : d.subs) skipped(f, inner, "<" + d.name + ">");
            c.devices.push_back(x);
        }
        return c;
    }

    std::string name_;
};

}  // namespace

bool looks_like_nccl_graph(std::string_view text) {
    std::size_t i = 0;
    for (;;) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
        if (text.substr(i, 2) == "<?") {
            const auto e = text.find("?>", i);
            if (e == std::string_view::npos) return false;
            i = e + 2;
        } else if (text.substr(i, 4) == "<!--") {
            const auto e = text.find("-->", i);
            if (e == std::string_view::npos) return false;
            i = e + 3;
        } else {
            break;
        }
    }
    if (text.substr(i, 7) != "<graphs") return false;
    return i + 7 == text.size() || std::string_view(" \t\r\n>/").find(text[i + 7]) != std::string_view::npos;
}

NcclGraphFile read_nccl_graph(std::string_view text, std::string_view name) { return Reader(name).read(text); }

}  // namespace collsched
