#include "compiler/table_io.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <map>
#include <optional>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiler/input_file.hpp"
#include "compiler/json_error.hpp"
#include "compiler/ranks_import.hpp"
#include "compiler/table_read.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched {

namespace {

/// Rounds read from a file: trimmed to the steps, and only under hop timing.
void finish_rounds(SendTable& t, std::string_view name) {
    t.normalize_rounds();
    if (std::string why = rounds_problem(t); !why.empty()) throw InputError(fmt::format("{}: {}", name, why));
}

/// Composites read from a file: canonical ids, and bundles only under wormhole timing.
void finish_composites(SendTable& t, std::string_view name) {
    t.canonicalize_composites();
    if (std::string why = composite_problem(t); !why.empty()) throw InputError(fmt::format("{}: {}", name, why));
}

}  // namespace

namespace table_read {

Resolver::Resolver(SendTable& t, std::string_view name)
    : table_(t), name_(name), reg_(t.composite_registry()), messages_(t.topology->processors(), &reg_, t.collective.chunks) {}

Transfer Resolver::resolve(std::uint64_t i, std::uint64_t step, std::string_view from, std::string_view to,
                           std::string_view msg) const {
    const Topology& topo = *table_.topology;
    auto where = [&] { return fmt::format("{}: transfers[{}] (step {})", name_, i, step); };
    if (step < 1) throw InputError(fmt::format("{}: transfers[{}]: step {} is below 1 (steps are numbered from 1)", name_, i, step));
    if (step > (1u << 31)) throw InputError(fmt::format("{}: step {} is too large", where(), step));
    auto u = topo.find_node(from), v = topo.find_node(to);
    auto describe = [&] {
        std::string s = fmt::format("processors 0..{}", topo.processors() - 1);
        if (topo.routers() > 0)
            s += fmt::format(", routers {}..{}", topo.node_name(Node{topo.processors()}), topo.node_name(Node{topo.nodes() - 1}));
        return s;
    };
    if (!u) throw InputError(fmt::format("{}: node '{}' does not exist in {} ({})", where(), from, topo.spec(), describe()));
    if (!v) throw InputError(fmt::format("{}: node '{}' does not exist in {} ({})", where(), to, topo.spec(), describe()));
    auto c = topo.find_channel(*u, *v);
    if (!c) throw InputError(fmt::format("{}: there is no channel {} -> {} in {}", where(), from, to, topo.spec()));
    auto m = messages_.parse(msg);
    std::string why;
    if (!m && (msg.find('+') != std::string_view::npos || msg.find("..") != std::string_view::npos))
        m = parse_message(msg, topo.processors(), reg_, &why, messages_.chunks());  // a composite met for the first time
    else if (!m)
        messages_.parse_base(msg, &why);  // why a base name is refused (a whole datum under chunks, ...)
    if (!m) {
        if (messages_.chunks() > 1)
            throw InputError(fmt::format("{}: unknown message '{}' (expected m(s,d,c), b(s,c), a(s,c) or a bundle such as "
                                         "b(0,0)+b(4,1), with processors 0..{} and chunks 0..{}){}",
                                         where(), msg, topo.processors() - 1, messages_.chunks() - 1, why.empty() ? "" : ": " + why));
        throw InputError(fmt::format("{}: unknown message '{}' (expected m(s,d), b(s), a(s), a(i..j) or a bundle such as "
                                     "b(0)+b(4), with processors 0..{}){}",
                                     where(), msg, topo.processors() - 1, why.empty() ? "" : ": " + why));
    }
    return {static_cast<Step>(step), *c, *m};
}

void Capture::begin() {
    active_ = true;
    root_ = json();
    stack_.clear();
}

void Capture::close() {
    stack_.pop_back();
    if (stack_.empty()) active_ = false;
}

void Capture::insert(json v, bool container) {
    json* at;
    if (stack_.empty()) {
        root_ = std::move(v);
        at = &root_;
    } else if (stack_.back()->is_array()) {
        stack_.back()->push_back(std::move(v));
        at = &stack_.back()->back();
    } else {
        if (stack_.back()->contains(key_)) on_duplicate_(key_);
        at = &((*stack_.back())[key_] = std::move(v));
    }
    if (container) stack_.push_back(at);
    else if (stack_.empty()) active_ = false;
}

namespace {

/// SAX events into a Capture, for parse_piece: stops at the first duplicate key or too deep a level.
class PieceSax {
public:
    explicit PieceSax(int max_depth) : max_depth_(max_depth), capture_([](const std::string&) { throw Duplicate{}; }) {
        capture_.begin();
    }
    struct Duplicate {};
    bool null() { return capture_.value(json(nullptr)), true; }
    bool boolean(bool b) { return capture_.value(json(b)), true; }
    bool number_integer(json::number_integer_t v) { return capture_.value(json(v)), true; }
    bool number_unsigned(json::number_unsigned_t v) { return capture_.value(json(v)), true; }
    bool number_float(json::number_float_t v, const std::string&) { return capture_.value(json(v)), true; }
    bool string(std::string& s) { return capture_.value(json(std::move(s))), true; }
    bool binary(json::binary_t&) { return false; }
    bool start_object(std::size_t) { return ++depth_ <= max_depth_ && (capture_.open(json::object()), true); }
    bool start_array(std::size_t) { return ++depth_ <= max_depth_ && (capture_.open(json::array()), true); }
    bool end_object() { return --depth_, capture_.close(), true; }
    bool end_array() { return --depth_, capture_.close(), true; }
    bool key(std::string& k) { return capture_.key(k), true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }
    json take() { return capture_.take(); }

private:
    int max_depth_, depth_ = 0;
    Capture capture_;
};

}  // namespace

bool parse_piece(std::string_view text, int max_depth, json& out) {
    PieceSax sax(max_depth);
    try {
        if (!json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, true)) return false;
    } catch (const PieceSax::Duplicate&) {
        return false;
    }
    out = sax.take();
    return true;
}

