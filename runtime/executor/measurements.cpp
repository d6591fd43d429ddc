#include "runtime/executor/measurements.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/number.hpp"

namespace collsched::executor {

namespace {

[[noreturn]] void fail(std::string_view file, std::size_t line, std::size_t col, std::string_view what) {
    throw InputError(fmt::format("{}:{}:{}: {}", file, line, col, what));
}

std::string operation_names() {
    std::string out;
    for (const OperationRow& r : operations) {
        if (!out.empty()) out += ", ";
        out += r.name;
    }
    return out;
}

// ---- measurements.csv ------------------------------------------------------------------------

constexpr std::array<std::string_view, 22> csv_columns{
    "id",         "machine",  "gpu",        "boxes",      "gpus_per_box", "intra",     "inter",       "library",
    "version",    "collective", "algorithm", "protocol",  "channels",     "size_bytes", "time_us",    "algbw_gbps",
    "busbw_gbps", "in_place", "source_kind", "source",    "locator",      "notes"};

struct Cell {
    std::string text;
    std::size_t line = 0, col = 0;
};

/// RFC 4180 records: fields separated by commas, records by LF or CRLF, a field in double quotes
/// may hold commas, line breaks and "" (one quote). Each cell keeps the line and column where it
/// starts; a quote that never closes is reported where it opened.
std::vector<std::vector<Cell>> csv_records(std::string_view text, std::string_view file) {
    std::vector<std::vector<Cell>> records;
    std::size_t i = 0, line = 1, line_start = 0;
    const std::size_t n = text.size();
    auto crlf = [&](std::size_t k) { return text[k] == '\r' && k + 1 < n && text[k + 1] == '\n'; };
    while (i < n) {
        std::vector<Cell> record;
        for (;;) {
            Cell cell{{}, line, i - line_start + 1};
            if (i < n && text[i] == '"') {
                ++i;
                for (;;) {
                    if (i >= n) fail(file, cell.line, cell.col, "unterminated quoted cell: the quote opened here never closes");
                    if (text[i] == '"') {
                        if (i + 1 < n && text[i + 1] == '"') {
                            cell.text += '"';
                            i += 2;
                            continue;
                        }
                        ++i;
                        break;
                    }
                    if (text[i] == '\n') {
                        ++line;
                        line_start = i + 1;
                    }
                    cell.text += text[i++];
                }
                if (i < n && text[i] != ',' && text[i] != '\n' && !crlf(i))
                    fail(file, line, i - line_start + 1, "expected ',' or the end of the line after a quoted cell's closing quote");
            } else {
                while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
                    if (text[i] == '"')
                        fail(file, line, i - line_start + 1,
                             "a quote inside an unquoted cell (quote the whole cell and write a quote in it as \"\")");
                    cell.text += text[i++];
                }
                if (i < n && text[i] == '\r' && !crlf(i)) fail(file, line, i - line_start + 1, "a carriage return not followed by a line feed");
            }
            record.push_back(std::move(cell));
            if (i < n && text[i] == ',') {
                ++i;
                continue;
            }
            if (i < n && text[i] == '\r') ++i;
            if (i < n && text[i] == '\n') {
                ++i;
                ++line;
                line_start = i;
            }
            break;
        }
        records.push_back(std::move(record));
    }
    return records;
}

/// The typed readers of one row's cells; each error names the cell by line:col and the column.
class RowReader {
public:
    RowReader(const std::vector<Cell>& cells, std::string_view file) : cells_(cells), file_(file) {}

