// MSCCL++ allreduce plans across boxes (docs/exports.md, "Plans across boxes"): every box's
// switch reduces and multicasts for the GPUs of that box only, and the boxes exchange their sums
// over the NICs. Per chunk and box the table must read: every GPU's value up to the box's switch,
// the box's sum down to one owner (a `glres` of the owner on its box's switch channel: the sum
// lands in every member's buffer, the owner's included), puts of partials between the owners of
// the chunk in different boxes (port channels: `pwsf` into a scratch slot of the peer, which waits
// and adds it or takes it), then the sum of every GPU up from the owner and down to the others of
// its box (a `gstore`). Anything else is refused, naming what.
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/interop/export_mscclpp_switch.hpp"
#include "compiler/interop/mscclpp_plan.hpp"
#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/teardown.hpp"
#include "support/trace.hpp"

namespace collsched::detail {

namespace {

using json = nlohmann::ordered_json;

/// The boxes of the table: every switch it uses with the GPUs joined to it both ways.
struct Boxes {
    std::vector<std::vector<std::uint32_t>> gpus;  ///< per box, ascending
    std::vector<int> of;                           ///< per GPU, its box
    std::vector<std::uint32_t> sw;                 ///< per box, the switch's node index
};

Boxes find_boxes(const SendTable& t) {
    const Topology& topo = *t.topology;
    const std::uint32_t P = topo.processors();
    std::vector<std::uint32_t> used;
    for (const Transfer& x : t.transfers) {
        const Channel& ch = topo.channel(x.channel);
        for (Node n : {ch.from, ch.to})
            if (is_switch_node(topo, n)) used.push_back(idx(n));
    }
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    Boxes b;
    b.of.assign(P, -1);
    for (std::uint32_t s : used) {
        std::vector<std::uint32_t> box;
        for (std::uint32_t p = 0; p < P; ++p) {
            if (!topo.find_channel(Node{p}, Node{s}) || !topo.find_channel(Node{s}, Node{p})) continue;
            if (b.of[p] >= 0)
                refuse_plan(t, fmt::format("GPU {} is joined to two switches the table uses ({} and {}): a switch channel's group is the GPUs "
                                           "of one box",
                                           p, topo.node_name(Node{b.sw[std::size_t(b.of[p])]}), topo.node_name(Node{s})));
            b.of[p] = int(b.gpus.size());
            box.push_back(p);
        }
        if (box.size() < 2) refuse_plan(t, fmt::format("{} serves {} GPU: a switch channel's group is two GPUs or more", topo.node_name(Node{s}), box.size()));
        b.gpus.push_back(std::move(box));
        b.sw.push_back(s);
    }
    for (std::uint32_t p = 0; p < P; ++p)
        if (b.of[p] < 0) refuse_plan(t, fmt::format("GPU {} is joined to none of the switches the table uses", p));
    return b;
}

/// A set of boxes, one bit each.
class BoxSet {
public:
    explicit BoxSet(std::size_t boxes = 0) : w_((boxes + 63) / 64, 0) {}
    void add(std::size_t b) { w_[b / 64] |= std::uint64_t{1} << (b % 64); }
    bool disjoint(const BoxSet& o) const {
        for (std::size_t i = 0; i < w_.size(); ++i)
            if (w_[i] & o.w_[i]) return false;
        return true;
    }
    bool contains(const BoxSet& o) const {
        for (std::size_t i = 0; i < w_.size(); ++i)
            if (o.w_[i] & ~w_[i]) return false;
        return true;
    }
    void unite(const BoxSet& o) {
        for (std::size_t i = 0; i < w_.size(); ++i) w_[i] |= o.w_[i];
    }
    bool operator==(const BoxSet&) const = default;

private:
    std::vector<std::uint64_t> w_;
};

/// One op of a chain (a GPU's work on one chunk it owns), in step order; within a step, in this order.
enum class Kind : std::uint8_t { glres, send, gstore, recv };

struct Event {
    std::uint32_t gpu = 0, chunk = 0;
    Step step = 0;
    Kind kind = Kind::glres;
    std::uint32_t peer = 0;  ///< send: the receiver; recv: the sender
    int slot = 0;            ///< send, recv: the receiver's scratch slot
    bool combine = false;    ///< recv: added to the owner's chunk (else it replaces it)
};

/// Reads the table as per-box switch sums, puts between owners and per-box multicasts.
class BoxReader {
public:
    BoxReader(const SendTable& t, const Messages& ms) : t_(t), ms_(ms), b_(find_boxes(t)) {
        P_ = t.topology->processors();
        B_ = b_.gpus.size();
        C_ = table_chunks(t);
        const std::size_t cells = std::size_t(C_) * B_;
        owner_.assign(cells, -1);
        last_up_.assign(cells, 0);
        reduced_.assign(cells, 0);
        stored_.assign(cells, 0);
        ups_.assign(cells, 0);
        downs_.assign(cells, 0);
        value_.assign(cells, BoxSet(B_));
        up_seen_.assign(std::size_t(C_) * P_, false);
        down_seen_.assign(std::size_t(C_) * P_, false);
        owner_in_sum_.assign(cells, false);
        slots_.assign(P_, 0);
        all_ = BoxSet(B_);
        for (std::size_t b = 0; b < B_; ++b) all_.add(b);
    }

