#include "compiler/formats/export_chakra.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "compiler/core/input_file.hpp"
#include "compiler/formats/et_def.pb.h"
#include "compiler/io/export_ranks.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "dsl/excerpt.hpp"
#include "support/text.hpp"
#include "compiler/core/input_file.hpp"

namespace collsched {

namespace {

namespace pb = ChakraProtoMsg;

constexpr const char* schema_version = "0.0.4";  // what ASTRA-sim's example traces carry
constexpr std::int64_t max_tag = 0x7fffffff;        // comm_tag is read as int32

/// Appends one varint-length-delimited message, as Chakra's protoio writes them.
void append(std::string& out, const google::protobuf::MessageLite& msg) {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.WriteVarint32(static_cast<std::uint32_t>(msg.ByteSizeLong()));
    msg.SerializeWithCachedSizes(&coded);
}

void attr_int32(pb::Node& n, const char* name, std::int32_t v) {
    auto* a = n.add_attr();
    a->set_name(name);
    a->set_int32_val(v);
}
void attr_int64(pb::Node& n, const char* name, std::int64_t v) {
    auto* a = n.add_attr();
    a->set_name(name);
    a->set_int64_val(v);
}
void attr_bool(pb::Node& n, const char* name, bool v) {
    auto* a = n.add_attr();
    a->set_name(name);
    a->set_bool_val(v);
}
void meta_string(pb::GlobalMetadata& m, const char* name, const std::string& v) {
    auto* a = m.add_attr();
    a->set_name(name);
    a->set_string_val(v);
}

[[noreturn]] void refuse(const SendTable& t, std::string_view why) {
    throw InputError(fmt::format("cannot write Chakra traces for {} on {}: {}", t.collective.to_string(), t.topology->spec(), why));
}

}  // namespace


/// ASTRA-sim's analytical network for the topology (docs/time.md, "Checked against ASTRA-sim"):
/// a ring is its `Ring` (bidirectional, the shorter way as collsched routes), a complete graph
/// its `FullyConnected`, with the topology's link speed when every channel has the same one.
/// ASTRA-sim reads bandwidth in GB/s of 2^30 bytes (NetworkFunction.cpp bw_GBps_to_Bpns) and
/// latency in ns. Any other topology is written as FullyConnected with the first channel's speed
/// and a comment saying so: ASTRA-sim's congestion-aware backend has one dimension of Ring,
/// FullyConnected or Switch only (congestion_aware/topology/Helper.cpp).
static std::string network_yml(const Topology& topo) {
    const std::uint32_t P = topo.processors();
    bool uniform = !topo.channels().empty();
    const LinkSpeed first = topo.channels().empty() ? LinkSpeed{default_alpha, default_unit_bandwidth} : topo.speed(ChannelId{0});
    for (std::uint32_t c = 0; c < topo.channels().size(); ++c) uniform = uniform && topo.speed(ChannelId{c}) == first;
    const char* kind = topo.family() == Family::ring ? "Ring" : "FullyConnected";
    const bool exact = uniform && topo.groups().empty() && (topo.family() == Family::ring || topo.family() == Family::complete);
    std::string head = exact ? fmt::format("# {} ranks; collsched's topology {} with its link speed ({} s, {} B/s)\n", P, topo.spec(),
                                           first.alpha, first.bandwidth)
                             : fmt::format("# {} ranks, every pair connected; collsched's topology was {} (not one ASTRA-sim "
                                           "models exactly: its speeds, groups or shape differ; edit this file)\n", P, topo.spec());
    return head + fmt::format("topology: [ {} ]\nnpus_count: [ {} ]\nbandwidth: [ {} ]  # GB/s of 2^30 bytes\nlatency: [ {} ]  # ns\n",
                              kind, P, first.bandwidth / double(1u << 30), first.alpha * 1e9);
}

namespace {

/// A send or receive node of endpoint transfer `i` (its comm_tag), `bytes` per message.
void comm_node(pb::Node& n, std::uint64_t id, std::string name, pb::NodeType node_type, pb::CollectiveCommType type,
               const EndpointTransfer& e, std::size_t i, std::uint64_t bytes) {
    n.set_id(id);
    n.set_name(std::move(name));
    n.set_type(node_type);
    attr_bool(n, "is_cpu_op", false);
    attr_int64(n, "comm_type", type);
    attr_int32(n, "comm_src", std::int32_t(idx(e.src)));
    attr_int32(n, "comm_dst", std::int32_t(idx(e.dst)));
    attr_int32(n, "comm_tag", std::int32_t(i));
    attr_int64(n, "comm_size", std::int64_t(bytes));
}

/// The workload (one collective node per rank, whose size covers every rank's messages) and the
/// system, network and memory files ASTRA-sim reads beside the traces.
void side_files(const SendTable& t, const ChakraOptions& opt, pb::CollectiveCommType type, std::vector<ChakraFile>& files) {
    const std::uint32_t P = t.topology->processors();
    const CollectiveKind kind = t.collective.kind;
    const std::uint64_t coll_bytes = opt.bytes * P;
    for (std::uint32_t r = 0; r < P; ++r) {
        pb::GlobalMetadata meta;
        meta.set_version(schema_version);
        pb::Node n;
        n.set_id(0);
        n.set_name(fmt::format("collsched {} on {}", t.collective.to_string(), t.topology->spec()));
        n.set_type(pb::COMM_COLL_NODE);
        attr_bool(n, "is_cpu_op", false);
        attr_int64(n, "comm_type", type);
        attr_int64(n, "comm_size", std::int64_t(coll_bytes));
        std::string out;
        append(out, meta);
        append(out, n);
        files.push_back({fmt::format("{}.workload.{}.et", opt.prefix, r), std::move(out)});
    }
    const char* impl = kind == CollectiveKind::alltoall ? "all-to-all-implementation-custom" : "all-gather-implementation-custom";
    files.push_back({opt.prefix + ".system.json",
                     fmt::format("{{\n  \"scheduling-policy\": \"FIFO\",\n  \"preferred-dataset-splits\": 1,\n  \"{}\": [{}],\n  "
                                 "\"local-mem-bw\": 50\n}}\n",
                                 impl, support::json_string(opt.prefix))});
    files.push_back({opt.prefix + ".network.yml", network_yml(*t.topology)});
    files.push_back({opt.prefix + ".memory.json", "{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n"});
}

}  // namespace

std::vector<ChakraFile> table_to_chakra(const SendTable& t, const ChakraOptions& opt) {
    const CollectiveKind kind = t.collective.kind;
    if (kind != CollectiveKind::alltoall && kind != CollectiveKind::allgather)
        refuse(t, "ASTRA-sim runs custom implementations of all-to-all, all-gather, reduce-scatter and all-reduce only "
                  "(CollectiveImplLookup.cc); collsched writes alltoall and allgather");
    if (!t.requirements.empty()) refuse(t, "extra requirements have no place in a collective's trace");
    if (t.has_composites()) refuse(t, "combined values and bundles have no Chakra node; use --format ranks");
    if (opt.prefix.empty() || !std::filesystem::path(opt.prefix).is_absolute())
        throw InputError(fmt::format("--format chakra needs -o DIR/PREFIX with an absolute path (the system file names the "
                                     "traces by it); got '{}'",
                                     opt.prefix));
    if (opt.bytes == 0 || opt.bytes > (std::uint64_t{1} << 40)) throw InputError("--bytes must be in 1..2^40");
    // --bytes is the size of a datum; with C chunks a message (a chunk) carries bytes / C.
    const std::uint32_t C = t.collective.chunks;
    if (opt.bytes % C != 0)
        throw InputError(fmt::format("--bytes {}: the collective splits every datum into {} chunks, so the bytes must be a multiple "
                                     "of {} (a chunk is B/C bytes)",
                                     opt.bytes, C, C));
    const std::uint64_t msg_bytes = opt.bytes / C;
    const std::uint32_t P = t.topology->processors();
    Messages ms = t.messages();
    EndpointView view = endpoint_view(t);
    const auto& ev = view.transfers;
    std::vector<Transfer> rebuilt;
    if (view.stranded || view.fanout || cut_through_hops(*t.topology, t.model.timing, ev, rebuilt))
        refuse(t, "the table's copies wait in routers, are replicated or leave their routes; a trace carries endpoint sends "
                  "only (the cut-through rule of docs/exports.md must rebuild the table)");
    std::sort(rebuilt.begin(), rebuilt.end());
    if (rebuilt != t.transfers)
        refuse(t, "the table is not cut-through regular; a trace carries endpoint sends only");
    if (ev.size() > std::size_t(max_tag)) refuse(t, fmt::format("{} endpoint transfers; comm_tag is an int32", ev.size()));
    for (const EndpointTransfer& e : ev)
        if (e.src == e.dst)
            refuse(t, fmt::format("processor {} sends {} in step {} and it comes back to itself", idx(e.src), ms.name(e.message), e.sent));

    // node ids per rank: every receive and send in the order of the endpoint view
    std::vector<pb::Node> nodes_storage;
    std::vector<std::vector<std::size_t>> by_rank(P);
    std::vector<std::uint64_t> next_id(P, 0);
    std::vector<std::uint64_t> send_id(ev.size()), recv_id(ev.size());
    for (std::size_t i = 0; i < ev.size(); ++i) {
        send_id[i] = next_id[idx(ev[i].src)]++;
        recv_id[i] = next_id[idx(ev[i].dst)]++;
    }
    // the receive that brings a message to a rank first
    std::unordered_map<std::uint64_t, std::size_t> first;
    auto key = [](Node g, MessageId m) { return (std::uint64_t{idx(g)} << 32) | idx(m); };
    for (std::size_t i = 0; i < ev.size(); ++i) {
        auto [it, fresh] = first.emplace(key(ev[i].dst, ev[i].message), i);
        if (!fresh && ev[i].arrived < ev[it->second].arrived) it->second = i;
    }
    const pb::CollectiveCommType type = kind == CollectiveKind::alltoall ? pb::ALL_TO_ALL : pb::ALL_GATHER;
    std::vector<std::vector<pb::Node>> per_rank(P);
    for (std::uint32_t r = 0; r < P; ++r) per_rank[r].resize(next_id[r]);
    for (std::size_t i = 0; i < ev.size(); ++i) {
        const EndpointTransfer& e = ev[i];
        const std::string msg = ms.name(e.message);
        pb::Node& s = per_rank[idx(e.src)][send_id[i]];
        comm_node(s, send_id[i], fmt::format("send {} to {} step {}", msg, idx(e.dst), e.sent), pb::COMM_SEND_NODE, type, e, i, msg_bytes);
        if (!t.collective.initial(ms, e.message) || ms.origin(e.message) != e.src) {
            auto f = first.find(key(e.src, e.message));
            if (f == first.end() || ev[f->second].arrived >= e.sent)
                refuse(t, fmt::format("processor {} sends {} in step {} before it holds it (the table breaks causality)",
                                      idx(e.src), msg, e.sent));
            s.add_data_deps(recv_id[f->second]);
        }
        comm_node(per_rank[idx(e.dst)][recv_id[i]], recv_id[i], fmt::format("recv {} from {} step {}", msg, idx(e.src), e.arrived),
                  pb::COMM_RECV_NODE, type, e, i, msg_bytes);
    }
    std::vector<ChakraFile> files;
    for (std::uint32_t r = 0; r < P; ++r) {
        pb::GlobalMetadata meta;
        meta.set_version(schema_version);
        meta_string(meta, "schema", std::string("1.0.2-chakra.0.0.4"));
        meta_string(meta, "producer", "collsched");
        meta_string(meta, "collsched_topology", spec_written_at(t.topology->spec(), opt.prefix));  // read back from its directory
        meta_string(meta, "collsched_model", to_string(t.model));
        meta_string(meta, "collsched_collective", t.collective.to_string());
        if (C > 1) meta_string(meta, "collsched_chunks", std::to_string(C));
        if (!t.step_rounds.empty()) meta_string(meta, "collsched_rounds", fmt::format("{}", fmt::join(t.step_rounds, ",")));
        std::string out;
        append(out, meta);
        for (const pb::Node& n : per_rank[r]) append(out, n);
        files.push_back({fmt::format("{}.{}.et", opt.prefix, r), std::move(out)});
    }
    side_files(t, opt, type, files);
    return files;
}

namespace {

struct ReadNode {
    pb::Node node;
    std::optional<std::int32_t> src, dst, tag;
    std::optional<std::int64_t> size;
    std::string msg;
    std::uint32_t peer = 0;
    Step step = 0;
};

std::vector<std::string> split(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

}  // namespace

namespace {

/// "3, 5 and 7" (at most eight, then "and N more").
std::string rank_list(const std::vector<std::uint64_t>& ranks) {
    std::string out;
    const std::size_t shown = std::min<std::size_t>(ranks.size(), 8);
    for (std::size_t i = 0; i < shown; ++i)
        out += fmt::format("{}{}", i == 0 ? "" : i + 1 == shown && ranks.size() == shown ? " and " : ", ", ranks[i]);
    if (ranks.size() > shown) out += fmt::format(" and {} more", ranks.size() - shown);
    return out;
}

/// The one check of a trace set's completeness, before any rank but 0 is read: PREFIX.<r>.et
/// for every rank r < P is a regular file, and no PREFIX.<k>.et with k >= P is in the directory
/// (a set of another size, or two sets under one prefix).
void check_trace_set(const std::string& prefix, std::uint32_t P) {
    std::vector<std::uint64_t> missing;
    for (std::uint32_t r = 0; r < P; ++r) {
        const std::string path = fmt::format("{}.{}.et", prefix, r);
        const std::string kind = file_kind_problem(path);
        if (kind == "missing") missing.push_back(r);
        else if (!kind.empty())
            throw InputError(fmt::format("{}: rank {}'s trace is {}, not a Chakra trace (only regular files are read)", path, r, kind));
    }
    if (!missing.empty())
        throw InputError(fmt::format("{}.*.et: the trace set is incomplete: rank 0's trace names {} ranks, and the trace{} of rank{} {} "
                                     "{} missing (first: {}.{}.et)",
                                     prefix, P, missing.size() == 1 ? "" : "s", missing.size() == 1 ? "" : "s", rank_list(missing),
                                     missing.size() == 1 ? "is" : "are", prefix, missing[0]));
    // Files of ranks beyond the last.
    const std::filesystem::path pp(prefix);
    const std::string base = pp.filename().string();
    std::error_code ec;
    std::vector<std::uint64_t> extra;
    for (std::filesystem::directory_iterator it(pp.has_parent_path() ? pp.parent_path() : std::filesystem::path("."), ec), end;
         !ec && it != end; it.increment(ec)) {
        std::string pfx;
        std::uint64_t k = 0;
        const std::string name = it->path().filename().string();
        if (name.starts_with(base + ".") && chakra_trace_name(name, pfx, k) && pfx == base && k >= P) extra.push_back(k);
    }
    std::sort(extra.begin(), extra.end());
    if (!extra.empty())
        throw InputError(fmt::format("{}.*.et: the trace set has {} ranks (rank 0's trace names them), but the directory also holds the "
                                     "trace{} of rank{} {} (first: {}.{}.et): two trace sets under one prefix?",
                                     prefix, P, extra.size() == 1 ? "" : "s", extra.size() == 1 ? "" : "s", rank_list(extra), prefix,
                                     extra[0]));
}

}  // namespace

bool chakra_trace_name(const std::string& path, std::string& prefix, std::uint64_t& rank) {
    if (!path.ends_with(".et") || path.size() < 6) return false;
    const std::size_t end = path.size() - 3;
    std::size_t dot = path.rfind('.', end - 1);
    if (dot == std::string::npos || dot == 0 || dot + 1 == end || end - dot - 1 > 9) return false;
    const char* first = path.data() + dot + 1;
    auto [p, ec] = std::from_chars(first, path.data() + end, rank);
    if (ec != std::errc() || p != path.data() + end || (*first == '0' && end - dot - 1 > 1)) return false;
    prefix = path.substr(0, dot);
    return !prefix.empty() && prefix.back() != '/';
}

SendTable read_chakra(const std::string& prefix) {
    const std::string first = prefix + ".0.et";
    if (std::string kind = file_kind_problem(first); kind == "missing")
        throw InputError(fmt::format("{}: rank 0's trace is missing; it names the topology and the number of ranks of the trace set {}.*.et",
                                     first, prefix));
    auto rank_file = [&](std::uint32_t r) {
        // Regular files only (a FIFO would block the read), under the input policy (docs/fuzzing.md).
        return read_regular_input_file(fmt::format("{}.{}.et", prefix, r), "Chakra trace", max_input_bytes(), max_input_hint);
    };
    return parse_chakra(prefix, rank_file, [&](std::uint32_t P) { check_trace_set(prefix, P); });
}

namespace {

/// The length-delimited protobuf messages of one trace file, each checked against the bytes left.
class TraceFrames {
public:
    TraceFrames(const std::string& path, const std::string& data)
        : path_(path), data_(data), in_(reinterpret_cast<const std::uint8_t*>(data.data()), int(data.size())) {
        in_.SetTotalBytesLimit(std::numeric_limits<int>::max());
    }

