// The algorithm library's catalog (compiler/lower/catalog.hpp).
#include "compiler/lower/catalog.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/core/input_file.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

using ojson = nlohmann::ordered_json;
using Params = std::vector<std::pair<std::string, std::int64_t>>;

[[noreturn]] void bad_catalog(const std::string& path, const std::string& what) {
    throw InputError(fmt::format("{}: {}", path, what));
}

/// `{"n": 8, "a": 1}` as (name, value) pairs in the order written.
Params read_params(const std::string& path, const ojson& obj, std::string_view where) {
    if (!obj.is_object()) bad_catalog(path, fmt::format("{}: expected an object of params, such as {{\"n\": 16}}", where));
    Params p;
    for (const auto& [k, v] : obj.items()) {
        if (!v.is_number_integer()) bad_catalog(path, fmt::format("{}: param \"{}\" must be an integer", where, k));
        p.emplace_back(k, v.get<std::int64_t>());
    }
    return p;
}

std::string string_field(const std::string& path, const ojson& obj, const char* key, std::string_view where, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
        if (required) bad_catalog(path, fmt::format("{}: missing \"{}\"", where, key));
        return {};
    }
    if (!it->is_string()) bad_catalog(path, fmt::format("{}: \"{}\" must be a string", where, key));
    return it->get<std::string>();
}

/// The file's text, read in blocks of 64 KiB under the input policy (open_input_file), the
/// limits polled every 16 MiB; a regular file's size times catalog_memory_per_byte is reserved
/// of the budget first.
std::string read_text(const std::string& path, const RunLimits& limits) {
    InputFile f;
    if (std::string why = open_input_file(path, "catalog", max_catalog_bytes, "", f); !why.empty()) bad_catalog(path, why);
    std::string text;
    if (f.regular()) {
        limits.reserve(mul_sat(f.size(), catalog_memory_per_byte),
                       fmt::format("the catalog {} ({}, read as a tree of JSON values)", path, format_bytes(f.size())));
        text.reserve(f.size());
    }
    std::vector<char> block(std::size_t{1} << 16);
    for (std::uint64_t blocks = 1;; ++blocks) {
        const ssize_t n = ::read(f.fd(), block.data(), block.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) bad_catalog(path, fmt::format("cannot read ({})", std::strerror(errno)));
        if (n == 0) return text;
        text.append(block.data(), static_cast<std::size_t>(n));
        if (text.size() > max_catalog_bytes) bad_catalog(path, input_too_large("catalog", max_catalog_bytes, ""));
        if (blocks % 256 == 0) limits.check("reading the catalog");
    }
}

}  // namespace