    void read() {
        std::vector<std::size_t> order(t_.transfers.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return t_.transfers[a].step < t_.transfers[b].step; });
        for (std::size_t i = 0; i < order.size();) {
            std::size_t j = i;
            while (j < order.size() && t_.transfers[order[j]].step == t_.transfers[order[i]].step) ++j;
            // sends read what their GPU held before the step, arrivals change it after
            std::vector<Arrival> arrivals;
            for (std::size_t k = i; k < j; ++k) hop(t_.transfers[order[k]], arrivals);
            for (const Arrival& a : arrivals) arrive(a);
            i = j;
        }
        finish();
    }

    const Boxes& boxes() const { return b_; }
    std::uint32_t chunks() const { return C_; }
    std::vector<Event>& events() { return events_; }
    const std::vector<int>& slots() const { return slots_; }
    int owner(std::uint32_t c, std::size_t b) const { return owner_[cell(c, b)]; }

private:
    std::size_t cell(std::uint32_t c, std::size_t b) const { return std::size_t(c) * B_ + b; }
    std::string name(const Transfer& x) const {
        const Channel& ch = t_.topology->channel(x.channel);
        return fmt::format("{} ({} -> {} in step {})", ms_.name(x.message), t_.topology->node_name(ch.from), t_.topology->node_name(ch.to), x.step);
    }
    [[noreturn]] void refuse(const Transfer& x, std::string_view why) const { refuse_plan(t_, fmt::format("{}: {}", name(x), why)); }

    /// The boxes whose GPUs make up `sources` exactly, or nullopt when some box is in part.
    std::optional<BoxSet> whole_boxes(const std::vector<std::uint32_t>& sources) const {
        std::map<int, std::size_t> count;
        for (std::uint32_t s : sources) ++count[b_.of[s]];
        BoxSet set(B_);
        for (auto [b, n] : count) {
            if (n != b_.gpus[std::size_t(b)].size()) return std::nullopt;
            set.add(std::size_t(b));
        }
        return set;
    }

    /// A transfer between boxes, applied to its receiver after the step's sends.
    struct Arrival {
        const Transfer* x;
        BoxSet set;
        std::size_t event;  ///< its recv event
    };