    /// Reads the next message; false at the end of the file.
    bool next(google::protobuf::MessageLite& msg, const char* what) {
        std::uint32_t size = 0;
        if (!in_.ReadVarint32(&size)) {
            if (in_.CurrentPosition() != int(data_.size()))
                throw InputError(fmt::format("{}: byte {}: malformed length of a {}", path_, in_.CurrentPosition(), what));
            return false;
        }
        if (size > data_.size() - std::size_t(in_.CurrentPosition()))
            throw InputError(fmt::format("{}: byte {}: a {} of {} bytes, but only {} bytes follow (a cut or broken trace?)", path_,
                                         in_.CurrentPosition(), what, size, data_.size() - std::size_t(in_.CurrentPosition())));
        auto limit = in_.PushLimit(int(size));
        if (!msg.ParseFromCodedStream(&in_) || !in_.ConsumedEntireMessage())
            throw InputError(fmt::format("{}: byte {}: malformed {}", path_, in_.CurrentPosition(), what));
        in_.PopLimit(limit);
        return true;
    }

private:
    const std::string& path_;
    const std::string& data_;
    google::protobuf::io::CodedInputStream in_;
};

/// Reads a trace set back into a table: rank 0's metadata names the table; every rank's nodes are
/// checked, sends paired with receives as ASTRA-sim pairs them, and the dependencies replayed to
/// find each transfer's step (docs/exports.md, "Chakra").
class ChakraReader {
public:
    ChakraReader(const std::string& prefix, const std::function<std::string(std::uint32_t rank)>& rank_file,
                 const std::function<void(std::uint32_t ranks)>& check_set)
        : prefix_(prefix), rank_file_(rank_file), check_set_(check_set) {}