void ensure_topology(SendTable& t, const TopFields& top, std::string_view name) {
    if (t.topology) return;
    auto it = top.find("topology");
    if (it == top.end()) throw InputError(fmt::format("{}: missing \"topology\" (a spec such as \"ebft:8\")", name));
    if (!it->second.is_string()) throw InputError(fmt::format("{}: \"topology\" must be a spec string such as \"ebft:8\"", name));
    t.topology = naming_file(name, [&] { return Topology::parse(it->second.get<std::string>()); });
    t.model = t.topology->default_model();
}

namespace {

/// The chunk count of a "chunks" value, checked (a positive integer up to max_chunks).
std::uint32_t chunks_value(const json& v, const std::function<void(std::string_view)>& fail) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > max_chunks)
        fail(fmt::format("\"chunks\" must be an integer from 1 to {}, got {}", max_chunks, v.dump()));
    return v.get<std::uint32_t>();
}

void read_requirements(SendTable& t, const json& list, std::string_view name) {
    auto fail = [&](std::string_view what) { throw InputError(fmt::format("{}: {}", name, what)); };
    if (!list.is_array()) fail("\"requirements\" must be a list of {\"msg\", \"at\"} objects");
    Composites& reg = t.composite_registry();
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json& r = list[i];
        if (!r.is_object() || !r.contains("msg") || !r.contains("at") || !r["msg"].is_string() || !r["at"].is_string())
            fail(fmt::format("requirements[{}]: expected {{\"msg\": \"m(0,3)\", \"at\": \"3\"}}", i));
        std::string why;
        auto m = parse_message(r["msg"].get<std::string>(), t.topology->processors(), reg, &why, t.collective.chunks);
        auto at = t.topology->find_node(r["at"].get<std::string>());
        if (!m) fail(fmt::format("requirements[{}]: unknown message '{}'{}", i, r["msg"].get<std::string>(), why.empty() ? "" : ": " + why));
        if (!at || !t.topology->is_processor(*at)) fail(fmt::format("requirements[{}]: '{}' is not a processor", i, r["at"].get<std::string>()));
        t.requirements.push_back({*m, *at});
    }
}

}  // namespace

std::optional<std::uint32_t> known_chunks(const TopFields& top, std::string_view name) {
    auto fail = [&](std::string_view what) { throw InputError(fmt::format("{}: {}", name, what)); };
    auto f = top.find("format");
    if (f == top.end() || !f->second.is_string()) return std::nullopt;
    const std::string& v = f->second.get_ref<const std::string&>();
    if (v == table_format) return 1;
    if (v != table_format_2) return std::nullopt;  // finish_table words the error
    auto c = top.find("chunks");
    if (c == top.end()) return std::nullopt;
    return chunks_value(c->second, fail);
}

std::vector<std::uint32_t> read_rounds(const json& v, const std::function<void(std::string_view)>& fail) {
    if (!v.is_array()) fail("\"rounds\" must be a list of the rounds of steps 1, 2, ... (positive integers)");
    std::vector<std::uint32_t> r;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number_unsigned() || v[i].get<std::uint64_t>() < 1 || v[i].get<std::uint64_t>() > (1u << 20))
            fail(fmt::format("rounds[{}] (step {}): expected an integer from 1 to {}, got {}", i, i + 1, 1u << 20, v[i].dump()));
        r.push_back(v[i].get<std::uint32_t>());
    }
    return r;
}