    void hop(const Transfer& x, std::vector<Arrival>& arrivals) {
        const Topology& topo = *t_.topology;
        const Channel& ch = topo.channel(x.channel);
        const auto pv = partial_of(ms_, x.message);
        if (!pv) refuse(x, "not a partial of the reduction");
        const std::uint32_t c = pv->chunk;
        const bool up = is_switch_node(topo, ch.to), down = is_switch_node(topo, ch.from);
        if (!up && !down) {
            if (!topo.is_processor(ch.from) || !topo.is_processor(ch.to))
                refuse(x, "crosses a router that neither reduces nor multicasts (a plan across boxes carries GPU-to-GPU transfers "
                          "over the NICs, written by their ends)");
            const std::uint32_t p = idx(ch.from), q = idx(ch.to);
            if (b_.of[p] == b_.of[q])
                refuse(x, "a transfer between two GPUs of one box: a plan with switch channels carries transfers between a GPU and the "
                          "switch only (mixing them with puts is not written yet)");
            auto set = whole_boxes(pv->sources);
            if (!set) refuse(x, "a partial of part of a box goes between boxes (only whole boxes' sums do: the switch adds a box at once)");
            const std::size_t pc = cell(c, std::size_t(b_.of[p]));
            if (owner_[pc] != int(p) || reduced_[pc] >= x.step || stored_[pc] != 0)
                refuse(x, "its sender does not hold the chunk's box sum then (a GPU between boxes sends the chunk it received from its "
                          "box's switch, before it stores the sum back)");
            if (!(value_[pc] == *set)) refuse(x, "the sender holds another partial of the chunk then");
            const int slot = slots_[q]++;
            events_.push_back({p, c, x.step, Kind::send, q, slot, false});
            arrivals.push_back({&x, std::move(*set), events_.size()});
            events_.push_back({q, c, x.step, Kind::recv, p, slot, false});  // combine: set on arrival
            return;
        }
        if (up == down) refuse(x, "goes from one switch to another");
        const std::uint32_t g = idx(up ? ch.from : ch.to);
        const std::size_t b = std::size_t(b_.of[g]);
        if (b_.sw[b] != idx(up ? ch.to : ch.from)) refuse(x, "goes through the switch of another box than its GPU's");
        const std::size_t k = cell(c, b);
        const bool full = pv->sources.size() == P_;
        if (up && !full) {
            if (pv->sources.size() != 1 || pv->sources[0] != g || up_seen_[std::size_t(c) * P_ + g])
                refuse(x, "goes up to the switch other than as its GPU's own value, once");
            up_seen_[std::size_t(c) * P_ + g] = true;
            ++ups_[k];
            last_up_[k] = std::max(last_up_[k], x.step);
        } else if (up) {
            if (owner_[k] != int(g) || stored_[k] != 0) refuse(x, "the sum goes up from another GPU than the chunk's owner in the box, or twice");
            if (!(value_[k] == all_)) refuse(x, "its GPU does not hold the sum of every box then");
            stored_[k] = x.step;
            events_.push_back({g, c, x.step, Kind::gstore, 0, 0, false});
        } else if (!full) {
            std::vector<std::uint32_t> want = pv->sources;
            want.push_back(g);
            std::sort(want.begin(), want.end());
            want.erase(std::unique(want.begin(), want.end()), want.end());
            if (owner_[k] >= 0) refuse(x, "a second sum of the box for one chunk");
            if (want != b_.gpus[b]) refuse(x, "comes down from the switch as other than the sum of its box (but its receiver)");
            owner_[k] = int(g);
            owner_in_sum_[k] = std::find(pv->sources.begin(), pv->sources.end(), g) != pv->sources.end();
            reduced_[k] = x.step;
            value_[k].add(b);
            events_.push_back({g, c, x.step, Kind::glres, 0, 0, false});
        } else {
            if (stored_[k] == 0 || stored_[k] >= x.step || int(g) == owner_[k] || down_seen_[std::size_t(c) * P_ + g])
                refuse(x, "the sum comes down to a GPU other than once, after its owner stored it into the switch, to the others of the box");
            down_seen_[std::size_t(c) * P_ + g] = true;
            ++downs_[k];
        }
    }

    void arrive(const Arrival& a) {
        const Transfer& x = *a.x;
        const BoxSet& set = a.set;
        const Channel& ch = t_.topology->channel(x.channel);
        const std::uint32_t q = idx(ch.to);
        const auto c = partial_of(ms_, x.message)->chunk;
        const std::size_t k = cell(c, std::size_t(b_.of[q]));
        if (owner_[k] != int(q) || reduced_[k] >= x.step || stored_[k] != 0)
            refuse(x, "arrives at a GPU that does not hold the chunk's box sum then (the owner, after its box's switch summed and before "
                      "it stores the sum back)");
        if (value_[k].disjoint(set)) {
            events_[a.event].combine = true;
            value_[k].unite(set);
        } else if (set.contains(value_[k])) {
            value_[k] = set;
        } else {
            refuse(x, "its partial overlaps what the receiver holds without containing it (counted twice)");
        }
    }

