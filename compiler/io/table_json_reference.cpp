#include <map>
#include <optional>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiler/core/json_error.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/io/table_read.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

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
                r.add(table_.transfers, i, p.step, p.from, p.to, p.msg);
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
            resolver_->add(table_.transfers, count_, *cur_.step, *cur_.from, *cur_.to, *cur_.msg);
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

}  // namespace

SendTable parse_table_json_reference(std::string_view text, std::string_view name) {
    check_json_depth(name, text);
    const std::string_view body = before_nul(text);  // json_error.hpp: a NUL would end nlohmann's input
    TableSax sax(name);
    bool ok = json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::json, true);
    if (!ok) {
        if (body.size() < text.size() && sax.error_position_.value_or(0) >= body.size()) throw InputError(nul_byte(name, text));
        throw InputError(malformed_json(name, text, sax.error_position_.value_or(0), sax.error_text_));
    }
    if (body.size() < text.size()) throw InputError(nul_byte(name, text));
    return sax.finish();
}

SendTable parse_table_json(std::string_view text, std::string_view name) {
    bool ranks = false;
    if (auto t = table_read::parse_fast(text, false, name, ranks)) return std::move(*t);
    return parse_table_json_reference(text, name);
}

}  // namespace collsched