    const Cell& cell(std::size_t c) const { return cells_[c]; }
    [[noreturn]] void bad(std::size_t c, std::string_view expected) const {
        const Cell& x = cells_[c];
        fail(file_, x.line, x.col, fmt::format("{}: expected {}, found '{}'", csv_columns[c], expected, x.text));
    }
    const std::string& text(std::size_t c) const {
        if (cells_[c].text.empty()) bad(c, "a value (write 'unknown' when the source does not say)");
        return cells_[c].text;
    }
    std::optional<std::uint32_t> count(std::size_t c, bool may_be_empty) const {
        if (cells_[c].text.empty() && may_be_empty) return std::nullopt;
        auto v = support::parse_decimal<std::uint32_t>(cells_[c].text);
        if (!v || *v == 0) bad(c, "a whole number of at least 1");
        return v;
    }
    std::optional<double> real(std::size_t c, bool may_be_empty, bool zero_ok) const {
        if (cells_[c].text.empty() && may_be_empty) return std::nullopt;
        auto v = support::parse_real(cells_[c].text);
        if (!v || (!zero_ok && *v == 0)) bad(c, zero_ok ? "a decimal number >= 0" : "a decimal number > 0");
        return v;
    }

private:
    const std::vector<Cell>& cells_;
    std::string_view file_;
};

enum Column : std::size_t {
    c_id, c_machine, c_gpu, c_boxes, c_gpus_per_box, c_intra, c_inter, c_library, c_version, c_collective, c_algorithm,
    c_protocol, c_channels, c_size, c_time, c_algbw, c_busbw, c_in_place, c_source_kind, c_source, c_locator, c_notes
};

Measurement read_row(const RowReader& r) {
    Measurement m;
    m.id = *r.count(c_id, false);
    m.machine = r.text(c_machine);
    m.gpu = r.text(c_gpu);
    m.boxes = *r.count(c_boxes, false);
    m.gpus_per_box = r.count(c_gpus_per_box, true);
    m.intra = r.text(c_intra);
    m.inter = r.text(c_inter);
    m.library = r.text(c_library);
    m.version = r.text(c_version);
    auto op = find_operation(r.cell(c_collective).text);
    if (!op) r.bad(c_collective, fmt::format("one of {}", operation_names()));
    m.operation = *op;
    m.algorithm = r.text(c_algorithm);
    m.protocol = r.text(c_protocol);
    m.channels = r.count(c_channels, true);
    m.size_bytes = *r.real(c_size, false, false);
    m.time_us = r.real(c_time, true, false);
    m.algbw_gbps = r.real(c_algbw, true, true);
    m.busbw_gbps = r.real(c_busbw, true, true);
    const std::string& place = r.cell(c_in_place).text;
    if (place == "out") m.placement = Placement::out_of_place;
    else if (place == "in") m.placement = Placement::in_place;
    else if (!place.empty()) r.bad(c_in_place, "'out', 'in' or nothing");
    m.source_kind = r.text(c_source_kind);
    if (m.source_kind != "file" && m.source_kind != "doc" && m.source_kind != "issue" && m.source_kind != "pr")
        r.bad(c_source_kind, "file, doc, issue or pr");
    m.source = r.text(c_source);
    m.locator = r.text(c_locator);
    m.notes = r.cell(c_notes).text;
    // A time must follow from the row: time_us, or a bandwidth above zero (0.00 is what
    // nccl-tests prints for tiny sizes) whose factor is known.
    if (!m.time_us) {
        if (m.algbw_gbps && *m.algbw_gbps > 0) return m;
        if (m.busbw_gbps && *m.busbw_gbps > 0 && m.ranks()) return m;
        if (!m.algbw_gbps && !m.busbw_gbps) r.bad(c_time, "a time, since algbw_gbps and busbw_gbps are empty too");
        r.bad(c_time, m.busbw_gbps && *m.busbw_gbps > 0
                          ? "a time or algbw_gbps: busbw alone gives no time when gpus_per_box is empty"
                          : "a time: the bandwidths are 0 and give none");
    }
    return m;
}

}  // namespace

std::optional<Operation> find_operation(std::string_view name) {
    if (const CollectiveRow* row = find_collective_row(name)) {
        for (const OperationRow& r : operations)
            if (r.kind == row->kind) return r.operation;
        return std::nullopt;
    }
    for (const OperationRow& r : operations)
        if (!r.kind && r.name == name) return r.operation;
    return std::nullopt;
}