    void finish() const {
        for (std::uint32_t c = 0; c < C_; ++c)
            for (std::size_t b = 0; b < B_; ++b) {
                const std::size_t k = cell(c, b), n = b_.gpus[b].size();
                const int o = owner_[k];
                // the owner's own value is in the switch's sum (NCCL's form) exactly when it went up
                const bool owner_up = o >= 0 && up_seen_[std::size_t(c) * P_ + std::uint32_t(o)];
                if (o < 0 || stored_[k] == 0 || downs_[k] != n - 1 || ups_[k] != n - 1 + (owner_up ? 1 : 0) || owner_up != bool(owner_in_sum_[k]) ||
                    last_up_[k] >= reduced_[k])
                    refuse_plan(t_, fmt::format("chunk {} in the box of {} does not go values up, the box's sum down to one owner, the sum of "
                                                "every box up from it and down to the others, in that order",
                                                c, t_.topology->node_name(Node{b_.sw[b]})));
            }
    }

    const SendTable& t_;
    const Messages& ms_;
    Boxes b_;
    std::uint32_t P_ = 0, C_ = 0;
    std::size_t B_ = 0;
    BoxSet all_;
    std::vector<int> owner_;
    std::vector<Step> last_up_, reduced_, stored_;
    std::vector<std::uint32_t> ups_, downs_;
    std::vector<BoxSet> value_;
    std::vector<bool> up_seen_, down_seen_, owner_in_sum_;
    std::vector<int> slots_;
    std::vector<Event> events_;
};


/// The plan of a table BoxReader read: per GPU, its chains (the chunks it owns) dealt round-robin
/// over K thread blocks, each block's ops in step order.
class BoxWriter {
public:
    BoxWriter(const SendTable& t, const MscclppOptions& opt, BoxReader& r) : t_(t), opt_(opt), b_(r.boxes()), slots_(r.slots()), events_(r.events()) {
        P_ = t.topology->processors();
        const std::uint32_t C = r.chunks();
        owned_.assign(P_, {});
        pos_.assign(std::size_t(C) * b_.gpus.size(), 0);
        for (std::uint32_t c = 0; c < C; ++c)
            for (std::size_t b = 0; b < b_.gpus.size(); ++b) {
                const int o = r.owner(c, b);
                pos_[std::size_t(c) * b_.gpus.size() + b] = int(owned_[std::size_t(o)].size());
                owned_[std::size_t(o)].push_back(c);
            }
        std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
            return std::tie(a.gpu, a.step, a.kind) < std::tie(b.gpu, b.step, b.kind);
        });
        begin_.assign(P_ + 1, events_.size());
        for (std::size_t i = events_.size(); i-- > 0;) begin_[events_[i].gpu] = i;
        for (std::uint32_t g = P_; g-- > 0;) begin_[g] = std::min(begin_[g], begin_[g + 1]);
    }

    std::string run() {
        // every block opens with a handshake and a nop and closes with a signal and a wait round: 5 ops at least;
        // every event is one op at least, so a GPU of E events needs E / 59 blocks at least
        const int most = mscclpp::resident_blocks(1024);
        std::size_t chains = 1, events = 0;
        for (std::uint32_t g = 0; g < P_; ++g) {
            chains = std::max(chains, owned_[g].size());
            events = std::max(events, begin_[g + 1] - begin_[g]);
        }
        const std::size_t least = (events + 58) / 59;
        if (least > std::size_t(most))
            refuse_plan(t_, fmt::format("a GPU has {} switch ops, puts and receives, which need {} thread blocks of at most 64 ops (MAX_OPERATION, "
                                        "execution_common.hpp:17); more than the {} that run at once on an A100 (docs/exports.md): fewer pieces",
                                        events, least, most));
        // as few blocks as fit (as the plans of one box): the checker's vector clocks grow with the blocks that touch a GPU.
        // Each K's ops are counted without their JSON; only the K that fits is written (the 128-piece NVLS_TREE of
        // 16 x 8 GPUs tries 27, 62 and 91 blocks: building and freeing the JSON of all three took 6 s of the writer's 7.4)
        for (int K = std::max(1, int(least));;) {
            if (opt_.deadline.passed()) throw LimitReached(fmt::format("time limit (the MSCCL++ plan's writer, at {} thread blocks a GPU)", K));
            const std::size_t ops = build<false>(K).second;
            trace("mscclpp plan across boxes: {} thread blocks a GPU, at most {} ops a block (at least {} blocks)", K, ops, least);
            if (ops <= 64) {
                auto [plan, written] = build<true>(K);
                COLLSCHED_ASSERT(written == ops);
                return plan;
            }
            if (K >= most || std::size_t(K) >= chains)
                refuse_plan(t_, fmt::format("{} thread blocks a GPU still leave a block {} ops, above the executor's 64 (MAX_OPERATION, "
                                            "execution_common.hpp:17){}: fewer pieces",
                                            K, ops, K >= most ? fmt::format(", and more would not all run at once on an A100 ({} blocks)", most) : ""));
            // a block's ops fall about as 1/K beyond its 5 to open and close
            K = std::min({most, int(chains), std::max(K + 1, int(std::size_t(K) * (ops - 5) / 59))});
        }
    }