Catalog read_catalog(const std::string& path, const RunLimits& limits) {
    // Both limits hold while a file is read that is not a catalog at all (a 1.3 GB JSON file took
    // 41 s and 8.7 GB under --timeout 2 and a 4 GiB budget): the text and its tree must fit in
    // what the budget leaves before anything is read, and the parse polls both limits.
    const std::string text = read_text(path, limits);
    std::uint64_t events = 0;
    const ojson::parser_callback_t poll = [&](int, ojson::parse_event_t, ojson&) {
        if (++events % 4096 == 0) limits.check("reading the catalog");
        return true;
    };
    ojson doc = ojson::parse(text, poll, false);
    if (doc.is_discarded()) bad_catalog(path, "not valid JSON");
    if (!doc.is_object() || doc.value("format", "") != "collsched.catalog/1")
        bad_catalog(path, "expected an object with \"format\": \"collsched.catalog/1\"");
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    Catalog c;
    if (auto it = doc.find("papers"); it != doc.end()) {
        if (!it->is_array()) bad_catalog(path, "\"papers\" must be a list");
        for (const auto& p : *it) {
            std::string where = "a paper";
            c.papers.push_back({string_field(path, p, "id", where, true), string_field(path, p, "title", where, true),
                                string_field(path, p, "file", where, false), string_field(path, p, "model", where, false)});
        }
    }
    auto sched = doc.find("schedules");
    if (sched == doc.end() || !sched->is_array()) bad_catalog(path, "missing \"schedules\", the list of schedule entries");
    for (const auto& e : *sched) {
        if (!e.is_object()) bad_catalog(path, "every entry of \"schedules\" must be an object");
        CatalogEntry entry;
        std::string file = string_field(path, e, "file", "an entry", true);
        std::string where = fmt::format("entry \"{}\"", file);
        entry.file = (dir / file).lexically_normal().string();
        entry.paper = string_field(path, e, "paper", where, true);
        if (std::none_of(c.papers.begin(), c.papers.end(), [&](const CatalogPaper& p) { return p.id == entry.paper; }))
            bad_catalog(path, fmt::format("{}: unknown paper \"{}\"", where, entry.paper));
        entry.title = string_field(path, e, "title", where, false);
        if (auto it = e.find("rows"); it != e.end()) {
            if (!it->is_array()) bad_catalog(path, fmt::format("{}: \"rows\" must be a list of param objects", where));
            for (const auto& r : *it) entry.rows.push_back(read_params(path, r, where));
        }
        if (auto it = e.find("sweep"); it != e.end()) {
            // The cartesian product of the lists, the first param varying slowest.
            if (!it->is_object()) bad_catalog(path, fmt::format("{}: \"sweep\" must map params to lists of values", where));
            std::vector<Params> rows{{}};
            for (const auto& [k, vs] : it->items()) {
                if (!vs.is_array() || vs.empty()) bad_catalog(path, fmt::format("{}: sweep \"{}\" must be a non-empty list", where, k));
                std::vector<Params> next;
                for (const Params& r : rows)
                    for (const auto& v : vs) {
                        if (!v.is_number_integer()) bad_catalog(path, fmt::format("{}: sweep \"{}\" must list integers", where, k));
                        Params x = r;
                        x.emplace_back(k, v.get<std::int64_t>());
                        next.push_back(std::move(x));
                    }
                rows = std::move(next);
            }
            // Every row of the sweep with each case (a set of values that go together).
            std::vector<Params> cases{{}};
            if (auto f = e.find("cases"); f != e.end()) {
                if (!f->is_array() || f->empty()) bad_catalog(path, fmt::format("{}: \"cases\" must be a non-empty list of param objects", where));
                cases.clear();
                for (const auto& k : *f) cases.push_back(read_params(path, k, where));
            }
            for (const Params& r : rows)
                for (const Params& cs : cases) {
                    Params x = r;
                    x.insert(x.end(), cs.begin(), cs.end());
                    entry.rows.push_back(std::move(x));
                }
        }
        if (entry.rows.empty()) bad_catalog(path, fmt::format("{}: no rows (give \"sweep\" or \"rows\")", where));
        if (auto it = e.find("size"); it != e.end()) {
            if (!it->is_array()) bad_catalog(path, fmt::format("{}: \"size\" must list the params whose product is the size", where));
            for (const auto& s : *it) {
                if (!s.is_string() || s.get<std::string>().empty())
                    bad_catalog(path, fmt::format("{}: \"size\" must list param names (or \"k^d\", \"2^d\")", where));
                entry.size.push_back(s.get<std::string>());
            }
        } else {
            entry.size = {"n"};
        }
        if (auto it = e.find("notes"); it != e.end()) {
            if (!it->is_array()) bad_catalog(path, fmt::format("{}: \"notes\" must be a list", where));
            for (const auto& n : *it) {
                CatalogNote note;
                if (auto w = n.find("when"); w != n.end()) note.when = read_params(path, *w, where);
                note.verdict = string_field(path, n, "verdict", where, true);
                note.text = string_field(path, n, "note", where, true);
                entry.notes.push_back(std::move(note));
            }
        }
        if (auto it = e.find("let"); it != e.end()) {
            if (!it->is_array()) bad_catalog(path, fmt::format("{}: \"let\" must be a list of \"name = expr\" strings", where));
            for (const auto& l : *it) {
                if (!l.is_string()) bad_catalog(path, fmt::format("{}: \"let\" must be a list of \"name = expr\" strings", where));
                entry.let.push_back(l.get<std::string>());
            }
        }
        if (auto it = e.find("compare"); it != e.end()) {
            if (!it->is_array()) bad_catalog(path, fmt::format("{}: \"compare\" must be a list of {{\"name\", \"rounds\", \"payload\"}}", where));
            for (const auto& x : *it)
                entry.compare.push_back({string_field(path, x, "name", where, true), string_field(path, x, "rounds", where, true),
                                         string_field(path, x, "payload", where, true)});
        }
        c.entries.push_back(std::move(entry));
    }
    return c;
}

std::uint64_t row_size(const CatalogEntry& entry, const std::vector<std::pair<std::string, std::int64_t>>& params) {
    std::uint64_t size = 1;
    auto value = [&](std::string_view name) -> std::uint64_t {
        std::uint64_t number = 0;
        if (auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), number); ec == std::errc{} && end == name.data() + name.size())
            return std::max<std::uint64_t>(number, 1);
        for (const auto& [k, v] : params)
            if (k == name) return static_cast<std::uint64_t>(std::max<std::int64_t>(v, 1));
        return 1;
    };
    for (const std::string& s : entry.size) {
        // "k^d": the param k to the power of the param d (a k-ary d-cube has k^d processors);
        // either may be a number ("2^d").
        if (auto caret = s.find('^'); caret != std::string::npos) {
            std::uint64_t base = value(std::string_view(s).substr(0, caret)), p = 1;
            for (std::uint64_t e = value(std::string_view(s).substr(caret + 1)); e > 0 && p <= (1ULL << 40); --e) p *= base;
            size *= p;
        } else {
            size *= value(s);
        }
    }
    return size;
}

}  // namespace collsched
