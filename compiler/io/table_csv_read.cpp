#include <algorithm>
#include <charconv>
#include <functional>
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
using table_read::Resolver;
using table_read::trim;

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

namespace {

/// The CSV reader, one method per part of the file, called line by line by read(): `# key=value`
/// header lines, the header row (where the header's values are checked), transfer rows, and the
/// checks after the last line.
class CsvReader {
public:
    CsvReader(std::string_view text, std::string_view name) : text_(text), name_(name) {}

    SendTable read() {
        while (!text_.empty()) {
            std::size_t nl = text_.find('\n');
            std::string_view line = trim(text_.substr(0, nl));
            text_ = nl == std::string_view::npos ? std::string_view{} : text_.substr(nl + 1);
            ++line_no_;
            if (line.empty()) continue;
            if (line[0] == '#') header_line(line);
            else if (!header_) header_row(line);
            else row(line);
        }
        return finish();
    }

private:
    [[noreturn]] void fail(std::string_view what) const { throw InputError(fmt::format("{}:{}: {}", name_, line_no_, what)); }
    /// The line of a '# key=' header (the header row when it has none): the values are checked
    /// at the header row, and their errors point where the value was written.
    std::size_t line_of(std::string_view key) const {
        auto it = seen_.find(key);
        return it == seen_.end() ? line_no_ : it->second;
    }
    auto fail_at(std::string_view key) const {
        return [name = name_, at = line_of(key)](std::string_view what) { throw InputError(fmt::format("{}:{}: {}", name, at, what)); };
    }
    /// A topology, collective or model error, at its line.
    template <class F>
    auto here_at(std::string_view key, F&& f) const {
        try {
            return f();
        } catch (const InputError& e) {
            fail_at(key)(e.what());
            throw;
        }
    }
    template <class F>
    auto here(F&& f) const {
        return here_at("", f);
    }

    void header_line(std::string_view line) {
        std::string_view kv = trim(line.substr(1));
        std::size_t eq = kv.find('=');
        if (eq == std::string_view::npos) return;  // a comment
        std::string_view k = trim(kv.substr(0, eq)), v = trim(kv.substr(eq + 1));
        bool known = k == "format" || k == "topology" || k == "model" || k == "collective" || k == "requirements" || k == "fields" ||
                     k.starts_with("extra[") || k == "chunks" || k == "rounds";  // the last two: /2 only (else comments)
        if (!known) return;  // a comment that happens to contain '='
        // The transfers above were resolved against the topology, model and collective already
        // read; changing them now would leave channel ids of another topology in the table.
        if (header_) fail(fmt::format("'# {}=' after the header row: the '# key=value' lines come before 'step,from,to,message'", k));
        if (auto [it, fresh] = seen_.emplace(std::string(k), line_no_); !fresh)
            fail(fmt::format("a second '# {}=' line (the first is line {})", k, it->second));
        if (k == "format" && v != table_format && v != table_format_2)
            fail(fmt::format("unknown format version '{}': this collsched reads {} and {}", v, table_format, table_format_2));
        if (k == "format") v2_ = v == table_format_2;
        if (k == "chunks") chunks_text_ = v;
        if (k == "rounds") rounds_text_ = v;
        if (k == "topology") t_.topology = here([&] { return Topology::parse(spec_read_from(v, name_)); });
        if (k == "model") model_text_ = v;
        if (k == "collective") collective_ = v;
        if (k == "requirements") requirements_ = std::string(v);
        if (k == "fields") {
            json j;
            if (!table_read::parse_piece(v, max_json_depth - 1, j) || !j.is_object())
                fail("'# fields=' must be one JSON object (the table's extra top-level fields) without repeated keys");
            for (auto& [fk, fv] : j.items()) {
                if (fk == "format" || fk == "topology" || fk == "collective" || fk == "model" || fk == "requirements" || fk == "steps" ||
                    fk == "transfers")
                    fail(fmt::format("'# fields=' may not hold \"{}\" (it has its own line)", fk));
                t_.add_field(fk, fv.dump());
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
            extras_.emplace_back(i, std::string(trim(v.substr(1, v.size() - 2))));
        }
    }

    void header_row(std::string_view line) {
        if (line != "step,from,to,message") fail(fmt::format("expected the header row 'step,from,to,message', got '{}'", line));
        if (!t_.topology) fail("missing '# topology=SPEC' line before the header row");
        t_.model = here_at("model", [&] { return apply_model_options(t_.topology->default_model(), model_text_); });
        t_.collective = here_at("collective", [&] { return Collective::parse(collective_, *t_.topology); });
        if (chunks_text_ && v2_) {
            json j;
            if (!table_read::parse_piece(*chunks_text_, 1, j))
                fail_at("chunks")(fmt::format("'# chunks={}': expected a positive integer", *chunks_text_));
            std::uint32_t c = table_read::chunks_value(j, fail_at("chunks"));
            here_at("chunks", [&] { return t_.collective.set_chunks(c, *t_.topology), 0; });
        }
        if (rounds_text_ && v2_) {
            json j;
            if (!table_read::parse_piece("[" + std::string(*rounds_text_) + "]", 2, j))
                fail_at("rounds")(fmt::format("'# rounds={}': expected the rounds of steps 1, 2, ... separated by commas", *rounds_text_));
            t_.step_rounds = table_read::read_rounds(j, fail_at("rounds"));
        }
        if (requirements_) read_csv_requirements(t_, *requirements_, fail_at("requirements"));
        resolver_.emplace(t_, name_);
        // A row takes at least 11 bytes ("1,0,1,b(0)" and its newline): room for all of them
        // without copying as the vector grows (pages never filled are never touched).
        t_.transfers.reserve(text_.size() / 11 + 16);
        header_ = true;
    }

    void row(std::string_view line) {
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
            resolver_->add(t_.transfers, count_++, step, f[1], f[2], f[3]);
        } catch (const InputError& e) {
            fail(std::string(e.what()).substr(name_.size() + 2));
        }
    }

    SendTable finish() {
        if (!header_) throw InputError(fmt::format("{}: not a table: no 'step,from,to,message' header row", name_));
        std::sort(extras_.begin(), extras_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& [i, extra] : extras_)
            if (i >= t_.transfers.size())
                throw InputError(fmt::format("{}: '# extra[{}]=' names a transfer the table does not have ({} transfers)", name_, i, t_.transfers.size()));
        t_.transfer_extras = std::move(extras_);
        table_read::finish_composites(t_, name_);
        t_.sort();
        table_read::finish_rounds(t_, name_);
        return std::move(t_);
    }

    std::string_view text_;  ///< what is left to read
    const std::string_view name_;
    SendTable t_;
    std::string model_text_, collective_ = "custom";
    bool v2_ = false;
    std::optional<std::string_view> chunks_text_, rounds_text_;
    std::optional<std::string> requirements_;
    std::size_t line_no_ = 0;
    bool header_ = false;
    std::optional<Resolver> resolver_;
    std::uint64_t count_ = 0;
    std::map<std::string, std::size_t, std::less<>> seen_;  ///< header key -> line
    std::vector<std::pair<std::uint64_t, std::string>> extras_;
};

}  // namespace

/// CSV: optional `# key=value` header lines (format, topology, model, collective, requirements,
/// fields, extra[i]), then a `step,from,to,message` header row and one row per transfer.
SendTable parse_table_csv(std::string_view text, std::string_view name) { return CsvReader(text, name).read(); }

}  // namespace collsched