void finish_table(SendTable& t, const TopFields& top, bool seen_transfers, std::string_view name,
                  const std::function<void(const Resolver&)>& resolve_pending) {
    auto fail = [&](std::string_view what) { throw InputError(fmt::format("{}: {}", name, what)); };
    auto need = [&](std::string_view key, std::string_view what) -> const json& {
        auto it = top.find(std::string(key));
        if (it == top.end()) fail(fmt::format("missing \"{}\" ({})", key, what));
        return it->second;
    };
    const json& format = need("format", "\"collsched.table/1\"");
    if (!format.is_string()) fail("\"format\" must be a string");
    const bool v2 = format.get<std::string>() == table_format_2;
    if (format.get<std::string>() != table_format && !v2)
        fail(fmt::format("unknown format version '{}': this collsched reads {} and {}", format.get<std::string>(), table_format,
                         table_format_2));
    ensure_topology(t, top, name);
    const json& coll = need("collective", "for example \"alltoall\" or \"broadcast:0\"");
    if (!coll.is_string()) fail("\"collective\" must be a string such as \"alltoall\"");
    std::uint32_t chunks = 1;
    if (auto it = top.find("chunks"); v2 && it != top.end()) chunks = chunks_value(it->second, fail);
    t.collective = naming_file(name, [&] {
        Collective c = Collective::parse(coll.get<std::string>(), *t.topology);
        c.set_chunks(chunks, *t.topology);
        return c;
    });
    if (auto it = top.find("model"); it != top.end()) t.model = naming_file(name, [&] { return model_from_json(it->second, t.model); });
    if (auto it = top.find("rounds"); v2 && it != top.end()) t.step_rounds = read_rounds(it->second, fail);
    if (top.count("transfers")) fail("\"transfers\" must be a list of {\"step\", \"from\", \"to\", \"msg\"} objects");
    if (!seen_transfers) fail("missing \"transfers\" (a list of {\"step\", \"from\", \"to\", \"msg\"} objects)");
    if (resolve_pending) resolve_pending(Resolver(t, name));
    if (auto it = top.find("requirements"); it != top.end()) read_requirements(t, it->second, name);
    for (auto& [k, v] : top) {
        if (k == "format" || k == "topology" || k == "collective" || k == "model" || k == "requirements" || k == "steps") continue;
        if (v2 && (k == "chunks" || k == "rounds")) continue;
        t.extra_fields.emplace_back(k, v.dump());
    }
    finish_composites(t, name);
    t.sort();
    finish_rounds(t, name);
}

}  // namespace table_read

namespace {

using json = nlohmann::json;
using table_read::Capture;
using table_read::Resolver;

struct RawTransfer {
    std::uint64_t step;
    std::string from, to, msg;
};

/// The reference reader: a SAX handler for table files. Top-level fields are captured whole, the
/// transfers array is streamed element by element and resolved as soon as the topology is known.
/// A key given twice (at the top level, in a transfer, or in a kept value) is an error.
class TableSax {
public:
    explicit TableSax(std::string_view name)
        : name_(name), capture_([this](const std::string& k) { fail(fmt::format("duplicate key \"{}\" in {}", k, where_captured())); }) {}

    bool null() { return scalar(json(nullptr)); }
    bool boolean(bool b) { return scalar(json(b)); }
    bool number_integer(json::number_integer_t v) { return scalar(json(v)); }
    bool number_unsigned(json::number_unsigned_t v) { return scalar(json(v)); }
    bool number_float(json::number_float_t v, const std::string&) { return scalar(json(v)); }
    bool string(std::string& s) { return scalar(json(std::move(s))); }
    bool binary(json::binary_t&) { fail("binary values are not allowed"); }

    bool start_object(std::size_t) {
        if (capture_.active()) return capture_.open(json::object()), true;
        if (depth_ == 0) return ++depth_, true;
        if (in_transfers_ && depth_ == 2) {
            ++depth_;
            cur_ = Fields{};
            return true;
        }
        if (in_transfers_ && depth_ != 3) fail(fmt::format("transfers[{}]: expected a transfer object", count_));
        begin_capture();  // a kept field: top-level, or an extra field of a transfer (depth 3)
        capture_.open(json::object());
        return true;
    }
    bool end_object() {
        if (capture_.active()) {
            capture_.close();
            if (!capture_.active()) finish_capture();
            return true;
        }
        if (in_transfers_ && depth_ == 3) {
            --depth_;
            end_transfer();
            return true;
        }
        --depth_;
        return true;
    }
    bool start_array(std::size_t) {
        if (capture_.active()) return capture_.open(json::array()), true;
        if (depth_ == 0) fail("expected a JSON object at the top level");
        if (depth_ == 1 && key_ == "transfers") {
            claim_top_key();
            in_transfers_ = true;
            ++depth_;
            seen_transfers_ = true;
            return true;
        }
        if (in_transfers_ && depth_ != 3) fail(fmt::format("transfers[{}]: expected a transfer object", count_));
        begin_capture();
        capture_.open(json::array());
        return true;
    }
    bool end_array() {
        if (capture_.active()) {
            capture_.close();
            if (!capture_.active()) finish_capture();
            return true;
        }
        if (in_transfers_ && depth_ == 2) {
            in_transfers_ = false;
            --depth_;
        }
        return true;
    }
    bool key(std::string& k) {
        if (capture_.active()) return capture_.key(k), true;
        key_ = k;
        return true;
    }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
        error_position_ = position;
        error_text_ = e.what();
        return false;
    }

    std::optional<std::size_t> error_position_;
    std::string error_text_;

    SendTable finish() {
        if (!resolver_ && top_.count("topology")) {  // chunks never fixed while reading: the default
            table_read::ensure_topology(table_, top_, name_);
            auto f = top_.find("format");
            const bool v2 = f != top_.end() && f->second.is_string() && f->second.get<std::string>() == table_format_2;
            auto c = top_.find("chunks");
            table_.collective.chunks = v2 && c != top_.end() && c->second.is_number_unsigned() && c->second.get<std::uint64_t>() >= 1 &&
                                               c->second.get<std::uint64_t>() <= max_chunks
                                           ? c->second.get<std::uint32_t>()
                                           : 1;
        }
        table_read::finish_table(table_, top_, seen_transfers_, name_, [&](const Resolver& r) {
            for (std::uint64_t i = 0; i < pending_.size(); ++i) {
                const RawTransfer& p = pending_[i];
                table_.transfers.push_back(r.resolve(i, p.step, p.from, p.to, p.msg));
            }
            // before the sort, which keeps origins attached to their transfers
            if (!table_.transfer_origins.empty()) table_.transfer_origins.resize(count_, no_origin);
        });
        return std::move(table_);
    }

private:
    struct Fields {
        std::optional<std::uint64_t> step;
        std::optional<std::string> from, to, msg;
        std::string extra;
        std::vector<std::string> extra_keys;
        std::optional<std::string> at;  ///< "at": the statement that made the transfer
    };