    SendTable read() {
        for (std::uint32_t r = 0; r < P_; ++r) read_rank(r);
        index_ids();
        pair_transfers();
        dependencies();
        return table(replay());
    }

private:
    void read_rank(std::uint32_t r) {
        const std::string path = fmt::format("{}.{}.et", prefix_, r);
        const std::string data = rank_file_(r);
        if (data.size() > std::size_t(std::numeric_limits<int>::max()))
            throw InputError(fmt::format("{}: {} bytes; a Chakra trace is read with protobuf's int sizes (at most 2 GiB)", path, data.size()));
        TraceFrames frames(path, data);
        pb::GlobalMetadata meta;
        if (!frames.next(meta, "GlobalMetadata")) throw InputError(fmt::format("{}: empty trace (no GlobalMetadata)", path));
        if (r == 0) metadata(meta, path);
        for (;;) {
            ReadNode rn;
            if (!frames.next(rn.node, "Node")) break;
            node(rn, path, r);
            ranks_[r].push_back(std::move(rn));
        }
    }

    /// Rank 0's GlobalMetadata: the topology, model, collective, chunks and rounds of the table.
    void metadata(const pb::GlobalMetadata& meta, const std::string& path) {
        std::map<std::string, std::string> m;
        for (const auto& a : meta.attr()) m[a.name()] = a.string_val();
        if (!m.count("collsched_topology") || !m.count("collsched_collective"))
            throw InputError(fmt::format("{}: not a collsched trace (no collsched_topology in its GlobalMetadata)", path));
        auto here = [&](auto&& f) {  // a topology, model or collective error, naming this trace
            try {
                return f();
            } catch (const InputError& e) {
                throw InputError(fmt::format("{}: {}", path, e.what()));
            }
        };
        topo_ = here([&] { return Topology::parse(spec_read_from(m["collsched_topology"], path)); });
        model_ = here([&] { return apply_model_options(topo_->default_model(), m["collsched_model"]); });
        coll_ = here([&] { return Collective::parse(m["collsched_collective"], *topo_); });
        if (auto c = m.find("collsched_chunks"); c != m.end()) {  // the chunks C: messages are named b(s,c)
            std::uint64_t chunks = 0;
            auto [p, ec] = std::from_chars(c->second.data(), c->second.data() + c->second.size(), chunks);
            if (ec != std::errc() || p != c->second.data() + c->second.size())
                throw InputError(fmt::format("{}: collsched_chunks \"{}\" is not a number", path, c->second));
            here([&] { return coll_.set_chunks(chunks, *topo_), 0; });
        }
        if (auto c = m.find("collsched_rounds"); c != m.end()) {  // the rounds of steps 1, 2, ...
            std::string_view list = c->second;
            while (!list.empty()) {
                const std::string_view item = list.substr(0, list.find(','));
                std::uint32_t rounds_of_step = 0;
                auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), rounds_of_step);
                if (ec != std::errc() || p != item.data() + item.size() || rounds_of_step < 1 || rounds_of_step > max_step_rounds)
                    throw InputError(fmt::format("{}: collsched_rounds \"{}\": step {} lasts '{}' rounds; a step lasts 1 to {} rounds", path,
                                                 c->second, rounds_.size() + 1, item, max_step_rounds));
                rounds_.push_back(rounds_of_step);
                list.remove_prefix(std::min(list.size(), item.size() + 1));
            }
        }
        P_ = topo_->processors();
        ranks_.resize(P_);
        check_set_(P_);
    }

