// The fast JSON table reader (simdjson On Demand): the common shape of a table, at disk speed.
// It reads the top-level object field by field; the transfers array element by element with
// typed accessors (which validate what they read), every other top-level value as raw text handed
// to the strict piece parser. Anything it does not read itself (transfers before the topology,
// extra fields in a transfer, a negative step, escapes in a key, a document over simdjson's 4 GB)
// and every error make it return nullopt, and the reference reader then reads the file and gives
// its message: so the language accepted and every diagnostic are the reference reader's.
//
// Pieces (the common layout: "transfers" last, one transfer per line). The head of the top-level
// object is scanned by hand up to the key "transfers" (each value's raw text goes to the strict
// piece parser, as in the whole-document path); the transfers array is cut into pieces of about
// `piece_bytes` at a comma followed by a line end, and each piece is copied into one reused
// padded buffer as `[` piece `]` and read by one reused On Demand parser. simdjson's structural
// index (4 bytes per structural character, 72 bytes per transfer) then stays the size of a piece,
// in cache, instead of 1.4 GB of fresh pages at n = 1024. Anything else in the layout (a key with
// an escape or a non-ASCII byte, transfers not last, a piece that does not read) goes to the
// whole-document path below, which reads any layout; errors still go to the reference reader.
//
// The plain shape. Most pieces are what collsched and most JSON writers print: objects of the
// four keys step, from, to and msg, a step written as digits, names of ASCII from 0x20 to 0x7f
// without escapes. Such a piece is read by a matcher of exactly that grammar (Walk::read_plain),
// in place, without simdjson: it accepts a strict subset of JSON whose meaning is plain (no
// escapes, no UTF-8 to validate, no number but digits), and at the first byte outside it the
// piece goes to simdjson as above. Measured on EBFT tables, the matcher reads a transfer in about
// 340 instructions against the On Demand walk's 450, and needs neither stage 1 nor the copy of
// the piece (docs/performance.md, issue 19, fourth session).
//
// Two threads (FastReader::read_all). From 16 MB of text on a machine with two cores, a helper
// thread reads plain pieces from the back of the array while this thread reads from the front;
// the helper never resolves nor calls simdjson (it gives such a piece back), so the table and
// every exception are the one-thread reader's.
#include <simdjson.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "compiler/core/json_error.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/io/table_read.hpp"

namespace collsched::table_read {

static_assert(json_padding >= simdjson::SIMDJSON_PADDING);

namespace {

namespace od = simdjson::ondemand;

struct Bail {};
/// The layout is not the one the pieces path reads (or a piece did not read): the whole-document
/// path decides.
struct NotPieces {};

/// True when the raw key (after its opening quote) is exactly `word` followed by the closing
/// quote: a key written with escapes never matches, and then the reference reader decides.
template <std::size_t N>
bool key_is(const char* raw, const char (&word)[N]) {
    return std::memcmp(raw, word, N - 1) == 0 && raw[N - 1] == '"';
}

/// JSON's four whitespace characters.
bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_ws(std::string_view t, std::size_t p) {
    while (p < t.size() && is_ws(t[p])) ++p;
    return p;
}

/// The position after the closing quote of the string whose opening quote is at p (a backslash
/// escapes the next byte), or npos. Only finds the end: the text is validated by whoever reads it.
std::size_t string_end(std::string_view t, std::size_t p) {
    for (++p; p < t.size(); ++p) {
        if (t[p] == '\\') ++p;
        else if (t[p] == '"') return p + 1;
    }
    return std::string_view::npos;
}

/// The end of the value starting at p: a string, a container (brackets counted outside strings)
/// or a scalar token; npos when there is none. Again only the extent: parse_piece validates it.
std::size_t value_end(std::string_view t, std::size_t p) {
    if (p >= t.size()) return std::string_view::npos;
    if (t[p] == '"') return string_end(t, p);
    if (t[p] == '{' || t[p] == '[') {
        std::size_t depth = 0;
        for (std::size_t q = p; q < t.size(); ++q) {
            const char c = t[q];
            if (c == '"') {
                q = string_end(t, q);
                if (q == std::string_view::npos) return q;
                --q;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return q + 1;
            }
        }
        return std::string_view::npos;
    }
    std::size_t q = p;
    while (q < t.size() && !is_ws(t[q]) && t[q] != ',' && t[q] != '}' && t[q] != ']') ++q;
    return q == p ? std::string_view::npos : q;
}

/// The first cut at or after `from` and before `close`: a comma followed (after spaces, tabs and
/// carriage returns) by a line feed; `close` when there is none. Valid JSON has no raw line feed
/// inside a string, so in a valid document such a comma is outside strings (read_pieces argues
/// why an invalid one cannot slip through).
std::size_t find_cut(std::string_view t, std::size_t begin, std::size_t from, std::size_t close) {
    for (std::size_t p = from; p < close;) {
        const void* nl = std::memchr(t.data() + p, '\n', close - p);
        if (!nl) return close;
        const std::size_t q = static_cast<std::size_t>(static_cast<const char*>(nl) - t.data());
        std::size_t r = q;
        while (r > begin && (t[r - 1] == ' ' || t[r - 1] == '\t' || t[r - 1] == '\r')) --r;
        if (r > begin && t[r - 1] == ',') return r - 1;
        p = q + 1;
    }
    return close;
}

class FastReader {
public:
    FastReader(std::string_view name, bool padded, const FastOptions& options)
        : name_(name),
          piece_bytes_(std::max<std::size_t>(options.piece_bytes, 1)),
          padded_(padded),
          plain_(options.plain),
          threads_(options.threads),
          min_parallel_pieces_(options.threads == 2 ? 2 : 8) {}