    [[noreturn]] void fail(std::string_view what) const { throw InputError(fmt::format("{}: {}", name_, what)); }

    std::string where_captured() const {
        return in_transfers_ ? fmt::format("transfers[{}].\"{}\"", count_, key_) : fmt::format("\"{}\"", key_);
    }

    /// The top-level key being read, refused when the object had it already.
    void claim_top_key() {
        if (top_.count(key_) || (key_ == "transfers" && seen_transfers_))
            fail(fmt::format("duplicate key \"{}\" in the top-level object", key_));
    }

    void begin_capture() {
        if (in_transfers_ && depth_ == 3) claim_transfer_key();
        else claim_top_key();
        capture_.begin();
    }

    /// The key being read in the current transfer object, refused when the transfer had it already.
    void claim_transfer_key() {
        bool dup = key_ == "step"   ? cur_.step.has_value()
                   : key_ == "from" ? cur_.from.has_value()
                   : key_ == "to"   ? cur_.to.has_value()
                   : key_ == "msg"  ? cur_.msg.has_value()
                   : key_ == "at" && cur_.at ? true
                                    : std::find(cur_.extra_keys.begin(), cur_.extra_keys.end(), key_) != cur_.extra_keys.end();
        if (dup) fail(fmt::format("transfers[{}]: duplicate key \"{}\"", count_, key_));
    }

    /// "at" of transfer count_: into SendTable::origins (each location once) and
    /// transfer_origins (no_origin for the transfers without one).
    void record_origin(const std::string& at) {
        auto [it, fresh] = origin_index_.emplace(at, static_cast<std::uint32_t>(table_.origins.size()));
        if (fresh) table_.origins.push_back(at);
        table_.transfer_origins.resize(count_ + 1, no_origin);
        table_.transfer_origins[count_] = it->second;
    }

    bool scalar(json v) {
        if (capture_.active()) {
            capture_.value(std::move(v));
            if (!capture_.active()) finish_capture();
            return true;
        }
        if (depth_ == 0) fail("expected a JSON object at the top level");
        if (in_transfers_ && depth_ == 3) {
            claim_transfer_key();
            field(std::move(v));
            return true;
        }
        if (in_transfers_) fail(fmt::format("transfers[{}]: expected a transfer object", count_));
        claim_top_key();
        top_[key_] = std::move(v);
        if (key_ == "topology" || key_ == "format" || key_ == "chunks") ensure_topology();
        return true;
    }

    void finish_capture() {
        if (in_transfers_ && depth_ == 3) {
            field(capture_.take());  // "step": [1] is a type error, "note": {...} an extra field
            return;
        }
        top_[key_] = capture_.take();
    }

    void append_extra(const json& v) {
        cur_.extra_keys.push_back(key_);
        if (!cur_.extra.empty()) cur_.extra += ", ";
        cur_.extra += json(key_).dump() + ": " + v.dump();
    }

    void field(json v) {
        auto str = [&](std::optional<std::string>& slot) {
            if (!v.is_string()) fail(fmt::format("transfers[{}]: \"{}\" must be a string, got {}", count_, key_, v.dump()));
            slot = v.get<std::string>();
        };
        if (key_ == "step") {
            if (v.is_number_unsigned()) cur_.step = v.get<std::uint64_t>();
            else if (v.is_number_integer())  // negative: reported with its value
                fail(fmt::format("transfers[{}]: step {} is below 1 (steps are numbered from 1)", count_, v.get<std::int64_t>()));
            else fail(fmt::format("transfers[{}]: \"step\" must be an integer >= 1, got {}", count_, v.dump()));
        } else if (key_ == "from") {
            str(cur_.from);
        } else if (key_ == "to") {
            str(cur_.to);
        } else if (key_ == "msg") {
            str(cur_.msg);
        } else if (key_ == "at" && v.is_string()) {
            cur_.at = v.get<std::string>();
        } else {
            append_extra(v);
        }
    }

    void end_transfer() {
        const char* missing = !cur_.step ? "step" : !cur_.from ? "from" : !cur_.to ? "to" : !cur_.msg ? "msg" : nullptr;
        if (missing) fail(fmt::format("transfers[{}]: missing \"{}\"", count_, missing));
        if (!cur_.extra.empty()) table_.transfer_extras.emplace_back(count_, std::move(cur_.extra));
        if (cur_.at) record_origin(*cur_.at);
        if (resolver_) {
            table_.transfers.push_back(resolver_->resolve(count_, *cur_.step, *cur_.from, *cur_.to, *cur_.msg));
        } else {
            pending_.push_back({*cur_.step, std::move(*cur_.from), std::move(*cur_.to), std::move(*cur_.msg)});
        }
        ++count_;
    }