    /// One send or receive node: its attributes as the feeder reads them, and its name.
    void node(ReadNode& rn, const std::string& path, std::uint32_t r) const {
        const pb::Node& n = rn.node;
        if (n.name().size() > max_chakra_name)
            throw InputError(fmt::format("{}: rank {}, node {}: a name of {} bytes; collsched names its nodes 'send MSG to RANK step N' "
                                         "(at most {} bytes)",
                                         path, r, n.id(), n.name().size(), max_chakra_name));
        auto where = [&] { return fmt::format("{}: rank {}, node {} ('{}')", path, r, n.id(), excerpt(n.name())); };
        for (const auto& a : n.attr()) {
            const std::string& k = a.name();
            if (k == "comm_src" || k == "comm_dst" || k == "comm_tag") {
                if (a.value_case() != pb::AttributeProto::kInt32Val)
                    throw InputError(fmt::format("{}: {} is not an int32 (the feeder reads int32_val)", where(), k));
                (k == "comm_src" ? rn.src : k == "comm_dst" ? rn.dst : rn.tag) = a.int32_val();
            } else if (k == "comm_size") {
                if (a.value_case() != pb::AttributeProto::kInt64Val)
                    throw InputError(fmt::format("{}: comm_size is not an int64 (the feeder reads int64_val)", where()));
                rn.size = a.int64_val();
            } else if (k == "is_cpu_op" && a.bool_val()) {
                throw InputError(fmt::format("{}: a communication node marked as a CPU operation", where()));
            }
        }
        const bool send = n.type() == pb::COMM_SEND_NODE;
        if (!send && n.type() != pb::COMM_RECV_NODE)
            throw InputError(fmt::format("{}: node type {} (collsched reads sends and receives only)", where(), int(n.type())));
        if (!rn.tag || !rn.size || (send ? !rn.dst : !rn.src))
            throw InputError(fmt::format("{}: a {} needs comm_{}, comm_size and comm_tag", where(), send ? "send" : "receive",
                                         send ? "dst" : "src"));
        auto w = split(n.name());
        auto m = w.size() == 6 ? Messages(P_, nullptr, coll_.chunks).parse(w[1]) : std::nullopt;
        if (!m || w[0] != (send ? "send" : "recv") || w[2] != (send ? "to" : "from") || w[4] != "step")
            throw InputError(fmt::format("{}: the name does not say '{} MSG {} RANK step N'", where(), send ? "send" : "recv",
                                         send ? "to" : "from"));
        rn.msg = w[1];
        auto number = [&](const std::string& x) {
            std::uint32_t v = 0;
            auto [p, ec] = std::from_chars(x.data(), x.data() + x.size(), v);
            if (ec != std::errc() || p != x.data() + x.size()) throw InputError(fmt::format("{}: '{}' in its name is not a number", where(), x));
            return v;
        };
        rn.peer = number(w[3]);
        rn.step = number(w[5]);
        if ((send ? *rn.dst : *rn.src) != std::int32_t(rn.peer) || rn.peer >= P_ || rn.peer == r)
            throw InputError(fmt::format("{}: the peer in its name and its attributes disagree or are out of range", where()));
    }