    std::size_t pieces() const { return pieces_; }
    std::size_t plain_pieces() const { return plain_pieces_; }
    std::size_t helper_pieces() const { return helper_pieces_; }

    /// The whole document at once, in any layout.
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
                od::array list = v.get_array();
                Walk(*this, table_.transfers).read_transfers(list);
                continue;
            }
            if (!top_field(std::move(key), raw_text(v))) {
                ranks = true;
                return std::nullopt;
            }
        }
        // Trailing content after the top-level object: simdjson reports no position left.
        if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) throw Bail{};
        finish_table(table_, top_, seen_transfers, name_, nullptr);
        return std::move(table_);
    }

    /// The common layout in pieces (the file's header comment); throws NotPieces for any other.
    ///
    /// Why the cuts cannot change the meaning: the array's text between its brackets is cut at
    /// commas c_1 < ... < c_k-1 into pieces p_1 ... p_k, and each `[` p_i `]` must read as one
    /// complete array (nothing after its closing bracket) with at least one element (none only
    /// when k = 1). Then each p_i is a comma-separated list of one or more JSON values, so their
    /// concatenation with the commas, the array's text, is such a list too: the document is valid
    /// and its elements are exactly the pieces' elements, in order. A cut inside an element or a
    /// string (possible only in an invalid document, or with a line break inside an element) leaves
    /// some piece with an unbalanced bracket or quote, which does not read: the whole-document
    /// path then decides. The head is JSON by construction: its structure is matched byte by byte
    /// here, keys are plain ASCII, and every value is validated by parse_piece.
    std::optional<SendTable> read_pieces(std::string_view t, bool& ranks) {
        text_size_ = t.size();
        std::size_t p = skip_ws(t, 0);
        if (p >= t.size() || t[p] != '{') throw NotPieces{};
        ++p;
        for (;;) {
            p = skip_ws(t, p);
            if (p >= t.size() || t[p] != '"') throw NotPieces{};
            const std::size_t k0 = ++p;
            while (p < t.size() && t[p] != '"') {
                const auto c = static_cast<unsigned char>(t[p]);
                if (c < 0x20 || c >= 0x7f || c == '\\') throw NotPieces{};  // the whole-document path unescapes and validates
                ++p;
            }
            if (p >= t.size()) throw NotPieces{};
            std::string key(t.substr(k0, p - k0));
            p = skip_ws(t, p + 1);
            if (p >= t.size() || t[p] != ':') throw NotPieces{};
            p = skip_ws(t, p + 1);
            if (key == "transfers") break;
            const std::size_t e = value_end(t, p);
            if (e == std::string_view::npos) throw NotPieces{};
            if (!top_field(std::move(key), t.substr(p, e - p))) {
                ranks = true;
                return std::nullopt;
            }
            p = skip_ws(t, e);
            if (p >= t.size() || t[p] != ',') throw NotPieces{};  // the object ends without transfers, or odd text
            ++p;
        }
        if (p >= t.size() || t[p] != '[') throw NotPieces{};
        const std::size_t open = p;
        // The array's closing bracket when "transfers" is the last field: `]`, spaces, `}`, spaces.
        std::size_t close = t.size();
        while (close > open && is_ws(t[close - 1])) --close;
        if (close <= open + 1 || t[close - 1] != '}') throw NotPieces{};
        --close;
        while (close > open && is_ws(t[close - 1])) --close;
        if (close <= open + 1 || t[close - 1] != ']') throw NotPieces{};
        --close;
        if (!resolver_) throw Bail{};  // the topology (or chunks) after the transfers: the reference reader
        std::vector<std::string_view> pieces;
        for (std::size_t begin = open + 1;;) {
            const std::size_t cut = find_cut(t, begin, std::min(close, begin + piece_bytes_), close);
            pieces.push_back(t.substr(begin, cut - begin));
            if (cut == close) break;
            begin = cut + 1;
        }
        // One piece holding a large array (no line ends): the whole-document path reads it in place.
        if (pieces.size() == 1 && pieces[0].size() > 4 * piece_bytes_ + 4096) throw NotPieces{};
        table_.transfers.reserve(text_size_ / 44 + 16);
        const char* const readable_end = t.data() + t.size() + (padded_ ? simdjson::SIMDJSON_PADDING : 0);
        read_all(pieces, readable_end);
        pieces_ = pieces.size();
        finish_table(table_, top_, true, name_, nullptr);
        return std::move(table_);
    }