    /// The resolver, once the topology and the chunk count are known (transfers read before wait).
    void ensure_topology() {
        if (resolver_ || !top_.count("topology")) return;
        auto chunks = table_read::known_chunks(top_, name_);
        if (!chunks) return;
        table_read::ensure_topology(table_, top_, name_);
        table_.collective.chunks = *chunks;
        resolver_.emplace(table_, name_);
    }

    std::string_view name_;
    int depth_ = 0;
    bool in_transfers_ = false, seen_transfers_ = false;
    std::string key_;
    Capture capture_;
    Fields cur_;
    std::uint64_t count_ = 0;
    table_read::TopFields top_;
    SendTable table_;
    std::optional<Resolver> resolver_;
    std::vector<RawTransfer> pending_;
    std::map<std::string, std::uint32_t> origin_index_;
};

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

}  // namespace

SendTable parse_table_json_reference(std::string_view text, std::string_view name) {
    check_json_depth(name, text);
    TableSax sax(name);
    bool ok = json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, true);
    if (!ok) {
        throw InputError(malformed_json(name, text, sax.error_position_.value_or(0), sax.error_text_));
    }
    return sax.finish();
}

SendTable parse_table_json(std::string_view text, std::string_view name) {
    bool ranks = false;
    if (auto t = table_read::parse_fast(text, false, name, ranks)) return std::move(*t);
    return parse_table_json_reference(text, name);
}

namespace {

/// A JSON table: the fast reader, else (a per-rank file, or anything the fast reader leaves to it,
/// including every error) the reference readers. `padded`: simdjson's padding follows the text.
SendTable read_json(std::string_view text, bool padded, std::string_view name) {
    bool ranks = false;
    if (auto t = table_read::parse_fast(text, padded, name, ranks)) return std::move(*t);
    if (ranks || looks_like_ranks(text)) return parse_ranks_json(text, name);
    return parse_table_json_reference(text, name);
}

/// `m(0,3)@3 b(0)@2`: the requirements line of a CSV table.
void read_csv_requirements(SendTable& t, std::string_view v, const std::function<void(std::string_view)>& fail) {
    Composites& reg = t.composite_registry();
    while (!v.empty()) {
        std::size_t sp = v.find(' ');
        std::string_view item = v.substr(0, sp);
        v = sp == std::string_view::npos ? std::string_view{} : trim(v.substr(sp + 1));
        std::size_t at = item.rfind('@');
        if (at == std::string_view::npos) fail(fmt::format("requirement '{}' is not MESSAGE@PROCESSOR (for example m(0,3)@3)", item));
        std::string why;
        auto m = parse_message(item.substr(0, at), t.topology->processors(), reg, &why, t.collective.chunks);
        auto node = t.topology->find_node(item.substr(at + 1));
        if (!m) fail(fmt::format("requirement '{}': unknown message '{}'{}", item, item.substr(0, at), why.empty() ? "" : ": " + why));
        if (!node || !t.topology->is_processor(*node)) fail(fmt::format("requirement '{}': '{}' is not a processor", item, item.substr(at + 1)));
        t.requirements.push_back({*m, *node});
    }
}

}  // namespace