    /// Node ids are unique per file (dependencies stay inside the file); every node gets a global index.
    void index_ids() {
        index_.resize(P_);
        for (std::uint32_t r = 0; r < P_; ++r)
            for (std::size_t i = 0; i < ranks_[r].size(); ++i)
                if (!index_[r].emplace(ranks_[r][i].node.id(), i).second)
                    throw InputError(fmt::format("{}.{}.et: rank {}: node id {} used twice", prefix_, r, r, ranks_[r][i].node.id()));
        base_.assign(P_ + 1, 0);
        for (std::uint32_t r = 0; r < P_; ++r) base_[r + 1] = base_[r] + ranks_[r].size();
        N_ = base_[P_];
        succ_.assign(N_, {});
        indeg_.assign(N_, 0);
        match_.assign(N_, N_);
    }

    std::uint32_t rank_of(std::size_t g) const {
        return std::uint32_t(std::upper_bound(base_.begin(), base_.end(), g) - base_.begin() - 1);
    }

    std::string name(std::size_t g) const {
        const std::uint32_t r = rank_of(g);
        const ReadNode& n = ranks_[r][g - base_[r]];
        return fmt::format("rank {}, node {} ('{}')", r, n.node.id(), excerpt(n.node.name()));
    }

    /// Sends and receives paired by (tag, src, dst, size), exactly one of each.
    void pair_transfers() {
        using Key = std::tuple<std::int32_t, std::uint32_t, std::uint32_t, std::int64_t>;
        std::map<Key, std::pair<std::vector<std::pair<std::uint32_t, std::size_t>>, std::vector<std::pair<std::uint32_t, std::size_t>>>> pairs;
        for (std::uint32_t r = 0; r < P_; ++r)
            for (std::size_t i = 0; i < ranks_[r].size(); ++i) {
                const ReadNode& n = ranks_[r][i];
                const bool send = n.node.type() == pb::COMM_SEND_NODE;
                Key k{*n.tag, send ? r : n.peer, send ? n.peer : r, *n.size};
                (send ? pairs[k].first : pairs[k].second).push_back({r, i});
            }
        for (const auto& [k, sr] : pairs) {
            if (sr.first.size() != 1 || sr.second.size() != 1) {
                auto [r, i] = sr.first.empty() ? sr.second[0] : sr.first[0];
                throw InputError(fmt::format("{}: {} send{} and {} receive{} with tag {}, from {} to {}, {} bytes; ASTRA-sim pairs "
                                             "exactly one send with one receive, so a rank would wait forever",
                                             name(base_[r] + i), sr.first.size(), sr.first.size() == 1 ? "" : "s", sr.second.size(),
                                             sr.second.size() == 1 ? "" : "s", std::get<0>(k), std::get<1>(k), std::get<2>(k),
                                             std::get<3>(k)));
            }
            std::size_t s = base_[sr.first[0].first] + sr.first[0].second, v = base_[sr.second[0].first] + sr.second[0].second;
            match_[s] = v;
            match_[v] = s;
            succ_[s].push_back(v);
            ++indeg_[v];
        }
    }