double bus_factor(Operation op, std::uint32_t ranks) {
    const double n = ranks;
    switch (operation_row(op).factor) {
        case BusFactor::two_n_minus_1_over_n: return 2 * (n - 1) / n;
        case BusFactor::n_minus_1_over_n: return (n - 1) / n;
        case BusFactor::one: return 1;
    }
    return 1;
}

std::optional<std::uint32_t> Measurement::ranks() const {
    if (!gpus_per_box) return std::nullopt;
    return boxes * *gpus_per_box;
}

std::vector<Measurement> read_measurements_csv(std::string_view text, std::string_view file) {
    std::vector<std::vector<Cell>> records = csv_records(text, file);
    if (records.empty()) fail(file, 1, 1, fmt::format("expected the header line '{}'", fmt::join(csv_columns, ",")));
    const std::vector<Cell>& header = records.front();
    for (std::size_t c = 0; c < csv_columns.size(); ++c) {
        if (c >= header.size()) {
            const Cell& last = header.back();
            fail(file, last.line, last.col + last.text.size(), fmt::format("missing column '{}' (the header is '{}')", csv_columns[c],
                                                                            fmt::join(csv_columns, ",")));
        }
        if (header[c].text != csv_columns[c])
            fail(file, header[c].line, header[c].col, fmt::format("expected column '{}', found '{}' (the header is '{}')", csv_columns[c],
                                                                  header[c].text, fmt::join(csv_columns, ",")));
    }
    if (header.size() > csv_columns.size())
        fail(file, header[csv_columns.size()].line, header[csv_columns.size()].col,
             fmt::format("an extra column '{}' after notes", header[csv_columns.size()].text));

    std::vector<Measurement> out;
    std::map<std::uint32_t, std::size_t> first_line;  // id -> line it was first given on
    for (std::size_t k = 1; k < records.size(); ++k) {
        const std::vector<Cell>& cells = records[k];
        if (cells.size() < csv_columns.size()) {
            const Cell& last = cells.back();
            fail(file, last.line, last.col + last.text.size(),
                 fmt::format("expected {} cells, found {} (the row ends before '{}')", csv_columns.size(), cells.size(),
                             csv_columns[cells.size()]));
        }
        if (cells.size() > csv_columns.size())
            fail(file, cells[csv_columns.size()].line, cells[csv_columns.size()].col,
                 fmt::format("a cell after notes: the header has {} columns", csv_columns.size()));
        Measurement m = read_row(RowReader(cells, file));
        auto [it, fresh] = first_line.emplace(m.id, cells[c_id].line);
        if (!fresh) fail(file, cells[c_id].line, cells[c_id].col, fmt::format("id {} again (first on line {})", m.id, it->second));
        out.push_back(std::move(m));
    }
    return out;
}

double time_seconds(const Measurement& m) {
    if (m.time_us) return *m.time_us * 1e-6;
    if (m.algbw_gbps && *m.algbw_gbps > 0) return m.size_bytes / (*m.algbw_gbps * 1e9);
    if (m.busbw_gbps && *m.busbw_gbps > 0 && m.ranks()) return m.size_bytes * bus_factor(m.operation, *m.ranks()) / (*m.busbw_gbps * 1e9);
    throw InputError(fmt::format("measurement {}: no time follows (time_us empty, and no bandwidth above 0 with a known rank count)", m.id));
}

// ---- nccl-tests output -----------------------------------------------------------------------

namespace {

struct Token {
    std::string_view text;
    std::size_t col = 0;
};

std::vector<Token> tokens_of(std::string_view line) {
    std::vector<Token> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        std::size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
        if (i > start) out.push_back({line.substr(start, i - start), start + 1});
    }
    return out;
}

/// The columns of nccl-tests' table as its header line names them (src/common.cu before 2.13,
/// src/util.cu since): size count type [redop] [root], then for out-of-place and in-place
/// time (or cputime) algbw busbw #wrong (older: error), each optionally followed by the
/// per-iteration i_min i_max i_p99 i_cv%, and an optional trailing timestamp.
enum class Field : std::uint8_t { size, count, type, redop, root, time, algbw, busbw, wrong, skip };