/// CSV: optional `# key=value` header lines (format, topology, model, collective, requirements,
/// fields, extra[i]), then a `step,from,to,message` header row and one row per transfer.
SendTable parse_table_csv(std::string_view text, std::string_view name) {
    SendTable t;
    std::string model_text, collective = "custom";
    bool v2 = false;
    std::optional<std::string_view> chunks_text, rounds_text;
    std::optional<std::string> requirements;
    std::size_t line_no = 0;
    bool header = false;
    std::optional<Resolver> resolver;
    std::uint64_t count = 0;
    std::map<std::string, std::size_t, std::less<>> seen;  // header key -> line
    std::vector<std::pair<std::uint64_t, std::string>> extras;
    while (!text.empty()) {
        std::size_t nl = text.find('\n');
        std::string_view line = trim(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        ++line_no;
        auto fail = [&](std::string_view what) { throw InputError(fmt::format("{}:{}: {}", name, line_no, what)); };
        auto here = [&](auto&& f) {  // a topology, collective or model error, at this line of this file
            try {
                return f();
            } catch (const InputError& e) {
                fail(e.what());
                throw;
            }
        };
        if (line.empty()) continue;
        if (line[0] == '#') {
            std::string_view kv = trim(line.substr(1));
            std::size_t eq = kv.find('=');
            if (eq == std::string_view::npos) continue;  // a comment
            std::string_view k = trim(kv.substr(0, eq)), v = trim(kv.substr(eq + 1));
            bool known = k == "format" || k == "topology" || k == "model" || k == "collective" || k == "requirements" || k == "fields" ||
                         k.starts_with("extra[") || k == "chunks" || k == "rounds";  // the last two: /2 only (else comments)
            if (!known) continue;  // a comment that happens to contain '='
            // The transfers above were resolved against the topology, model and collective already
            // read; changing them now would leave channel ids of another topology in the table.
            if (header) fail(fmt::format("'# {}=' after the header row: the '# key=value' lines come before 'step,from,to,message'", k));
            if (auto [it, fresh] = seen.emplace(std::string(k), line_no); !fresh)
                fail(fmt::format("a second '# {}=' line (the first is line {})", k, it->second));
            if (k == "format" && v != table_format && v != table_format_2)
                fail(fmt::format("unknown format version '{}': this collsched reads {} and {}", v, table_format, table_format_2));
            if (k == "format") v2 = v == table_format_2;
            if (k == "chunks") chunks_text = v;
            if (k == "rounds") rounds_text = v;
            if (k == "topology") t.topology = here([&] { return Topology::parse(v); });
            if (k == "model") model_text = v;
            if (k == "collective") collective = v;
            if (k == "requirements") requirements = std::string(v);
            if (k == "fields") {
                json j;
                if (!table_read::parse_piece(v, max_json_depth - 1, j) || !j.is_object())
                    fail("'# fields=' must be one JSON object (the table's extra top-level fields) without repeated keys");
                for (auto& [fk, fv] : j.items()) {
                    if (fk == "format" || fk == "topology" || fk == "collective" || fk == "model" || fk == "requirements" || fk == "steps" ||
                        fk == "transfers")
                        fail(fmt::format("'# fields=' may not hold \"{}\" (it has its own line)", fk));
                    t.extra_fields.emplace_back(fk, fv.dump());
                }
            }
            if (k.starts_with("extra[")) {
                std::uint64_t i = 0;
                std::string_view num = k.substr(6);
                auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), i);
                json j;
                if (ec != std::errc{} || std::string_view(p, num.data() + num.size()) != "]")
                    fail(fmt::format("'# {}=': expected '# extra[I]={{...}}' with a transfer index I", k));
                if (!table_read::parse_piece(v, max_json_depth - 1, j) || !j.is_object() || j.empty())
                    fail(fmt::format("'# {}=' must be one non-empty JSON object (the transfer's extra fields) without repeated keys", k));
                if (j.contains("step") || j.contains("from") || j.contains("to") || j.contains("msg"))
                    fail(fmt::format("'# {}=' may not hold step, from, to or msg", k));
                extras.emplace_back(i, std::string(trim(v.substr(1, v.size() - 2))));
            }
            continue;
        }
        if (!header) {
            if (line != "step,from,to,message") fail(fmt::format("expected the header row 'step,from,to,message', got '{}'", line));
            if (!t.topology) fail("missing '# topology=SPEC' line before the header row");
            t.model = here([&] { return apply_model_options(t.topology->default_model(), model_text); });
            t.collective = here([&] { return Collective::parse(collective, *t.topology); });
            if (chunks_text && v2) {
                json j;
                if (!table_read::parse_piece(*chunks_text, 1, j)) fail(fmt::format("'# chunks={}': expected a positive integer", *chunks_text));
                std::uint32_t c = table_read::chunks_value(j, fail);
                here([&] { return t.collective.set_chunks(c, *t.topology), 0; });
            }
            if (rounds_text && v2) {
                json j;
                if (!table_read::parse_piece("[" + std::string(*rounds_text) + "]", 2, j))
                    fail(fmt::format("'# rounds={}': expected the rounds of steps 1, 2, ... separated by commas", *rounds_text));
                t.step_rounds = table_read::read_rounds(j, fail);
            }
            if (requirements) read_csv_requirements(t, *requirements, fail);
            resolver.emplace(t, name);
            header = true;
            continue;
        }
        std::string_view f[4];
        for (int i = 0; i < 4; ++i) {
            if (i < 3) {
                std::size_t c = line.find(',');
                if (c == std::string_view::npos) fail("expected 4 fields: step,from,to,message");
                f[i] = trim(line.substr(0, c));
                line = line.substr(c + 1);
            } else {
                f[i] = line;
                // messages contain a comma (m(s,d)): the rest of the line is the message, unquoted or quoted
                if (f[i].size() >= 2 && f[i].front() == '"' && f[i].back() == '"') f[i] = f[i].substr(1, f[i].size() - 2);
            }
        }
        std::uint64_t step = 0;
        auto [p, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), step);
        if (ec != std::errc{} || p != f[0].data() + f[0].size()) fail(fmt::format("step '{}' is not an integer >= 1", f[0]));
        try {
            t.transfers.push_back(resolver->resolve(count++, step, f[1], f[2], f[3]));
        } catch (const InputError& e) {
            fail(std::string(e.what()).substr(name.size() + 2));
        }
    }
    if (!header) throw InputError(fmt::format("{}: not a table: no 'step,from,to,message' header row", name));
    std::sort(extras.begin(), extras.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [i, extra] : extras)
        if (i >= t.transfers.size())
            throw InputError(fmt::format("{}: '# extra[{}]=' names a transfer the table does not have ({} transfers)", name, i, t.transfers.size()));
    t.transfer_extras = std::move(extras);
    finish_composites(t, name);
    t.sort();
    finish_rounds(t, name);
    return t;
}