    /// Data and control dependencies, inside each rank's file.
    void dependencies() {
        for (std::uint32_t r = 0; r < P_; ++r)
            for (std::size_t i = 0; i < ranks_[r].size(); ++i) {
                const pb::Node& n = ranks_[r][i].node;
                auto deps = [&](const auto& list) {
                    for (std::uint64_t d : list) {
                        auto it = index_[r].find(d);
                        if (it == index_[r].end())
                            throw InputError(fmt::format("{}: depends on node {}, which rank {}'s trace does not have", name(base_[r] + i), d, r));
                        succ_[base_[r] + it->second].push_back(base_[r] + i);
                        ++indeg_[base_[r] + i];
                    }
                };
                deps(n.data_deps());
                deps(n.ctrl_deps());
            }
    }

    /// Replay: as soon as the dependencies allow, a transfer taking its route's steps.
    std::vector<EndpointTransfer> replay() {
        std::vector<Step> level(N_, 0);
        std::vector<std::size_t> order;
        for (std::size_t g = 0; g < N_; ++g)
            if (!indeg_[g]) order.push_back(g);
        for (std::size_t h = 0; h < order.size(); ++h)
            for (std::size_t b : succ_[order[h]])
                if (!--indeg_[b]) order.push_back(b);
        if (order.size() != N_) {
            std::size_t stuck = 0;
            while (!indeg_[stuck]) ++stuck;
            throw InputError(fmt::format("{}: waits in a cycle of dependencies; ASTRA-sim would stop with this rank unfinished", name(stuck)));
        }
        Messages ms(P_, nullptr, coll_.chunks);
        std::vector<EndpointTransfer> ev;
        for (std::size_t g : order) {
            const std::uint32_t r = rank_of(g);
            const ReadNode& n = ranks_[r][g - base_[r]];
            const bool send = n.node.type() == pb::COMM_SEND_NODE;
            // (the predecessors' levels were folded into level[g] as they finished)
            const Step ready = level[g];
            if (send) {
                const std::size_t v = match_[g];
                const ReadNode& rv = ranks_[n.peer][v - base_[n.peer]];
                const Step start = ready + 1;
                if (start > n.step)
                    throw InputError(fmt::format("{}: its dependencies let it start only in step {}, after the table's step {}", name(g),
                                                 start, n.step));
                if (rv.msg != n.msg || rv.step < n.step)
                    throw InputError(fmt::format("{}: pairs with {}, which names another message or an earlier step", name(g), name(v)));
                MessageId m = *ms.parse(n.msg);
                if (!coll_.initial(ms, m) || ms.origin(m) != Node{r}) check_received(n, r, g);
                ev.push_back({n.step, Node{r}, Node{n.peer}, m, rv.step});
                level[g] = start + (rv.step - n.step);  // its receive completes then
            }
            for (std::size_t b : succ_[g]) level[b] = std::max(level[b], send ? level[g] : ready);
        }
        return ev;
    }

