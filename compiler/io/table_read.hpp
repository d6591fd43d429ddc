/** \file
 * What the table readers share (internal to compiler/, defined in table_read.cpp): the resolver
 * that turns one transfer's strings into ids, the builder of kept JSON values (refusing duplicate
 * keys), and the handling of the top-level fields once the document is read. The reference JSON
 * reader (table_json_reference.cpp, nlohmann SAX) defines the accepted language and every error
 * message; the fast reader (table_json_fast.cpp, simdjson On Demand) reads the common shape of a
 * table at disk speed and hands anything else, including every error, back to the reference
 * reader. The CSV reader is table_csv_read.cpp, the writers table_write.cpp, and table_io.cpp
 * opens files and picks the reader.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/io/table_names.hpp"
#include "compiler/table/send_table.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::table_read {

using json = nlohmann::json;

/// Runs `f` (a topology, collective or model parser whose messages start with what they parse)
/// and puts the file's name in front of an InputError it throws; a message that begins with the
/// generic "table: " gets the name instead.
template <class F>
auto naming_file(std::string_view name, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const InputError& e) {
        std::string_view what = e.what();
        if (what.starts_with(name)) throw;
        if (what.starts_with("table: ")) what.remove_prefix(7);
        throw InputError(fmt::format("{}: {}", name, what));
    }
}

/// `s` without leading and trailing blanks (space, tab, carriage return).
std::string_view trim(std::string_view s);

/// Composites read from a file: canonical ids, and bundles only under wormhole timing. Throws
/// InputError naming `name`.
void finish_composites(SendTable& t, std::string_view name);
/// Rounds read from a file: trimmed to the steps, and only under hop timing. Throws InputError
/// naming `name`.
void finish_rounds(SendTable& t, std::string_view name);
/// The chunk count of a "chunks" value (1 to max_chunks); `fail` throws otherwise.
std::uint32_t chunks_value(const json& v, const std::function<void(std::string_view)>& fail);

/// Turns the strings of one transfer into ids; all lookups of a table go through one resolver.
/// It first tries the shortcuts of compiler/io/table_names.hpp (remembered node names and
/// channels, plain message names); what they do not settle, and every error, takes the general
/// path (Topology::find_node and find_channel, Messages::parse, composites), which also words
/// the messages. One resolver per reader: its caches are not shared.
class Resolver {
public:
    Resolver(SendTable& t, std::string_view name);
    /// Appends the transfer `i` of the table (counted from 0, for messages) to `out`, filled in
    /// place (no Transfer passes through the stack); throws InputError naming the file, the
    /// transfer and its step.
    void add(std::vector<Transfer>& out, std::uint64_t i, std::uint64_t step, std::string_view from, std::string_view to,
             std::string_view msg) const;

private:
    Transfer general(std::uint64_t i, std::uint64_t step, std::string_view from, std::string_view to, std::string_view msg) const;

    const SendTable& table_;
    std::string_view name_;
    Composites& reg_;
    Messages messages_;
    mutable NameShortcuts shortcuts_;  ///< caches (mutable: resolving does not change the answers)
};

/// Builds a JSON value from SAX-like events (for fields collsched keeps but does not interpret).
/// A key that appears twice in one object is refused: `on_duplicate(key)` is called (it throws).
class Capture {
public:
    explicit Capture(std::function<void(const std::string&)> on_duplicate) : on_duplicate_(std::move(on_duplicate)) {}
    bool active() const { return active_; }
    void begin();
    void value(json v) { insert(std::move(v), false); }
    void open(json container) { insert(std::move(container), true); }
    void close();
    void key(std::string k) { key_ = std::move(k); }
    json take() { return std::move(root_); }

private:
    void insert(json v, bool container);
    std::function<void(const std::string&)> on_duplicate_;
    bool active_ = false;
    json root_;
    std::vector<json*> stack_;
    std::string key_;
};

/// Parses one JSON value (a piece of a table file the fast reader does not interpret) strictly:
/// false when it is malformed, nests deeper than `max_depth`, or repeats a key in an object.
bool parse_piece(std::string_view text, int max_depth, json& out);

/// The top-level fields of a table file other than "transfers", in key order.
using TopFields = std::map<std::string, json>;

/// The chunk count of a "chunks" value, checked (a positive integer up to max_chunks); calls
/// `fail` (which throws) otherwise.
std::uint32_t chunks_value(const json& v, const std::function<void(std::string_view)>& fail);

/// Sets the table's topology (and default model) from top["topology"] when it is not set yet.
void ensure_topology(SendTable& t, const TopFields& top, std::string_view name);

/// The chunk count when the fields seen so far fix it ("format" /1: 1; /2: "chunks", when
/// present), else nullopt (the transfers must wait). Throws InputError for a bad "chunks" or format.
std::optional<std::uint32_t> known_chunks(const TopFields& top, std::string_view name);
/// "rounds" of a /2 table: a list of positive integers, the rounds of steps 1, 2, ...
std::vector<std::uint32_t> read_rounds(const json& v, const std::function<void(std::string_view)>& fail);

/// Everything after the transfers are read: format, topology, collective, model, requirements,
/// extra fields (in key order), composites, sort. `resolve_pending` resolves transfers read before
/// the topology was known (the reference reader only). Throws InputError naming `name`.
void finish_table(SendTable& t, const TopFields& top, bool seen_transfers, std::string_view name,
                  const std::function<void(const Resolver&)>& resolve_pending);

/// Bytes a buffer must have readable after the text for the fast reader to read it in place
/// (SIMDJSON_PADDING; checked where simdjson is included).
inline constexpr std::size_t json_padding = 64;

/// The size of the pieces the fast reader cuts the transfers array into (compiler/io/table_json_fast.cpp):
/// their structural index stays in L2. Tiny in fuzzing builds, so that the harness's small inputs
/// are cut too.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
inline constexpr std::size_t default_piece_bytes = 96;
#else
inline constexpr std::size_t default_piece_bytes = 256 * 1024;
#endif

struct FastOptions {
    std::size_t piece_bytes = default_piece_bytes;
    std::size_t* pieces = nullptr;  ///< when set: the pieces read (0: the whole-document path, or nullopt)
    /// Pieces in the plain shape are read by a matcher of that shape (compiler/io/table_json_fast.cpp);
    /// false: every piece goes through simdjson (tests and the fuzz harness check both agree).
    bool plain = true;
    std::size_t* plain_pieces = nullptr;  ///< when set: how many pieces the matcher read
    /// Threads reading pieces: 0 automatic (two from 16 MB of text on two or more cores), 1, or
    /// 2 (from two pieces: tests and the fuzz harness).
    unsigned threads = 0;
    std::size_t* helper_pieces = nullptr;  ///< when set: how many pieces the helper thread read
};

/// The fast reader: the table, or nullopt when the reference reader must decide (anything it does
/// not read itself, and every error). `ranks` is set when the file's "format" is a per-rank file.
/// `text` must stay readable for SIMDJSON_PADDING bytes past its end when `padded` is true;
/// otherwise it is copied into a padded buffer (the whole-document path only).
std::optional<SendTable> parse_fast(std::string_view text, bool padded, std::string_view name, bool& ranks,
                                    const FastOptions& options = {});

}  // namespace collsched::table_read