namespace {

/// A file's bytes followed by at least table_read::json_padding readable bytes (for the fast JSON
/// reader): the file mapped (MAP_POPULATE: its pages are mapped in one call, no copy, no page
/// fault each) when its last page has room for the padding, else read into a padded buffer
/// (pipes, /proc files, a file ending just before a page boundary).
class FileText {
public:
    explicit FileText(const std::string& path) : path_(path) {
        // The input policy first (compiler/input_file.hpp): no directories or devices, at most
        // max_input_bytes(); the descriptor belongs to `file`, which closes it.
        InputFile file;
        const std::uint64_t limit = max_input_bytes();
        if (std::string error = open_input_file(path, "table", limit, max_input_hint, file); !error.empty())
            throw InputError(fmt::format("{}: {}", path, error));
        const int fd = file.fd();
        struct stat st {};
        const long page = ::sysconf(_SC_PAGESIZE);
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && page > 0 &&
            static_cast<std::size_t>(st.st_size) % static_cast<std::size_t>(page) != 0 &&
            static_cast<std::size_t>(page) - static_cast<std::size_t>(st.st_size) % static_cast<std::size_t>(page) >= table_read::json_padding) {
            void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
            if (p != MAP_FAILED) {
                map_ = p;
                map_size_ = static_cast<std::size_t>(st.st_size);
                return;
            }
        }
        char chunk[1 << 16];
        for (ssize_t got; (got = ::read(fd, chunk, sizeof chunk)) != 0;) {
            if (got < 0) {
                if (errno == EINTR) continue;
                throw InputError(fmt::format("{}: cannot read file", path));
            }
            if (buf_.size() + static_cast<std::size_t>(got) > limit)  // a pipe past the limit
                throw InputError(fmt::format("{}: {}", path, input_too_large("table", limit, max_input_hint)));
            buf_.append(chunk, static_cast<std::size_t>(got));
        }
        size_ = buf_.size();
        buf_.append(table_read::json_padding, '\0');
    }
    ~FileText() {
        if (map_) ::munmap(map_, map_size_);
    }
    FileText(const FileText&) = delete;
    FileText& operator=(const FileText&) = delete;
    std::string_view text() const { return map_ ? std::string_view(static_cast<const char*>(map_), map_size_) : std::string_view(buf_.data(), size_); }

private:
    std::string path_, buf_;
    std::size_t size_ = 0, map_size_ = 0;
    void* map_ = nullptr;
};

}  // namespace

std::string read_input_text(const std::string& path, std::string_view what) {
    std::string text;
    std::string error = path == "-" ? read_input_stream(0, what, max_input_bytes(), max_input_hint, text)
                                    : read_input_file(path, what, max_input_bytes(), max_input_hint, text);
    if (!error.empty()) throw InputError(fmt::format("{}: {}", path == "-" ? "<stdin>" : path, error));
    return text;
}

bool looks_like_table(std::string_view text) {
    std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return false;
    if (text[first] == '{' || text[first] == '[') return true;
    if (text.substr(first).starts_with("# format=collsched.table")) return true;
    for (std::size_t at = 0; at < text.size();) {  // CSV: its header row
        std::size_t end = std::min(text.find('\n', at), text.size());
        if (trim(text.substr(at, end - at)) == "step,from,to,message") return true;
        at = end + 1;
    }
    return false;
}

namespace {

/// A table in `text`; `padded` when SIMDJSON_PADDING readable bytes follow it (read_table's buffers).
SendTable parse_table_text(std::string_view text, bool padded, std::string_view name) {
    std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) throw InputError(fmt::format("{}: the file is empty (expected a table in JSON or CSV)", name));
    if (text[first] == '{' || text[first] == '[') return read_json(text, padded, name);
    return parse_table_csv(text, name);
}

}  // namespace

SendTable parse_table(std::string_view text, std::string_view name) { return parse_table_text(text, false, name); }

SendTable read_table(const std::string& path) {
    if (path == "-") return parse_table(read_input_text(path, "table"), "<stdin>");
    FileText file(path);
    return parse_table_text(file.text(), true, path);
}

namespace {

constexpr std::size_t flush_at = 1 << 22;

std::vector<std::string> node_names(const Topology& t) {
    std::vector<std::string> names(t.nodes());
    for (std::uint32_t v = 0; v < t.nodes(); ++v) names[v] = t.node_name(Node{v});
    return names;
}

}  // namespace

namespace {

void put(fmt::memory_buffer& out, std::string_view s) { out.append(s.data(), s.data() + s.size()); }
void put(fmt::memory_buffer& out, std::uint32_t v) {
    fmt::format_int f(v);
    out.append(f.data(), f.data() + f.size());
}
/// Messages::name(m) written straight into the buffer (no string per transfer).
void put_message(fmt::memory_buffer& out, const Messages& ms, MessageId m) {
    if (ms.is_composite(m)) return put(out, ms.name(m));  // a(i..j), b(0)+b(4): rare, by name
    MessageKey k = ms.key(m);
    switch (k.kind) {
        case MessageKind::personal:
            put(out, "m(");
            put(out, k.src);
            out.push_back(',');
            put(out, k.dst);
            break;
        case MessageKind::broadcast:
            put(out, "b(");
            put(out, k.src);
            break;
        case MessageKind::value:
            put(out, "a(");
            put(out, k.src);
            break;
        case MessageKind::combined:
        case MessageKind::bundle:
            COLLSCHED_ASSERT(false);  // composites are written by name above
    }
    if (ms.chunks() > 1) {
        out.push_back(',');
        put(out, k.chunk);
    }
    out.push_back(')');
}

}  // namespace