    /// A send of a message the rank does not start with needs a data dependency on a receive of it.
    void check_received(const ReadNode& n, std::uint32_t r, std::size_t g) {
        bool covered = false;
        for (std::uint64_t d : n.node.data_deps()) {
            const ReadNode& dn = ranks_[r][index_[r][d]];
            covered = covered || (dn.node.type() == pb::COMM_RECV_NODE && dn.msg == n.msg);
        }
        if (!covered)
            throw InputError(fmt::format("{}: sends {}, which rank {} does not start with, without a data dependency on a receive of it",
                                         name(g), n.msg, r));
    }

    SendTable table(std::vector<EndpointTransfer> ev) {
        std::sort(ev.begin(), ev.end());
        SendTable t;
        t.topology = topo_;
        t.model = model_;
        t.collective = coll_;
        if (auto bad = cut_through_hops(*topo_, model_.timing, ev, t.transfers))
            throw InputError(fmt::format("{}.*.et: {}", prefix_, *bad));
        t.sort();
        // The rounds of steps the table does not have would be dropped silently: another table's list.
        if (rounds_.size() > t.steps())
            throw InputError(fmt::format("{}.0.et: collsched_rounds lists the rounds of {} steps, but the traces have {} step{}", prefix_,
                                         rounds_.size(), t.steps(), t.steps() == 1 ? "" : "s"));
        t.step_rounds = std::move(rounds_);
        t.normalize_rounds();
        if (std::string why = rounds_problem(t); !why.empty()) throw InputError(fmt::format("{}.0.et: {}", prefix_, why));
        return t;
    }