struct Layout {
    std::vector<Field> fields;
    std::vector<std::string_view> names;
    bool timestamp = false;  // a trailing timestamp column: the cells after the last field are its
};

std::optional<Layout> layout_of(const std::vector<Token>& t, std::string_view file, std::size_t line) {
    // "#  size  count  type ...": the header line; "# (B) (elements)" and the out-of-place line are not it
    if (t.size() < 2 || t[0].text != "#" || t[1].text != "size") return std::nullopt;
    Layout l;
    int times = 0;
    for (std::size_t k = 1; k < t.size(); ++k) {
        std::string_view n = t[k].text;
        Field f;
        if (n == "size") f = Field::size;
        else if (n == "count") f = Field::count;
        else if (n == "type") f = Field::type;
        else if (n == "redop") f = Field::redop;
        else if (n == "root") f = Field::root;
        else if (n == "time" || n == "cputime") f = Field::time, ++times;
        else if (n == "algbw") f = Field::algbw;
        else if (n == "busbw") f = Field::busbw;
        else if (n == "#wrong" || n == "error") f = Field::wrong;
        else if (n == "i_min" || n == "i_max" || n == "i_p99" || n == "i_cv%") f = Field::skip;
        else if (n == "timestamp" && k + 1 == t.size()) {
            l.timestamp = true;
            break;
        } else
            fail(file, line, t[k].col,
                 fmt::format("unknown nccl-tests column '{}' (expected size, count, type, redop, root, time, algbw, busbw, #wrong, "
                             "error, i_min, i_max, i_p99, i_cv% or timestamp)",
                             n));
        // a half's cells follow its time; the row's own cells come before both halves
        const bool halves = f == Field::time || f == Field::algbw || f == Field::busbw || f == Field::wrong || f == Field::skip;
        if (halves != (times > 0))
            fail(file, line, t[k].col, fmt::format("column '{}' {} the first 'time'", n, halves ? "before" : "after"));
        l.fields.push_back(f);
        l.names.push_back(n);
    }
    if (times != 2 || l.fields.size() < 3 || l.fields[0] != Field::size || l.fields[1] != Field::count || l.fields[2] != Field::type)
        fail(file, line, t[1].col, "expected nccl-tests' header 'size count type [redop] [root]' and two halves of 'time algbw busbw #wrong'");
    return l;
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

NcclTestsRow read_table_row(const std::vector<Token>& t, const Layout& l, std::string_view line_text, std::string_view file,
                            std::size_t line) {
    if (t.size() < l.fields.size()) {
        const std::size_t end = line_text.find_last_not_of(" \t") + 2;
        fail(file, line, end,
             fmt::format("the row ends after {} cells, expected {} ('{}' next): a truncated row", t.size(), l.fields.size(),
                         l.names[t.size()]));
    }
    if (t.size() > l.fields.size() && !l.timestamp)
        fail(file, line, t[l.fields.size()].col, fmt::format("an extra cell: the header names {} columns", l.fields.size()));
    NcclTestsRow row;
    NcclTestsHalf* h = nullptr;  // out-of-place from the first `time` on, in-place from the second
    for (std::size_t k = 0; k < l.fields.size(); ++k) {
        const Token& c = t[k];
        auto bad = [&](std::string_view expected) -> void {
            fail(file, line, c.col, fmt::format("{}: expected {}, found '{}'", l.names[k], expected, c.text));
        };
        auto real = [&]() {
            auto v = support::parse_real(c.text);
            if (!v) bad("a decimal number");
            return *v;
        };
        switch (l.fields[k]) {
            case Field::size: {
                auto v = support::parse_decimal(c.text);
                if (!v) bad("a size in bytes");
                row.size_bytes = *v;
                break;
            }
            case Field::count: {
                auto v = support::parse_decimal(c.text);
                if (!v) bad("an element count");
                row.count = *v;
                break;
            }
            case Field::type: row.type = c.text; break;
            case Field::redop: row.redop = c.text; break;
            case Field::root: {
                std::string_view s = c.text;
                const bool negative = !s.empty() && s.front() == '-';
                auto v = support::parse_decimal<std::uint32_t>(negative ? s.substr(1) : s);
                if (!v || (negative && *v != 1)) bad("a root rank, or -1");
                row.root = negative ? -1 : static_cast<std::int64_t>(*v);
                break;
            }
            case Field::time:
                h = h == nullptr ? &row.out_of_place : &row.in_place;
                h->time_us = real();
                break;
            case Field::algbw: h->algbw_gbps = real(); break;
            case Field::busbw: h->busbw_gbps = real(); break;
            case Field::wrong:
                if (c.text != "N/A") h->wrong = real();
                break;
            case Field::skip: break;
        }
    }
    return row;
}

/// The operation whose program `token` names ("all_reduce_perf", "./build/all_reduce_perf_mpi").
std::optional<Operation> program_operation(std::string_view token) {
    if (auto slash = token.rfind('/'); slash != std::string_view::npos) token.remove_prefix(slash + 1);
    if (token.ends_with("_mpi")) token.remove_suffix(4);
    for (const OperationRow& r : operations)
        if (r.program == token) return r.operation;
    return std::nullopt;
}

/// NCCL's version code as nccl-tests prints it (nccl-library=22105): 2.9 and later
/// major*10000 + minor*100 + patch, before that major*1000 + minor*100 + patch.
std::string version_of_code(std::uint64_t code) {
    if (code >= 20900) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
    return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

struct Mention {
    Operation operation;
    std::size_t line, col;
};

/// One pass over nccl-tests output: the lines give the table, the devices, the versions and the
/// programs named; finish() decides the operation, the ranks and the nodes, with the caller's hints.
class NcclTestsReader {
public:
    explicit NcclTestsReader(std::string_view file) : file_(file) { run_.file = file; }

    void line(std::string_view line, std::size_t line_no) {
        if (line.ends_with('\r')) line.remove_suffix(1);
        const std::vector<Token> t = tokens_of(line);
        if (t.empty()) return;
        if (t[0].text.starts_with('#')) {
            if (comment(t, line, line_no)) return;
        } else if (layout_ && !table_done_ && all_digits(t[0].text)) {
            run_.rows.push_back(read_table_row(t, *layout_, line, file_, line_no));
            return;
        }
        note(t, line_no);
    }

    NcclTestsRun finish(const NcclTestsHints& hints) && {
        if (run_.nccl_version.empty()) run_.nccl_version = info_version_;
        if (run_.rows.empty())
            throw InputError(fmt::format("{}: no nccl-tests table rows (expected the table under a '#  size  count  type ...' header)", file_));
        run_.operation = operation(hints);
        ranks_and_nodes(hints);
        return std::move(run_);
    }

private:
    /// The lines nccl-tests writes with a '#': true when the line was one of them.
    bool comment(const std::vector<Token>& t, std::string_view line, std::size_t line_no) {
        if (t.size() >= 4 && t[1].text == "Collective" && t[2].text == "test" && t[3].text == "starting:") {
            if (t.size() < 5) fail(file_, line_no, line.size() + 1, "expected the program's name after 'Collective test starting:'");
            auto op = program_operation(t[4].text);
            if (!op) fail(file_, line_no, t[4].col, fmt::format("'{}' is not an nccl-tests program this reader knows", t[4].text));
            if (started_ && started_->operation != *op)
                fail(file_, line_no, t[4].col,
                     fmt::format("a second run ({}; the first started on line {}): one run per text", t[4].text, started_->line));
            started_ = Mention{*op, line_no, t[4].col};
            return true;
        }
        if (t.size() >= 2 && t[1].text == "Rank") {
            device_line(t, line, line_no);
            return true;
        }
        if (t.size() >= 3 && t[1].text == "nccl-tests" && t[2].text == "version") {
            for (const Token& k : t)
                if (k.text.starts_with("nccl-library=")) {
                    auto code = support::parse_decimal(k.text.substr(13));
                    if (!code) fail(file_, line_no, k.col + 13, fmt::format("expected NCCL's version code, found '{}'", k.text.substr(13)));
                    run_.nccl_version = version_of_code(*code);
                }
            return true;
        }
        if (t.size() >= 6 && t[1].text == "Avg" && t[2].text == "bus" && t[3].text == "bandwidth" && t[4].text == ":") {
            auto v = support::parse_real(t[5].text);
            if (!v) fail(file_, line_no, t[5].col, fmt::format("expected the average bus bandwidth, found '{}'", t[5].text));
            run_.avg_busbw_gbps = v;
            table_done_ = true;
            return true;
        }
        if (auto l = layout_of(t, file_, line_no)) {
            if (layout_) fail(file_, line_no, t[0].col, "a second table header: one run per text");
            layout_ = std::move(l);
            return true;
        }
        return false;
    }

    /// "#  Rank  0 Group  0 Pid 6899 on host device  0 [0000:04:00] NVIDIA H100 80GB HBM3" (older: no Group)
    void device_line(const std::vector<Token>& t, std::string_view line, std::size_t line_no) {
        auto at = [&](std::string_view word) -> std::size_t {
            for (std::size_t k = 2; k + 1 < t.size(); ++k)
                if (t[k].text == word) return k;
            fail(file_, line_no, line.size() + 1,
                 fmt::format("a device line without '{}' (expected '#  Rank N Group G Pid P on HOST device D [BUS] NAME')", word));
        };
        if (t.size() < 3) fail(file_, line_no, line.size() + 1, "expected a rank number after 'Rank'");
        auto rank = support::parse_decimal<std::uint32_t>(t[2].text);
        if (!rank) fail(file_, line_no, t[2].col, fmt::format("expected a rank number, found '{}'", t[2].text));
        const std::size_t on = at("on"), device = at("device");
        std::size_t name = device + 2;
        while (name < t.size() && !t[name - 1].text.ends_with(']')) ++name;
        std::string_view gpu = name < t.size() ? line.substr(t[name].col - 1) : std::string_view{};
        while (!gpu.empty() && (gpu.back() == ' ' || gpu.back() == '\t')) gpu.remove_suffix(1);
        if (!devices_.emplace(*rank, std::pair{std::string(t[on + 1].text), std::string(gpu)}).second)
            fail(file_, line_no, t[2].col, fmt::format("rank {} listed twice", *rank));
        if (devices_line_ == 0) devices_line_ = line_no;
    }

    /// Any other line (NCCL INFO, mpirun, a command line): "NCCL version 2.21.5+cuda12.3" and the
    /// programs it names are noted; the rest is skipped.
    void note(const std::vector<Token>& t, std::size_t line_no) {
        for (std::size_t k = 0; k < t.size(); ++k) {
            if (k + 2 < t.size() && t[k].text == "NCCL" && t[k + 1].text == "version" && info_version_.empty() &&
                all_digits(t[k + 2].text.substr(0, 1)))
                info_version_ = t[k + 2].text.substr(0, t[k + 2].text.find('+'));
            if (auto op = program_operation(t[k].text);
                op && std::none_of(mentioned_.begin(), mentioned_.end(), [&](const Mention& m) { return m.operation == *op; }))
                mentioned_.push_back(Mention{*op, line_no, t[k].col});
        }
    }

    /// The text's own word, else the caller's. A text that names two programs holds two runs, or
    /// says one thing and runs another.
    Operation operation(const NcclTestsHints& hints) const {
        std::optional<Mention> said = started_ ? started_ : (mentioned_.empty() ? std::nullopt : std::optional(mentioned_.front()));
        for (const Mention& m : mentioned_)
            if (m.operation != said->operation)
                fail(file_, m.line, m.col,
                     fmt::format("names {}, but the run {} line {} is {}", operation_row(m.operation).program,
                                 started_ ? "starting on" : "named on", said->line, operation_row(said->operation).program));
        if (said && hints.operation && *hints.operation != said->operation)
            fail(file_, said->line, said->col,
                 fmt::format("the text runs {}, but it was given as {}", operation_row(said->operation).program,
                             operation_row(*hints.operation).name));
        if (said) return said->operation;
        if (hints.operation) return *hints.operation;
        throw InputError(fmt::format("{}: which collective? the text names no nccl-tests program (no '# Collective test starting: "
                                     "all_reduce_perf' line, no command line with all_reduce_perf, all_gather_perf, ...); give the "
                                     "collective with the file (one of {})",
                                     file_, operation_names()));
    }

    /// A whole "Using devices" list says the ranks and nodes; a partial one (a quoted tail) or
    /// none needs the caller's counts, which must fit what the list shows.
    void ranks_and_nodes(const NcclTestsHints& hints) {
        std::set<std::string> hosts;
        for (const auto& [rank, d] : devices_) hosts.insert(d.first);
        if (!devices_.empty()) run_.gpu = devices_.begin()->second.second;
        if (!devices_.empty() && devices_.rbegin()->first + 1 == devices_.size()) {
            run_.ranks = static_cast<std::uint32_t>(devices_.size());
            run_.nodes = static_cast<std::uint32_t>(hosts.size());
            if (hints.ranks && *hints.ranks != run_.ranks)
                fail(file_, devices_line_, 1, fmt::format("the device list shows {} ranks, but {} were given", run_.ranks, *hints.ranks));
            if (hints.nodes && *hints.nodes != run_.nodes)
                fail(file_, devices_line_, 1, fmt::format("the device list shows {} nodes, but {} were given", run_.nodes, *hints.nodes));
            return;
        }
        if (!hints.ranks || !hints.nodes) {
            if (devices_.empty())
                throw InputError(fmt::format("{}: no 'Using devices' list: give the rank and node counts with the file", file_));
            fail(file_, devices_line_, 1,
                 fmt::format("the device list is partial ({} of ranks 0..{}): give the rank and node counts with the file",
                             devices_.size(), devices_.rbegin()->first));
        }
        if (!devices_.empty() && (*hints.ranks <= devices_.rbegin()->first || *hints.nodes < hosts.size()))
            fail(file_, devices_line_, 1,
                 fmt::format("the device list shows rank {} on {} hosts, more than the {} ranks on {} nodes given",
                             devices_.rbegin()->first, hosts.size(), *hints.ranks, *hints.nodes));
        run_.ranks = *hints.ranks;
        run_.nodes = *hints.nodes;
    }

    std::string_view file_;
    NcclTestsRun run_;
    std::optional<Layout> layout_;
    bool table_done_ = false;        // after the "# Avg bus bandwidth" trailer, digits start no row
    std::optional<Mention> started_;  // "# Collective test starting:"
    std::vector<Mention> mentioned_;  // any other naming of a program: the first of each
    std::map<std::uint32_t, std::pair<std::string, std::string>> devices_;  // rank -> host, device name
    std::size_t devices_line_ = 0;
    std::string info_version_;
};

}  // namespace

NcclTestsRun read_nccl_tests(std::string_view text, std::string_view file, const NcclTestsHints& hints) {
    if ((hints.ranks && *hints.ranks == 0) || (hints.nodes && *hints.nodes == 0) ||
        (hints.ranks && hints.nodes && *hints.nodes > *hints.ranks))
        throw InputError(fmt::format("{}: {} ranks on {} nodes given: expected at least 1 of each and no more nodes than ranks", file,
                                     hints.ranks.value_or(0), hints.nodes.value_or(0)));
    NcclTestsReader reader(file);
    std::size_t line_no = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        reader.line(text.substr(pos, end - pos), ++line_no);
        pos = end + 1;
    }
    return std::move(reader).finish(hints);
}

}  // namespace collsched::executor