void write_table_json(const SendTable& t, fmt::memory_buffer& out, const Flush& flush) {
    auto it = std::back_inserter(out);
    fmt::format_to(it, "{{\"format\": \"{}\", \"topology\": {},\n \"model\": {},\n \"collective\": \"{}\",\n", table_format_of(t),
                   json(t.topology->spec()).dump(), to_json(t.model).dump(), t.collective.to_string());
    if (t.uses_bandwidth_model()) {
        fmt::format_to(it, " \"chunks\": {},\n", t.collective.chunks);
        if (!t.step_rounds.empty()) fmt::format_to(it, " \"rounds\": [{}],\n", fmt::join(t.step_rounds, ", "));
    }
    Messages ms = t.messages();
    if (!t.requirements.empty()) {
        fmt::format_to(it, " \"requirements\": [");
        for (std::size_t i = 0; i < t.requirements.size(); ++i)
            fmt::format_to(it, "{}{{\"msg\": \"{}\", \"at\": \"{}\"}}", i ? ", " : "", ms.name(t.requirements[i].message),
                           idx(t.requirements[i].at));
        fmt::format_to(it, "],\n");
    }
    for (const auto& [k, v] : t.extra_fields) fmt::format_to(it, " {}: {},\n", json(k).dump(), v);
    fmt::format_to(it, " \"steps\": {},\n \"transfers\": [", t.steps());
    std::vector<std::string> names = node_names(*t.topology);
    auto extra = t.transfer_extras.begin();
    std::vector<std::string> origin_json;  // "at" of each origin, as JSON strings
    for (const std::string& o : t.origins) origin_json.push_back(json(o).dump());
    for (std::uint64_t i = 0; i < t.transfers.size(); ++i) {
        const Transfer& x = t.transfers[i];
        const Channel& c = t.topology->channel(x.channel);
        put(out, i ? ",\n  {\"step\": " : "\n  {\"step\": ");
        put(out, x.step);
        put(out, ", \"from\": \"");
        put(out, names[idx(c.from)]);
        put(out, "\", \"to\": \"");
        put(out, names[idx(c.to)]);
        put(out, "\", \"msg\": \"");
        put_message(out, ms, x.message);
        out.push_back('"');
        if (i < t.transfer_origins.size() && t.transfer_origins[i] < origin_json.size()) {
            put(out, ", \"at\": ");
            put(out, origin_json[t.transfer_origins[i]]);
        }
        if (extra != t.transfer_extras.end() && extra->first == i) {
            fmt::format_to(it, ", {}", extra->second);
            ++extra;
        }
        out.push_back('}');
        if (out.size() > flush_at) flush(out);
    }
    fmt::format_to(it, "\n ]}}\n");
    flush(out);
}

void write_table_csv(const SendTable& t, fmt::memory_buffer& out, const Flush& flush) {
    auto it = std::back_inserter(out);
    fmt::format_to(it, "# format={}\n# topology={}\n# model={}\n# collective={}\n", table_format_of(t), t.topology->spec(),
                   to_string(t.model), t.collective.to_string());
    if (t.uses_bandwidth_model()) {
        fmt::format_to(it, "# chunks={}\n", t.collective.chunks);
        if (!t.step_rounds.empty()) fmt::format_to(it, "# rounds={}\n", fmt::join(t.step_rounds, ","));
    }
    Messages ms = t.messages();
    // What the table holds besides its transfers, so that a CSV export reads back to the same table.
    if (!t.requirements.empty()) {
        put(out, "# requirements=");
        for (std::size_t i = 0; i < t.requirements.size(); ++i)
            fmt::format_to(it, "{}{}@{}", i ? " " : "", ms.name(t.requirements[i].message), idx(t.requirements[i].at));
        out.push_back('\n');
    }
    if (!t.extra_fields.empty()) {
        put(out, "# fields={");
        for (std::size_t i = 0; i < t.extra_fields.size(); ++i)
            fmt::format_to(it, "{}{}:{}", i ? "," : "", json(t.extra_fields[i].first).dump(), t.extra_fields[i].second);
        put(out, "}\n");
    }
    for (const auto& [i, text] : t.transfer_extras) fmt::format_to(it, "# extra[{}]={{{}}}\n", i, text);
    put(out, "step,from,to,message\n");
    std::vector<std::string> names = node_names(*t.topology);
    for (const Transfer& x : t.transfers) {
        const Channel& c = t.topology->channel(x.channel);
        put(out, x.step);
        out.push_back(',');
        put(out, names[idx(c.from)]);
        out.push_back(',');
        put(out, names[idx(c.to)]);
        put(out, ",\"");
        put_message(out, ms, x.message);
        put(out, "\"\n");
        if (out.size() > flush_at) flush(out);
    }
    flush(out);
}

std::string table_to_json(const SendTable& t) {
    return write_to_string([&](fmt::memory_buffer& b, const Flush& f) { write_table_json(t, b, f); });
}
std::string table_to_csv(const SendTable& t) {
    return write_to_string([&](fmt::memory_buffer& b, const Flush& f) { write_table_csv(t, b, f); });
}

}  // namespace collsched
