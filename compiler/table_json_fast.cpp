// The fast JSON table reader (simdjson On Demand): the common shape of a table, at disk speed.
// It reads the top-level object field by field; the transfers array element by element with
// typed accessors (which validate what they read), every other top-level value as raw text handed
// to the strict piece parser. Anything it does not read itself (transfers before the topology,
// extra fields in a transfer, a negative step, escapes in a key, a document over simdjson's 4 GB)
// and every error make it return nullopt, and the reference reader then reads the file and gives
// its message: so the language accepted and every diagnostic are the reference reader's.
#include <simdjson.h>

#include <cstring>
#include <optional>
#include <string>

#include "compiler/flat_map.hpp"
#include "compiler/json_error.hpp"
#include "compiler/table_io.hpp"
#include "compiler/table_read.hpp"

namespace collsched::table_read {

static_assert(json_padding >= simdjson::SIMDJSON_PADDING);

namespace {

namespace od = simdjson::ondemand;

struct Bail {};

/// True when the raw key (after its opening quote) is exactly `word` followed by the closing
/// quote: a key written with escapes never matches, and then the reference reader decides.
template <std::size_t N>
bool key_is(const char* raw, const char (&word)[N]) {
    return std::memcmp(raw, word, N - 1) == 0 && raw[N - 1] == '"';
}

class FastReader {
public:
    explicit FastReader(std::string_view name) : name_(name) {}

    std::optional<SendTable> read(simdjson::padded_string_view text, bool& ranks) {
        text_size_ = text.size();
        od::parser parser;
        od::document doc = parser.iterate(text);
        od::object top = doc.get_object();
        bool seen_transfers = false;
        for (od::field f : top) {
            std::string key(std::string_view(f.unescaped_key()));
            od::value v = f.value();
            if (key == "transfers") {
                if (seen_transfers || top_.count(key) || !resolver_) throw Bail{};  // duplicate, or topology (or chunks) after
                seen_transfers = true;
                read_transfers(v.get_array());
                continue;
            }
            if (top_.count(key)) throw Bail{};  // a duplicate key: the reference reader says so
            json j;
            if (!parse_piece(raw_text(v), max_json_depth - 1, j)) throw Bail{};
            if (key == "format" && j.is_string() && j.get<std::string>().starts_with("collsched.ranks/")) {
                ranks = true;
                return std::nullopt;
            }
            top_.emplace(std::move(key), std::move(j));
            if (!resolver_ && top_.count("topology")) {
                if (auto chunks = known_chunks(top_, name_)) {  // the topology and the chunk count fix the message ids
                    ensure_topology(table_, top_, name_);
                    table_.collective.chunks = *chunks;
                    resolver_.emplace(table_, name_);
                    P_ = table_.topology->processors();
                    C_ = *chunks;
                    ms_.emplace(P_, nullptr, C_);
                }
            }
        }
        // Trailing content after the top-level object: simdjson reports no position left.
        if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) throw Bail{};
        finish_table(table_, top_, seen_transfers, name_, nullptr);
        return std::move(table_);
    }

private:
    /// The raw JSON text of a value (a container whole, a scalar as its token).
    static std::string_view raw_text(od::value& v) {
        switch (od::json_type(v.type())) {
            case od::json_type::object: {
                od::object o = v.get_object();
                return o.raw_json();
            }
            case od::json_type::array: {
                od::array a = v.get_array();
                return a.raw_json();
            }
            default: return v.raw_json_token();
        }
    }

    /// A string value without escapes, in place in the document (no copy into simdjson's string
    /// buffer, which would be one more page fault per 4 KiB). A string with a backslash, or with a
    /// control character (which JSON does not allow unescaped), goes to the reference reader.
    static std::string_view plain_string(od::value& v) {
        const char* p = od::raw_json_string(v.get_raw_json_string()).raw();
        const char* q = p;
        for (; *q != '"'; ++q)
            if (*q == '\\' || static_cast<unsigned char>(*q) < 0x20) throw Bail{};
        return {p, static_cast<std::size_t>(q - p)};
    }

    void read_transfers(od::array list) {
        // A transfer takes at least 44 bytes of JSON: room for all of them, without copying as the
        // vector grows (pages not filled are never touched).
        table_.transfers.reserve(text_size_ / 44 + 16);
        std::uint64_t i = 0;
        for (od::value item : list) {
            od::object o = item.get_object();
            std::uint64_t step = 0;
            std::string_view from, to, msg;
            unsigned seen = 0;
            for (od::field f : o) {
                const char* k = f.key().raw();
                unsigned bit;
                if (key_is(k, "step")) bit = 1;
                else if (key_is(k, "from")) bit = 2;
                else if (key_is(k, "to")) bit = 4;
                else if (key_is(k, "msg")) bit = 8;
                else throw Bail{};  // extra fields in a transfer: the reference reader keeps them
                if (seen & bit) throw Bail{};
                seen |= bit;
                od::value v = f.value();
                switch (bit) {
                    case 1: step = v.get_uint64(); break;
                    case 2: from = plain_string(v); break;
                    case 4: to = plain_string(v); break;
                    default: msg = plain_string(v); break;
                }
            }
            if (seen != 15) throw Bail{};
            table_.transfers.push_back(resolve(i++, step, from, to, msg));
        }
    }