private:
    /// The pieces in order into table_.transfers: by this thread alone, or with a helper thread
    /// taking plain pieces from the back while this one takes pieces from the front (two-ended,
    /// so that a busy second core costs at most the piece the helper holds). The helper reads a
    /// piece only when the matcher and the shortcuts settle all of it (no resolver, no simdjson:
    /// both stay with this thread); at its first piece that needs either it gives the piece back
    /// and stops. This thread reads every piece it takes exactly as the sequential loop would, in
    /// order, so any exception is the sequential one; the helper's pieces, which come after all of
    /// this thread's, are appended last. The table is the sequential reader's, byte for byte.
    void read_all(const std::vector<std::string_view>& pieces, const char* readable_end) {
        Walk walk(*this, table_.transfers);
        const auto read = [&](std::size_t j) {
            if (plain_ && walk.read_plain(pieces[j], readable_end)) ++plain_pieces_;
            else walk.read_piece(pieces[j], pieces.size() == 1);
        };
        if (!plain_ || threads_ == 1 || pieces.size() < min_parallel_pieces_ ||
            (threads_ == 0 && (text_size_ < parallel_bytes || std::thread::hardware_concurrency() < 2))) {
            for (std::size_t j = 0; j < pieces.size(); ++j) read(j);
            return;
        }
        std::mutex claim;
        std::size_t front = 0, back = pieces.size();  // [front, back): not taken yet
        std::atomic<bool> stop{false};
        std::vector<Transfer> tail;                    // the helper's pieces, from the last one back
        std::vector<std::size_t> tail_ends;            // where each of them ends in tail
        std::size_t helper_plain = 0;
        tail.reserve(text_size_ / 2 / 44 + 16);  // as table_.transfers: pages not filled are never touched
        // The helper starts with the last piece, taken here: it always has one to read.
        const auto help = [&, first = --back] {
            try {
                Walk own(*this, tail);
                for (std::size_t j = first; !stop.load(std::memory_order_relaxed);) {
                    if (!own.read_plain(pieces[j], readable_end, false)) {
                        std::lock_guard lock(claim);
                        ++back;  // given back: this thread reads it in order
                        return;
                    }
                    tail_ends.push_back(tail.size());
                    ++helper_plain;
                    std::lock_guard lock(claim);
                    if (front == back) return;
                    j = --back;
                }
            } catch (...) {  // memory: the piece in hand goes back (this thread then meets the same)
                std::lock_guard lock(claim);
                if (tail_ends.size() < pieces.size() - back) ++back;
            }
        };
        std::thread helper;
        try {
            helper = std::thread(help);
        } catch (const std::system_error&) {  // no thread to be had: all pieces here
            ++back;
        }
        try {
            for (;;) {
                std::size_t j;
                {
                    std::lock_guard lock(claim);
                    if (front == back) break;
                    j = front++;
                }
                read(j);
            }
        } catch (...) {
            stop = true;
            if (helper.joinable()) helper.join();
            throw;
        }
        if (helper.joinable()) helper.join();
        while (front < back) read(front++);  // a piece the helper gave back after this loop ended
        // The helper's pieces, back .. n-1, are tail's segments in reverse.
        plain_pieces_ += helper_plain;
        helper_pieces_ = helper_plain;
        std::vector<Transfer>& out = table_.transfers;
        for (std::size_t k = tail_ends.size(); k-- > 0;) {
            const std::size_t from = k == 0 ? 0 : tail_ends[k - 1];
            out.insert(out.end(), tail.begin() + static_cast<std::ptrdiff_t>(from), tail.begin() + static_cast<std::ptrdiff_t>(tail_ends[k]));
        }
    }

    /// One top-level field other than "transfers", as both paths read it (a duplicate or a value
    /// parse_piece refuses: Bail). False for a per-rank file's "format".
    bool top_field(std::string key, std::string_view raw) {
        if (top_.count(key)) throw Bail{};  // a duplicate key: the reference reader says so
        json j;
        if (!parse_piece(raw, max_json_depth - 1, j)) throw Bail{};
        if (key == "format" && j.is_string() && j.get<std::string>().starts_with("collsched.ranks/")) return false;
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
        return true;
    }

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

    /// Reading transfers into `out`: the parser, buffer and caches (kept apart from the reader's
    /// fixed state, the topology and the message numbering, which it only reads).
    class Walk {
    public:
        Walk(FastReader& r, std::vector<Transfer>& out) : r_(r), out_(out) {}

        /// One piece of the transfers array, copied as `[` piece `]` into the reused padded buffer
        /// and read with the reused parser: fully (nothing after its closing bracket) and with at
        /// least one element unless it is the only piece. Anything else: NotPieces.
        void read_piece(std::string_view piece, bool only) {
            const std::size_t len = piece.size() + 2;
            if (buffer_size_ < len + simdjson::SIMDJSON_PADDING) {
                buffer_size_ = std::max(len, r_.piece_bytes_ + 4096) * 5 / 4 + simdjson::SIMDJSON_PADDING;
                buffer_ = std::make_unique<char[]>(buffer_size_);
            }
            char* b = buffer_.get();
            b[0] = '[';
            std::memcpy(b + 1, piece.data(), piece.size());
            b[len - 1] = ']';
            std::memset(b + len, ' ', simdjson::SIMDJSON_PADDING);
            const std::size_t before = out_.size();
            try {
                od::document doc = parser_.iterate(b, len, buffer_size_);
                od::array list = doc.get_array();
                read_transfers(list);
                if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) throw NotPieces{};
            } catch (const simdjson::simdjson_error&) {
                throw NotPieces{};
            }
            if (out_.size() == before && !only) throw NotPieces{};
        }

        void read_transfers(od::array& list) {
            // A transfer takes at least 44 bytes of JSON: room for all of them, without copying as
            // the vector grows (pages not filled are never touched).
            if (out_.capacity() == 0) out_.reserve(r_.text_size_ / 44 + 16);
            std::uint64_t i = out_.size();
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
                // the shortcuts (the document is padded), else the general case and every error
                if (!shortcuts_.transfer<true>(step, from, to, msg, out_.emplace_back())) {
                    out_.pop_back();
                    r_.resolver_->add(out_, i, step, from, to, msg);
                }
                ++i;
            }
        }

        /// One piece in the plain shape (the file's header comment), read in place: its transfers
        /// appended, true. At the first byte outside the shape: false, nothing appended, and the
        /// caller reads the piece with simdjson. The grammar, with ws JSON's four whitespace bytes:
        ///   piece  = ws object ws *( "," ws object ws )
        ///   object = "{" ws member ws *( "," ws member ws ) "}"   each of the four keys exactly once
        ///   member = ( "\"step\"" ws ":" ws digits ) | ( ( "\"from\"" | "\"to\"" | "\"msg\"" ) ws ":" ws name )
        ///   digits = "0" | %x31-39 *18%x30-39      (at most 19 digits: below 2^64)
        ///   name   = "\"" *( %x20-21 | %x23-5B | %x5D-7F ) "\""   (ASCII from space to DEL, no quote or backslash)
        /// Every string of it is JSON and means what the simdjson path reads, so the piece argument
        /// of read_pieces holds unchanged. Bytes past `piece` are loaded only below `readable_end`
        /// (64 from an object's start, 8 from a name or number) and never decide anything. Without
        /// `resolve` (the helper thread) a transfer the shortcuts do not settle makes it give up too.
        bool read_plain(std::string_view piece, const char* readable_end, bool resolve = true) {
            const char* p = piece.data();
            const char* const end = p + piece.size();
            const std::size_t before = out_.size();
            std::uint64_t i = before;
            for (;;) {
                if (end - p >= 4 && std::memcmp(p, "\n  {", 4) == 0) p += 3;  // collsched's own line start
                else p = skip(p, end);
                Fields f;
                const char* q = spelled(p, end, readable_end, f);
                if (!q) q = object(p, end, readable_end, f);
                if (!q) {
                    out_.resize(before);
                    return false;
                }
                p = q;
                // the shortcuts: an 8-byte load per name when 8 bytes past p are readable (every
                // string of the object ends before p, so then 8 bytes past each string are too)
                Transfer& slot = out_.emplace_back();
                const bool settled = readable_end - p >= 8 ? shortcuts_.transfer<true>(f.step, f.from, f.to, f.msg, slot)
                                                           : shortcuts_.transfer<false>(f.step, f.from, f.to, f.msg, slot);
                if (!settled) {
                    out_.pop_back();
                    if (!resolve) {  // the helper thread: the piece goes back to the reader's thread
                        out_.resize(before);
                        return false;
                    }
                    r_.resolver_->add(out_, i, f.step, f.from, f.to, f.msg);
                }
                ++i;
                if (p < end && *p == ',') {
                    ++p;
                    continue;
                }
                p = skip(p, end);
                if (p == end) return true;
                if (*p != ',') {
                    out_.resize(before);
                    return false;
                }
                ++p;
            }
        }

    private:
        struct Fields {
            std::uint64_t step = 0;
            std::string_view from, to, msg;
        };

        /// The object at p written exactly as collsched (and Python's json module) write it,
        /// {"step": S, "from": "F", "to": "T", "msg": "M"}: the position after it, or nullptr (and
        /// the general grammar reads it). A few fixed-width compares instead of a byte at a time.
        static const char* spelled(const char* p, const char* end, const char* readable_end, Fields& f) {
            const auto literal = [&]<std::size_t N>(const char (&word)[N]) {
                if (end - p < static_cast<std::ptrdiff_t>(N - 1) || std::memcmp(p, word, N - 1) != 0) return false;
                p += N - 1;
                return true;
            };
            // Where the 64 bytes from the object's start are readable: their quotes and the bytes no
            // name may hold, as bit masks; a name ending in them is then a shift and a count.
            std::uint64_t quotes = 0, bad = 0;
            const bool window = readable_end - p >= 64 && classify64(p, quotes, bad);
            const char* const base = p;
            const auto name = [&](std::string_view& out) {
                if (const std::ptrdiff_t off = p - base; window && off < 64) {
                    if (const std::uint64_t ahead = quotes >> off) {
                        const unsigned len = static_cast<unsigned>(std::countr_zero(ahead));
                        if ((bad >> off) & ((std::uint64_t{1} << len) - 1)) return false;
                        out = {p, len};
                        p += len;  // a quote past `end` fails the next literal's bound
                        return true;
                    }
                }
                const char* e = name_end(p, end, readable_end);
                if (!e) return false;
                out = {p, static_cast<std::size_t>(e - p)};
                p = e;
                return true;
            };
            if (!literal("{\"step\": ") || !(p = digits(p, end, readable_end, f.step)) || !literal(", \"from\": \"") || !name(f.from) ||
                !literal("\", \"to\": \"") || !name(f.to) || !literal("\", \"msg\": \"") || !name(f.msg) || !literal("\"}"))
                return nullptr;
            return p;
        }

        /// The 64 bytes at p, classified: bit i of `quotes` is set when byte i is a quote, of `bad`
        /// when it may not stand in a name (below 0x20, not ASCII, a backslash). SSE2 (every x86-64):
        /// four 16-byte compares; elsewhere false, and names are found eight bytes at a time.
        static bool classify64(const char* p, std::uint64_t& quotes, std::uint64_t& bad) {
#if defined(__SSE2__)
            const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
            for (int k = 0; k < 4; ++k) {
                const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
                const auto q = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, quote)));
                // signed: the bytes from 0x80 are negative, so "below 0x20" also flags them
                const auto b = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_cmplt_epi8(x, space), _mm_cmpeq_epi8(x, backslash))));
                quotes |= std::uint64_t{q} << (16 * k);
                bad |= std::uint64_t{b} << (16 * k);
            }
            return true;