private:
    int block(std::uint32_t g, std::uint32_t c, int K) const { return pos_[std::size_t(c) * b_.gpus.size() + std::size_t(b_.of[g])] % K; }

    static json local(char b, int index) { return {{"type", std::string(1, b)}, {"index", index}, {"size", 1}}; }
    static json through_switch(int index) { return {{"switch_channel_id", 0}, {"index", index}, {"size", 1}}; }

    /// A block's ops: written as JSON (`emit`), or only counted (build<false>: which K fits).
    struct Ops {
        bool emit = true;
        json list = json::array();
        std::size_t n = 0;
        bool last_nop = false;
        /// Appends the op `make()` makes (called only when emitting).
        template <class Make>
        void push(Make&& make, bool nop = false) {
            if (emit) list.push_back(make());
            ++n;
            last_nop = nop;
        }
        void push_nop() {
            push([] { return json{{"name", "nop"}}; }, true);
        }
    };

    static void sync(Ops& ops, const char* name, const std::vector<int>& ids, bool port) {
        // a channel once an op (a wait on one channel twice in an op would spin on one count twice)
        std::vector<int> rest = ids;
        while (!rest.empty()) {
            std::vector<int> part, later;
            for (int id : rest)
                if (part.size() < 8 && std::find(part.begin(), part.end(), id) == part.end()) part.push_back(id);
                else later.push_back(id);
            ops.push([&] { return json{{"name", name}, {"channel_ids", part}, {"channel_type", port ? "port" : "memory"}}; });
            rest = std::move(later);
        }
    }

    /// Port channels: one per pair of GPUs and pair of their blocks that exchange a chunk; the n-th channel of p to q
    /// pairs with the n-th of q to p (execution_plan.cc's chanConnectedPeersMap), so both list a pair's links in one order.
    void place_ports(int K) {
        link_.clear();
        std::map<std::pair<std::uint32_t, std::uint32_t>, int> count;
        for (const Event& e : events_) {
            if (e.kind != Kind::send) continue;
            const int jp = block(e.gpu, e.chunk, K), jq = block(e.peer, e.chunk, K);
            const auto key = e.gpu < e.peer ? std::tuple{e.gpu, e.peer, jp, jq} : std::tuple{e.peer, e.gpu, jq, jp};
            if (link_.try_emplace(key, count[{std::get<0>(key), std::get<1>(key)}]).second) ++count[{std::get<0>(key), std::get<1>(key)}];
        }
        base_.assign(P_, {});
        port_peers_.assign(P_, {});
        for (const auto& [pair, n] : count) base_[pair.first][pair.second] = base_[pair.second][pair.first] = 0;
        for (std::uint32_t g = 0; g < P_; ++g)
            for (auto& [peer, at] : base_[g]) {
                at = int(port_peers_[g].size());
                const int n = count[{std::min(g, peer), std::max(g, peer)}];
                for (int k = 0; k < n; ++k) port_peers_[g].push_back(int(peer));
            }
    }
    int port_channel(std::uint32_t g, int jg, std::uint32_t peer, int jpeer) const {
        const auto key = g < peer ? std::tuple{g, peer, jg, jpeer} : std::tuple{peer, g, jpeer, jg};
        return base_[g].at(peer) + link_.at(key);
    }

    /// A block's ops between its opening (a handshake on all its channels, as the plans of one box and of puts open,
    /// and a nop) and its close (a nop, a signal and a wait to its box: no GPU ends before the multicasts into it did).
    static Ops opened_and_closed(Ops& ops, int mates, std::size_t ports) {
        std::vector<int> mem(static_cast<std::size_t>(mates)), port(ports);
        for (int k = 0; k < mates; ++k) mem[std::size_t(k)] = k;
        for (std::size_t k = 0; k < ports; ++k) port[k] = int(k);
        Ops all{ops.emit};
        sync(all, "rlxsignal", mem, false);
        sync(all, "signal", port, true);
        sync(all, "rlxwait", mem, false);
        sync(all, "wait", port, true);
        all.push_nop();
        if (ops.n > 0) {
            for (json& op : ops.list) all.list.push_back(std::move(op));
            all.n += ops.n;
            all.last_nop = ops.last_nop;
        }
        if (!all.last_nop) all.push_nop();
        sync(all, "signal", mem, false);
        sync(all, "wait", mem, false);
        return all;
    }

    /// A GPU's channels: K blocks' memory channels to its box, its port channels, its box's switch channel.
    json gpu_channels(std::uint32_t g, int K) const {
        const std::vector<std::uint32_t>& box = b_.gpus[std::size_t(b_.of[g])];
        std::vector<int> peers, ranks(box.begin(), box.end());
        for (int j = 0; j < K; ++j)
            for (std::uint32_t p : box)
                if (p != g) peers.push_back(int(p));
        json channels = json::array({{{"channel_type", "memory"}, {"connected_to", peers}}});
        if (!port_peers_[g].empty()) channels.push_back({{"channel_type", "port"}, {"connected_to", port_peers_[g]}});
        channels.push_back({{"channel_type", "switch"}, {"buffer_type", "i"}, {"rank_groups", json::array({{{"size", box.size()}, {"ranks", ranks}}})}});
        return channels;
    }

    static int local_of(std::vector<int>& list, int id) {
        auto it = std::find(list.begin(), list.end(), id);
        if (it != list.end()) return int(it - list.begin());
        list.push_back(id);
        return int(list.size()) - 1;
    }

    /// The plan's text before its GPUs (through `"gpus": [`) and after them (from the array's `]`).
    std::pair<std::string, std::string> around_gpus() const {
        std::string plan = plan_envelope(t_, opt_, "allreduce", json::array()).dump(2);
        constexpr std::string_view empty = "\n  \"gpus\": []";
        const std::size_t at = plan.find(empty);
        COLLSCHED_ASSERT(at != std::string::npos);
        std::string tail = "\n  ]" + plan.substr(at + empty.size());
        plan.resize(at);
        plan += "\n  \"gpus\": [\n";
        return {std::move(plan), std::move(tail)};
    }

    static json block_json(int j, int mates, json ops, const std::vector<int>& ports, const std::vector<int>& bufs) {
        std::vector<int> mem_ids(static_cast<std::size_t>(mates));
        for (int k = 0; k < mates; ++k) mem_ids[std::size_t(k)] = j * mates + k;
        json tb;
        tb["id"] = j;
        tb["ops"] = std::move(ops);
        json chans = json::array({{{"channel_type", "memory"}, {"channel_ids", mem_ids}}});
        if (!ports.empty()) chans.push_back({{"channel_type", "port"}, {"channel_ids", ports}});
        chans.push_back({{"channel_type", "switch"}, {"channel_ids", {0}}});
        tb["channels"] = std::move(chans);
        tb["remote_buffer_refs"] = bufs.empty() ? json::array() : json::array({{{"access_channel_type", "port"}, {"remote_buffer_ids", bufs}}});
        return tb;
    }

    /// GPU g appended to the plan's text, as an element of its top-level "gpus" array (two levels in).
    void append_gpu(std::string& plan, std::uint32_t g, int K, json tbs, json remote_buffers) const {
        json gpu;
        gpu["id"] = g;
        gpu["input_chunks"] = r_chunks();
        gpu["output_chunks"] = r_chunks();
        gpu["scratch_chunks"] = slots_[g];
        gpu["threadblocks"] = std::move(tbs);
        gpu["channels"] = gpu_channels(g, K);
        gpu["remote_buffers"] = std::move(remote_buffers);
        gpu["semaphores"] = json::array();
        const std::string text = gpu.dump(2);
        plan += g == 0 ? "    " : ",\n    ";
        for (std::size_t from = 0, line; from < text.size(); from = line + 1) {
            line = std::min(text.find('\n', from), text.size() - 1);
            plan.append(text, from, line + 1 - from);
            if (text[line] == '\n') plan += "    ";
        }
    }

    /// The plan's text for K blocks a GPU (`emit`; else only its ops counted) and the most ops of a block. Each GPU is
    /// written out as it is made (as json::dump(2) writes it inside the plan): the writer polls the deadline between
    /// GPUs, and holds one GPU's JSON at a time.
    template <bool emit>
    std::pair<std::string, std::size_t> build(int K) {
        place_ports(K);
        // the plan's text around its "gpus" array; the GPUs are written into it in place (a copy of a plan of
        // 137 MB costs seconds of page faults on a loaded machine)
        auto [plan, tail] = emit ? around_gpus() : std::pair<std::string, std::string>();
        std::size_t max_ops = 0;
        for (std::uint32_t g = 0; g < P_; ++g) {
            if (opt_.deadline.passed()) {
                // the command ends: the GPUs written so far are left to the operating system (support/teardown.hpp)
                bury(std::make_shared<std::string>(std::move(plan)));
                throw LimitReached(fmt::format("time limit (the MSCCL++ plan's writer, at {} thread blocks a GPU)", K));
            }
            const std::vector<std::uint32_t>& box = b_.gpus[std::size_t(b_.of[g])];
            const int mates = int(box.size()) - 1;
            std::map<std::uint32_t, int> remote_ids;  // peer -> its scratch among this GPU's remote buffers
            json remote_buffers = json::array();
            json tbs = json::array();
            for (int j = 0; j < K; ++j) {
                std::vector<int> ports;  // global port channel ids of the block
                std::vector<int> bufs;   // remote buffer ids of the block
                Ops ops{emit};
                bool pending = false;
                auto data = [&](auto make) {
                    ops.push(make);
                    pending = true;
                };
                auto nop = [&] {
                    if (pending) ops.push_nop();
                    pending = false;
                };
                for (std::size_t i = begin_[g]; i < begin_[g + 1];) {
                    std::size_t end = i;
                    while (end < begin_[g + 1] && events_[end].step == events_[i].step) ++end;
                    nop();
                    std::vector<std::uint32_t> sent;
                    std::vector<int> waits;
                    std::map<std::uint32_t, std::vector<const Event*>> received;
                    for (std::size_t k = i; k < end; ++k) {
                        const Event& e = events_[k];
                        if (block(g, e.chunk, K) != j) continue;
                        const int c = int(e.chunk);
                        switch (e.kind) {
                            case Kind::glres:
                                data([&] {
                                    return json{{"name", "glres"}, {"src_buff", json::array({through_switch(c)})}, {"dst_buff", json::array({through_switch(c)})},
                                                {"channel_type", "switch"}, {"reduce_op", "sum"}};
                                });
                                break;
                            case Kind::send: {
                                auto [it, fresh] = remote_ids.try_emplace(e.peer, int(remote_ids.size()));
                                if (emit && fresh)
                                    remote_buffers.push_back({{"rank", e.peer}, {"type", "s"}, {"access_channel_types", json::array({"port"})}});
                                const int ch = local_of(ports, port_channel(g, j, e.peer, block(e.peer, e.chunk, K)));
                                const int buffer = local_of(bufs, it->second);
                                data([&] {
                                    return json{{"name", "pwsf"}, {"src_buff", json::array({local('i', c)})},
                                                {"dst_buff", json::array({{{"buffer_id", buffer}, {"index", e.slot}, {"size", 1}}})},
                                                {"channel_ids", json::array({ch})}, {"channel_type", "port"}};
                                });
                                sent.push_back(e.chunk);
                                break;
                            }
                            case Kind::gstore:
                                // the multicast writes this GPU's chunk too, which a put of this step reads
                                if (std::find(sent.begin(), sent.end(), e.chunk) != sent.end()) ops.push_nop();
                                data([&] {
                                    return json{{"name", "gstore"}, {"src_buff", json::array({local('i', c)})}, {"dst_buff", json::array({through_switch(c)})},
                                                {"channel_type", "switch"}};
                                });
                                break;
                            case Kind::recv:
                                waits.push_back(local_of(ports, port_channel(g, j, e.peer, block(e.peer, e.chunk, K))));
                                received[e.chunk].push_back(&e);
                                break;
                        }
                    }
                    if (!waits.empty()) {
                        sync(ops, "wait", waits, true);
                        ops.push_nop();
                        for (auto& [c, list] : received) {
                            const bool combine = list.front()->combine;
                            for (const Event* e : list)
                                if (e->combine != combine || (!combine && list.size() > 1) || list.size() > 7)
                                    refuse_plan(t_, fmt::format("GPU {} receives chunk {} {} times in step {}, not all to be added", g, c, list.size(), e->step));
                            if (combine) {
                                data([&] {
                                    json src = json::array({local('i', int(c))});
                                    for (const Event* e : list) src.push_back(local('s', e->slot));
                                    return json{{"name", "re"}, {"src_buff", src}, {"dst_buff", json::array({local('i', int(c))})}, {"reduce_op", "sum"}};
                                });
                            } else {
                                data([&] {
                                    return json{{"name", "copy"}, {"src_buff", json::array({local('s', list.front()->slot)})},
                                                {"dst_buff", json::array({local('i', int(c))})}};
                                });
                            }
                        }
                    }
                    i = end;
                }
                Ops all = opened_and_closed(ops, mates, ports.size());
                max_ops = std::max(max_ops, all.n);
                if (emit) tbs.push_back(block_json(j, mates, std::move(all.list), ports, bufs));
            }
            if (emit) append_gpu(plan, g, K, std::move(tbs), std::move(remote_buffers));
        }
        if (!emit) return {std::string(), max_ops};
        plan += tail;
        return {std::move(plan), max_ops};
    }

    int r_chunks() const { return int(pos_.size() / b_.gpus.size()); }

    const SendTable& t_;
    const MscclppOptions& opt_;
    const Boxes& b_;
    const std::vector<int>& slots_;
    std::vector<Event>& events_;
    std::uint32_t P_ = 0;
    std::vector<std::vector<std::uint32_t>> owned_;
    std::vector<int> pos_;            ///< per (chunk, box): the chain's place among its owner's
    std::vector<std::size_t> begin_;  ///< per GPU: its first event
    std::map<std::tuple<std::uint32_t, std::uint32_t, int, int>, int> link_;  ///< (p < q, p's block, q's block) -> its place among the pair's
    std::vector<std::map<std::uint32_t, int>> base_;                           ///< per GPU and peer: its first port channel to the peer
    std::vector<std::vector<int>> port_peers_;                                 ///< per GPU: its port channels' peers
};

}  // namespace

std::string boxes_plan(const SendTable& t, const MscclppOptions& opt, const Messages& ms) {
    BoxReader r(t, ms);
    r.read();
    trace("mscclpp plan across boxes: the table read, {} ops of chains", r.events().size());
    return BoxWriter(t, opt, r).run();
}

}  // namespace collsched::detail