    // ---- resolution: the canonical spellings directly, everything else through the Resolver ----

    /// A name of at most 7 bytes packed with its length into one word (0: longer). The name lies
    /// in the padded document, so the 8 bytes from its start can be loaded at once and masked (a
    /// memcpy of its length would stall the load that follows it).
    static std::uint64_t pack(std::string_view s) {
        if (s.size() > 7) return 0;
        std::uint64_t k;
        std::memcpy(&k, s.data(), 8);
        k &= (std::uint64_t{1} << (8 * s.size())) - 1;
        return k | (std::uint64_t{s.size()} << 56);
    }

    /// The node named `s` (Topology::find_node's answer, remembered by packed name), or nullopt.
    std::optional<Node> node(std::string_view s) {
        const std::uint64_t k = pack(s);
        if (k == 0) return table_.topology->find_node(s);
        if (std::uint32_t v = nodes_.find(k); v != FlatMap::none) return Node{v};
        auto n = table_.topology->find_node(s);
        if (n) nodes_.find_or_insert(k, [&] { return idx(*n); });
        return n;
    }

    /// `d..d` (1 to 9 digits) at the front of s: its value, and s advanced past it.
    static bool digits(std::string_view& s, std::uint32_t& out) {
        std::size_t k = 0;
        std::uint32_t v = 0;
        while (k < s.size() && k < 10 && s[k] >= '0' && s[k] <= '9') v = v * 10 + static_cast<std::uint32_t>(s[k++] - '0');
        if (k == 0 || k > 9) return false;
        s.remove_prefix(k);
        out = v;
        return true;
    }

    /// m(s,d), b(s), a(s) written plainly, with a last argument c < C under chunks (Messages::parse
    /// accepts the same and more).
    std::optional<MessageId> message(std::string_view s) const {
        if (s.size() < 4 || s[1] != '(' || s.back() != ')') return std::nullopt;
        const char kind = s[0];
        s = s.substr(2, s.size() - 3);
        std::uint32_t a = 0, b = 0, c = 0;
        if (!digits(s, a) || a >= P_) return std::nullopt;
        if (kind == 'm') {
            if (s.empty() || s[0] != ',') return std::nullopt;
            s.remove_prefix(1);
            if (!digits(s, b) || b >= P_) return std::nullopt;
        }
        if (C_ > 1) {
            if (s.empty() || s[0] != ',') return std::nullopt;
            s.remove_prefix(1);
            if (!digits(s, c) || c >= C_) return std::nullopt;
        }
        if (!s.empty()) return std::nullopt;
        if (kind == 'm') return ms_->personal(a, b, c);
        if (kind == 'b') return ms_->broadcast(a, c);
        if (kind == 'a') return ms_->value(a, c);
        return std::nullopt;
    }

    Transfer resolve(std::uint64_t i, std::uint64_t step, std::string_view from, std::string_view to, std::string_view msg) {
        if (step >= 1 && step <= (1u << 31)) {
            const std::uint64_t kf = pack(from), kt = pack(to);
            std::optional<ChannelId> c;
            if (kf != 0 && kf == last_from_ && kt == last_to_) {
                c = last_channel_;  // the run of one channel (tables are sorted by step, channel)
            } else if (auto u = node(from), v = node(to); u && v) {
                c = table_.topology->find_channel(*u, *v);
                if (c && kt != 0) last_from_ = kf, last_to_ = kt, last_channel_ = *c;  // (0: a long name, not remembered)
            }
            if (c)
                if (auto m = message(msg)) return {static_cast<Step>(step), *c, *m};
        }
        return resolver_->resolve(i, step, from, to, msg);  // the general case, and every error
    }

    std::string_view name_;
    SendTable table_;
    TopFields top_;
    std::optional<Resolver> resolver_;
    std::size_t text_size_ = 0;
    std::uint32_t P_ = 0, C_ = 1;
    std::optional<Messages> ms_;
    FlatMap nodes_{256};
    std::uint64_t last_from_ = 0, last_to_ = 0;
    ChannelId last_channel_{0};
};

}  // namespace

std::optional<SendTable> parse_fast(std::string_view text, bool padded, std::string_view name, bool& ranks) {
    ranks = false;
    if (text.size() >= simdjson::SIMDJSON_MAXSIZE_BYTES) return std::nullopt;  // simdjson's limit: the reference reader streams
    try {
        FastReader r(name);
        if (padded) return r.read(simdjson::padded_string_view(text.data(), text.size(), text.size() + simdjson::SIMDJSON_PADDING), ranks);
        simdjson::padded_string copy(text);
        return r.read(copy, ranks);
    } catch (const Bail&) {
    } catch (const simdjson::simdjson_error&) {
    } catch (const InputError&) {
    }
    return std::nullopt;
}

}  // namespace collsched::table_read