    const std::string& prefix_;
    const std::function<std::string(std::uint32_t rank)>& rank_file_;
    const std::function<void(std::uint32_t ranks)>& check_set_;
    std::vector<std::vector<ReadNode>> ranks_;
    std::shared_ptr<const Topology> topo_;
    Model model_;
    Collective coll_;
    std::vector<std::uint32_t> rounds_;  ///< the table's rounds per step (collsched_rounds)
    std::uint32_t P_ = 1;                ///< rank 0 names the table: one rank until it is read
    std::vector<std::unordered_map<std::uint64_t, std::size_t>> index_;  ///< per rank: node id -> position
    std::vector<std::size_t> base_;                                      ///< per rank: its first global index
    std::size_t N_ = 0;
    std::vector<std::vector<std::size_t>> succ_;
    std::vector<int> indeg_;
    std::vector<std::size_t> match_;  ///< a send's receive and back
};

}  // namespace

SendTable parse_chakra(const std::string& prefix, const std::function<std::string(std::uint32_t rank)>& rank_file,
                       const std::function<void(std::uint32_t ranks)>& check_set) {
    // protobuf logs a broken string field ("contains invalid UTF-8") on stderr besides failing
    // the parse; the parse failure is reported once, in collsched's words.
    google::protobuf::LogSilencer quiet;
    return ChakraReader(prefix, rank_file, check_set).read();
}

}  // namespace collsched
