/** \file
 * A reader for MSCCL-IR XML that is as strict as the MSCCL executor's own lexer
 * (msccl_parser.cc: whitespace is ' ', '\n' or '\r'; attributes are separated by one space and
 * double-quoted; no XML declaration and no text), a checker for the executor's limits, and a
 * replay of the program: thread blocks run their steps in order, a step with a dependency waits
 * for that step of the other thread block, sends and receives are matched first-in first-out per
 * (sender, receiver, channel). The replay then checks the output buffers against the collective.
 */
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace collsched::test {

struct XmlNode {
    std::string name;
    std::vector<std::pair<std::string, std::string>> attrs;
    std::vector<XmlNode> subs;
    const std::string& attr(const std::string& k) const {
        for (const auto& [key, v] : attrs)
            if (key == k) return v;
        throw std::runtime_error(fmt::format("<{}> has no attribute {}", name, k));
    }
    int num(const std::string& k) const { return std::stoi(attr(k)); }
};

class MscclLexer {
public:
    explicit MscclLexer(const std::string& text) : s_(text) {}

    XmlNode parse() {
        auto top = node();
        if (!top || top->first != Kind::open) fail("expected <algo>");
        XmlNode root = std::move(top->second);
        children(root);
        skip();
        if (i_ != s_.size()) fail("trailing content after </algo>");
        return root;
    }

private:
    enum class Kind { open, single, close };
    [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(fmt::format("byte {}: {}", i_, what)); }
    void skip() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    char get() {
        if (i_ >= s_.size()) fail("unexpected end");
        return s_[i_++];
    }
    std::string token(char& last) {
        std::string t;
        for (char c = get();; c = get()) {
            if (c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r' || c == '=') {
                last = c;
                return t;
            }
            t += c;
        }
    }
    std::optional<std::pair<Kind, XmlNode>> node() {
        skip();
        if (i_ >= s_.size()) return std::nullopt;
        if (get() != '<') fail("expected '<' (the executor's reader allows no text)");
        char c;
        XmlNode n;
        n.name = token(c);
        if (n.name.starts_with("!--") || n.name.starts_with("?")) fail("comments and declarations are not expected");
        if (n.name.empty() && c == '/') {
            n.name = token(c);
            if (c != '>') fail("bad closing tag");
            return std::pair(Kind::close, std::move(n));
        }
        while (c == ' ') {
            std::string key = token(c);
            if (c != '=') fail(fmt::format("attribute '{}' of <{}> without a value, or two spaces", key, n.name));
            if (get() != '"') fail("attribute values must be double-quoted");
            std::string v;
            for (char x = get(); x != '"'; x = get()) v += x;
            n.attrs.emplace_back(key, v);
            c = get();
        }
        if (c == '/') {
            if (get() != '>') fail("expected '>' after '/'");
            return std::pair(Kind::single, std::move(n));
        }
        if (c != '>') fail(fmt::format("expected '>' in <{}>", n.name));
        return std::pair(Kind::open, std::move(n));
    }
    void children(XmlNode& parent) {
        for (;;) {
            auto n = node();
            if (!n) fail(fmt::format("unterminated <{}>", parent.name));
            if (n->first == Kind::close) {
                if (n->second.name != parent.name) fail(fmt::format("</{}> closes <{}>", n->second.name, parent.name));
                return;
            }
            if (n->first == Kind::open) children(n->second);
            parent.subs.push_back(std::move(n->second));
        }
    }
    const std::string& s_;
    std::size_t i_ = 0;
};

/// Checks the executor's limits (MSCCL_MAX_NUM_STEPS = `max_steps`); returns the first problem or "".
inline std::string msccl_limits(const XmlNode& algo, int max_steps = 64) {
    try {
        if (algo.name != "algo") return "top element is not <algo>";
        for (const char* a : {"name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace", "outofplace", "minBytes", "maxBytes"})
            (void)algo.attr(a);
        if (algo.attrs.size() > 16) return "more than 16 attributes on <algo>";
        const int ngpus = algo.num("ngpus"), nchannels = algo.num("nchannels");
        if (nchannels < 1 || nchannels > 32) return "nchannels out of 1..32";
        if (int(algo.subs.size()) != ngpus) return "one <gpu> per GPU expected";
        std::set<int> ids;
        if (ngpus > 1024) return "more than 1024 <gpu> children (MAX_SUBS)";
        for (const XmlNode& g : algo.subs) {
            if (g.name != "gpu") return "unexpected element " + g.name;
            const int id = g.num("id");
            std::size_t elements = 1 + algo.subs.size() + g.subs.size();
            for (const XmlNode& tb : g.subs) elements += tb.subs.size();
            if (elements > 4095) return fmt::format("gpu {} loads {} elements (MAX_NODES 4096)", id, elements);
            if (g.subs.size() > 1024) return "more than 1024 thread blocks on a gpu";
            ids.insert(id);
            const int ic = g.num("i_chunks"), oc = g.num("o_chunks"), sc = g.num("s_chunks");
            if (sc < 0) return "negative s_chunks";
            std::set<std::pair<int, int>> send_conn, recv_conn;
            std::map<int, int> sends_per_chan, recvs_per_chan;
            for (std::size_t t = 0; t < g.subs.size(); ++t) {
                const XmlNode& tb = g.subs[t];
                if (tb.name != "tb") return "unexpected element " + tb.name;
                if (tb.num("id") != int(t)) return fmt::format("gpu {}: thread block ids are not contiguous from 0", id);
                const int send = tb.num("send"), recv = tb.num("recv"), chan = tb.num("chan");
                if (send == id || recv == id) return fmt::format("gpu {}: a peer is the gpu itself", id);
                if (send < -1 || recv < -1 || send >= ngpus || recv >= ngpus) return "bad peer";
                if (chan < 0 || chan >= nchannels) return "channel out of range";
                if (send >= 0 && !send_conn.insert({send, chan}).second) return "two thread blocks send to one peer on one channel";
                if (recv >= 0 && !recv_conn.insert({recv, chan}).second) return "two thread blocks receive from one peer on one channel";
                if (send >= 0 && ++sends_per_chan[chan] > 32) return "more than 32 sending thread blocks on a channel";
                if (recv >= 0 && ++recvs_per_chan[chan] > 32) return "more than 32 receiving thread blocks on a channel";
                if (tb.subs.size() > std::size_t(max_steps)) return fmt::format("more than {} steps", max_steps);
                for (std::size_t s = 0; s < tb.subs.size(); ++s) {
                    const XmlNode& st = tb.subs[s];
                    if (st.name != "step") return "unexpected element " + st.name;
                    if (st.num("s") != int(s) || st.num("s") >= max_steps) return "step numbers not 0.. in order, or too large";
                    const int cnt = st.num("cnt");
                    if (cnt < 1 || cnt >= 72) return "cnt out of 1..71";
                    const std::string type = st.attr("type");
                    const bool sends = type == "s" || type == "rcs" || type == "rrcs";
                    const bool receives = type == "r" || type == "rrc" || type == "rcs" || type == "rrcs";
                    if (sends && send < 0) return "a send in a thread block without a send peer";
                    if (receives && recv < 0) return "a receive in a thread block without a receive peer";
                    auto bounds = [&](const std::string& buf, int off) {
                        int n = buf == "i" ? ic : buf == "o" ? oc : buf == "s" ? sc : -1;
                        return n >= 0 && off >= 0 && off + cnt <= n;
                    };
                    if ((type == "s" || type == "cpy" || type == "rrc" || type == "rrcs") && !bounds(st.attr("srcbuf"), st.num("srcoff")))
                        return "source out of bounds";
                    if ((type == "r" || type == "cpy" || type == "rrc" || type == "rcs" || type == "rrcs") &&
                        !bounds(st.attr("dstbuf"), st.num("dstoff")))
                        return "destination out of bounds";
                    const int depid = st.num("depid"), deps = st.num("deps");
                    if (depid >= 0) {
                        if (depid > 127 || depid >= int(g.subs.size()) || depid == int(t)) return "bad depid";
                        const XmlNode& other = g.subs[depid];
                        if (deps < 0 || deps >= int(other.subs.size())) return "bad deps";
                        if (other.subs[deps].num("hasdep") != 1) return "a step others depend on lacks hasdep=\"1\"";
                    }
                    int hasdep = st.num("hasdep");
                    if (hasdep != 0 && hasdep != 1) return "hasdep must be 0 or 1";
                }
            }
        }
        if (int(ids.size()) != ngpus || *ids.begin() != 0 || *ids.rbegin() != ngpus - 1) return "gpu ids are not 0..ngpus-1";
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

/// `rrc` is not expected (programs without reductions).
struct NoCombine {
    long operator()(long, long) const { throw std::runtime_error("unexpected step type rrc"); }
};

/// Replays the program on chunk identities. `input(g, k)` is what input chunk k of GPU g holds;
/// returns the output buffers (-1 for a chunk never written) or throws on a deadlock, a receive
/// of nothing or an unmatched send. `rrc` writes combine(local chunk, received chunk) (which
/// throws when the two may not combine). Thread blocks are visited in id order, or the reverse
/// with `reverse`: a program whose result depends on the interleaving gives two answers.
template <class Input, class Combine = NoCombine>
std::vector<std::vector<long>> msccl_replay(const XmlNode& algo, Input&& input, Combine combine = {}, bool reverse = false) {
    struct Buffers {
        std::vector<long> i, o, s;
    };
    const int ngpus = algo.num("ngpus");
    std::vector<Buffers> buf(ngpus);
    for (const XmlNode& g : algo.subs) {
        int id = g.num("id");
        buf[id].i.resize(g.num("i_chunks"));
        for (int k = 0; k < g.num("i_chunks"); ++k) buf[id].i[k] = input(id, k);
        buf[id].o.assign(g.num("o_chunks"), -1);
        buf[id].s.assign(g.num("s_chunks"), -1);
    }
    auto at = [&](int g, const std::string& b, int off) -> long& {
        return b == "i" ? buf[g].i.at(off) : b == "o" ? buf[g].o.at(off) : buf[g].s.at(off);
    };
    std::map<std::tuple<int, int, int>, std::deque<long>> conn;  // (from, to, chan)
    std::vector<std::vector<int>> pc(ngpus);
    for (const XmlNode& g : algo.subs) pc[g.num("id")].assign(g.subs.size(), 0);
    for (bool progress = true; progress;) {
        progress = false;
        for (const XmlNode& g : algo.subs) {
            const int id = g.num("id");
            for (std::size_t k = 0; k < g.subs.size(); ++k) {
                const std::size_t t = reverse ? g.subs.size() - 1 - k : k;
                const XmlNode& tb = g.subs[t];
                while (pc[id][t] < int(tb.subs.size())) {
                    const XmlNode& st = tb.subs[pc[id][t]];
                    int depid = st.num("depid");
                    if (depid >= 0 && pc[id][depid] <= st.num("deps")) break;
                    const std::string type = st.attr("type");
                    const int chan = tb.num("chan");
                    const int cnt = st.num("cnt");
                    const int so = st.num("srcoff"), dof = st.num("dstoff");
                    const bool receives = type == "r" || type == "rcs" || type == "rrc" || type == "rrcs";
                    if (receives && int(conn[{tb.num("recv"), id, chan}].size()) < cnt) break;
                    for (int x = 0; x < cnt; ++x) {
                        if (type == "s") {
                            long v = at(id, st.attr("srcbuf"), so + x);
                            if (v < 0) throw std::runtime_error(fmt::format("gpu {} sends a chunk it never received", id));
                            conn[{id, tb.num("send"), chan}].push_back(v);
                        } else if (type == "r" || type == "rcs") {
                            auto& q = conn[{tb.num("recv"), id, chan}];
                            at(id, st.attr("dstbuf"), dof + x) = q.front();
                            if (type == "rcs") conn[{id, tb.num("send"), chan}].push_back(q.front());
                            q.pop_front();
                        } else if (type == "rrc" || type == "rrcs") {
                            auto& q = conn[{tb.num("recv"), id, chan}];
                            long local = at(id, st.attr("srcbuf"), so + x);
                            const long sum = combine(local, q.front());
                            at(id, st.attr("dstbuf"), dof + x) = sum;
                            if (type == "rrcs") conn[{id, tb.num("send"), chan}].push_back(sum);
                            q.pop_front();
                        } else if (type == "cpy") {
                            at(id, st.attr("dstbuf"), dof + x) = at(id, st.attr("srcbuf"), so + x);
                        } else {
                            throw std::runtime_error("unexpected step type " + type);
                        }
                    }
                    ++pc[id][t];
                    progress = true;
                }
            }
        }
    }
    for (const XmlNode& g : algo.subs)
        for (std::size_t t = 0; t < g.subs.size(); ++t)
            if (pc[g.num("id")][t] < int(g.subs[t].subs.size()))
                throw std::runtime_error(fmt::format("deadlock: gpu {} thread block {} stops at step {}", g.num("id"), t, pc[g.num("id")][t]));
    for (auto& [k, q] : conn)
        if (!q.empty()) throw std::runtime_error("a send was never received");
    std::vector<std::vector<long>> out(ngpus);
    for (int g = 0; g < ngpus; ++g) out[g] = buf[g].o;
    return out;
}

}  // namespace collsched::test