#else
            (void)p, (void)quotes, (void)bad;
            return false;
#endif
        }

        /// The object at p in the general grammar of read_plain: the position after it, or nullptr.
        static const char* object(const char* p, const char* end, const char* readable_end, Fields& f) {
            if (p == end || *p != '{') return nullptr;
            ++p;
            unsigned seen = 0;
            for (;;) {
                p = skip(p, end);
                if (end - p < 6 || *p != '"') return nullptr;
                ++p;
                unsigned bit;
                if (std::memcmp(p, "step\"", 5) == 0) bit = 1, p += 5;
                else if (std::memcmp(p, "from\"", 5) == 0) bit = 2, p += 5;
                else if (std::memcmp(p, "msg\"", 4) == 0) bit = 8, p += 4;
                else if (std::memcmp(p, "to\"", 3) == 0) bit = 4, p += 3;
                else return nullptr;
                if (seen & bit) return nullptr;
                seen |= bit;
                p = skip(p, end);
                if (p == end || *p != ':') return nullptr;
                p = skip(p + 1, end);
                if (bit == 1) {
                    if (!(p = digits(p, end, readable_end, f.step))) return nullptr;
                } else {
                    if (p == end || *p != '"') return nullptr;
                    const char* e = name_end(++p, end, readable_end);
                    if (!e) return nullptr;
                    (bit == 2 ? f.from : bit == 4 ? f.to : f.msg) = {p, static_cast<std::size_t>(e - p)};
                    p = e + 1;
                }
                p = skip(p, end);  // a digit after 19 digits, a '.' or an 'e' is neither ',' nor '}'
                if (p == end) return nullptr;
                if (*p == '}') break;
                if (*p != ',') return nullptr;
                ++p;
            }
            return seen == 15 ? p + 1 : nullptr;
        }

        /// `digits` of the grammar at p: the position after them and their value, or nullptr.
        /// What follows is left to the caller (a further digit makes the object not match).
        static const char* digits(const char* p, const char* end, const char* readable_end, std::uint64_t& value) {
            if (p == end || *p < '0' || *p > '9') return nullptr;
            if (*p == '0') {
                value = 0;
                return p + 1;
            }
            if (readable_end - p >= 8) {  // up to 7 digits from one load
                const unsigned n = leading_digits(p, value);
                if (n != 8 && static_cast<std::ptrdiff_t>(n) <= end - p) return p + n;
            }
            std::uint64_t v = 0;
            const char* const last = p + std::min<std::ptrdiff_t>(end - p, 19);
            for (; p < last && *p >= '0' && *p <= '9'; ++p) v = v * 10 + static_cast<unsigned>(*p - '0');
            value = v;
            return p;
        }

        /// The closing quote of the name whose text starts at p, when the name is in the grammar
        /// and the quote lies before `end`; else nullptr. Eight bytes at a time while they are
        /// readable (SWAR: for each test the lowest flagged byte is exact, and a byte flagged
        /// falsely always lies above a truly flagged one, so "a bad byte before the first quote"
        /// is decided exactly), then a byte at a time.
        static const char* name_end(const char* p, const char* end, const char* readable_end) {
            constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
            const auto zero_bytes = [](std::uint64_t x) { return (x - ones) & ~x & highs; };
            for (; readable_end - p >= 8 && p < end; p += 8) {
                std::uint64_t v;
                std::memcpy(&v, p, 8);
                const std::uint64_t quote = zero_bytes(v ^ (ones * '"'));
                const std::uint64_t bad = zero_bytes(v ^ (ones * '\\')) | ((v - ones * 0x20) & ~v & highs) | (v & highs);
                if (quote) {
                    if (bad & ((quote & (~quote + 1)) - 1)) return nullptr;
                    const char* e = p + (std::countr_zero(quote) >> 3);
                    return e < end ? e : nullptr;
                }
                if (bad) return nullptr;
            }
            for (; p < end; ++p) {
                const auto c = static_cast<unsigned char>(*p);
                if (c == '"') return p;
                if (c < 0x20 || c >= 0x80 || c == '\\') return nullptr;
            }
            return nullptr;
        }

        static const char* skip(const char* p, const char* end) {
            while (p < end && is_ws(*p)) ++p;
            return p;
        }

        /// A string value without escapes, in place in the document (no copy into simdjson's
        /// string buffer, which would be one more page fault per 4 KiB). A string with a
        /// backslash, or with a control character (which JSON does not allow unescaped), goes to
        /// the reference reader.
        static std::string_view plain_string(od::value& v) {
            const char* p = od::raw_json_string(v.get_raw_json_string()).raw();
            const char* q = p;
            for (; *q != '"'; ++q)
                if (*q == '\\' || static_cast<unsigned char>(*q) < 0x20) throw Bail{};
            return {p, static_cast<std::size_t>(q - p)};
        }

        FastReader& r_;
        std::vector<Transfer>& out_;
        od::parser parser_;  // reused: its structural index is the size of a piece
        std::unique_ptr<char[]> buffer_;
        std::size_t buffer_size_ = 0;
        NameShortcuts shortcuts_{*r_.table_.topology, *r_.ms_};
    };

    std::string_view name_;
    std::size_t piece_bytes_;
    bool padded_, plain_;
    unsigned threads_;
    std::size_t min_parallel_pieces_;
    /// From this size a second thread reads pieces (automatic choice): about 2^18 transfers, the
    /// checker's threshold for its own second thread.
    static constexpr std::size_t parallel_bytes = std::size_t{16} << 20;
    std::size_t pieces_ = 0, plain_pieces_ = 0, helper_pieces_ = 0;
    SendTable table_;
    TopFields top_;
    std::optional<Resolver> resolver_;
    std::size_t text_size_ = 0;
    std::uint32_t P_ = 0, C_ = 1;
    std::optional<Messages> ms_;
};

}  // namespace

std::optional<SendTable> parse_fast(std::string_view text, bool padded, std::string_view name, bool& ranks,
                                    const FastOptions& options) {
    ranks = false;
    if (options.pieces) *options.pieces = 0;
    if (options.plain_pieces) *options.plain_pieces = 0;
    if (options.helper_pieces) *options.helper_pieces = 0;
    if (text.size() >= simdjson::SIMDJSON_MAXSIZE_BYTES) return std::nullopt;  // simdjson's limit: the reference reader streams
    try {
        try {
            FastReader r(name, padded, options);
            auto t = r.read_pieces(text, ranks);
            if (options.pieces) *options.pieces = r.pieces();
            if (options.plain_pieces) *options.plain_pieces = r.plain_pieces();
            if (options.helper_pieces) *options.helper_pieces = r.helper_pieces();
            return t;
        } catch (const NotPieces&) {
        }
        FastReader r(name, padded, options);
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
