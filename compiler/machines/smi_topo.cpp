// `nvidia-smi topo -m` into a box: the matrix of GPUs and NICs (X, NV#, PIX, PXB, PHB, NODE, SYS)
// into the facts that assemble() turns into a Box by NCCL's rules.
#include <cctype>
#include <charconv>
#include <sstream>

#include <fmt/format.h>

#include "compiler/machines/topo_facts.hpp"
#include "support/error.hpp"

namespace collsched::machines {

namespace {

struct Token {
    std::string text;
    int col;
};

std::vector<Token> tokens(const std::string& line) {
    std::vector<Token> out;
    for (std::size_t i = 0; i < line.size();) {
        if (std::isspace(static_cast<unsigned char>(line[i]))) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
        out.push_back({line.substr(i, j - i), static_cast<int>(i) + 1});
        i = j;
    }
    return out;
}

bool numbered(std::string_view t, std::string_view prefix) {
    if (!t.starts_with(prefix) || t.size() == prefix.size()) return false;
    for (char c : t.substr(prefix.size()))
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
}
bool is_gpu(std::string_view t) { return numbered(t, "GPU"); }
bool is_nic(std::string_view t) { return numbered(t, "NIC") || numbered(t, "mlx5_"); }

/// PCIe distance of a cell (PIX closest, SYS farthest); -1 for X and NV#.
int relation(std::string_view c) {
    constexpr std::pair<std::string_view, int> rows[] = {{"PIX", 1}, {"PXB", 2}, {"PSB", 2}, {"PHB", 3}, {"NODE", 4}, {"SOC", 5}, {"SYS", 5}};
    for (const auto& [name, d] : rows)
        if (c == name) return d;
    return -1;
}

/// One row of the matrix: its device, the line it is on, and its cells (one per header column).
struct SmiRow {
    Token label;
    int line = 0;
    std::vector<Token> cells;
};

/// The header row: GPU columns, then NIC columns (as nvidia-smi prints them); the rest (CPU
/// Affinity, NUMA Affinity, GPU NUMA ID) is not read.
std::vector<Token> smi_header(const std::vector<Token>& t, std::string_view file, int no) {
    std::vector<Token> columns;
    for (const Token& x : t) {
        if (!is_gpu(x.text) && !is_nic(x.text)) break;
        if (is_gpu(x.text) && !columns.empty() && is_nic(columns.back().text))
            throw InputError(fmt::format("{}:{}:{}: column {} after a NIC's: nvidia-smi prints the GPUs' columns first", file, no, x.col, x.text));
        for (const Token& y : columns)
            if (y.text == x.text) throw InputError(fmt::format("{}:{}:{}: column {} given twice", file, no, x.col, x.text));
        columns.push_back(x);
    }
    return columns;
}

/// A row's cells, checked: a connection nvidia-smi prints, and `X` (self) exactly where the row's
/// device meets its own column (nvidia-smi's matrix is square, its diagonal X).
SmiRow read_row(const std::vector<Token>& t, const std::string& line, const std::vector<Token>& columns, std::string_view file, int no) {
    if (t.size() < columns.size() + 1)
        throw InputError(fmt::format("{}:{}:{}: row {} has {} cells, the header {} columns", file, no, line.size() + 1, t[0].text, t.size() - 1,
                                     columns.size()));
    SmiRow row{t[0], no, {}};
    for (std::size_t c = 0; c < columns.size(); ++c) {
        const Token& x = t[c + 1];
        if (x.text != "X" && !numbered(x.text, "NV") && relation(x.text) < 0)
            throw InputError(fmt::format("{}:{}:{}: '{}' is no connection nvidia-smi prints (X, NV#, PIX, PXB, PHB, NODE, SYS)", file, no, x.col, x.text));
        const bool self = columns[c].text == row.label.text;
        if (x.text == "X" && !self)
            throw InputError(fmt::format("{}:{}:{}: 'X' (self) between {} and {}: nvidia-smi prints X only where a device meets itself", file, no, x.col,
                                         row.label.text, columns[c].text));
        if (x.text != "X" && self)
            throw InputError(fmt::format("{}:{}:{}: '{}' where {} meets itself: nvidia-smi prints X there", file, no, x.col, x.text, row.label.text));
        row.cells.push_back(x);
    }
    return row;
}

}  // namespace

/// The matrix is square: one row per header column, in the header's order (nvidia-smi prints
/// it so). A matrix cut short (a column without its row) is refused at the column, not read as a
/// box of fewer GPUs: the missing GPU's links and NICs are unknown.
TopoBox read_smi_topo(std::string_view text, std::string_view file, const TopoHints& hints) {
    TopoFacts f;
    f.file = std::string(file);
    f.format = "nvidia-smi topo -m";
    f.nvlinks_known = true;
    f.order_by_dev = true;
    std::istringstream in{std::string(text)};
    std::string line;
    std::vector<Token> columns;
    int header_line = 0;
    std::vector<SmiRow> gpu_rows, nic_rows;
    for (int no = 1; std::getline(in, line); ++no) {
        // nvidia-smi colours the header in a terminal: drop ANSI escapes
        for (std::size_t e; (e = line.find("\x1b[")) != std::string::npos;) {
            std::size_t m = line.find('m', e);
            line.erase(e, m == std::string::npos ? std::string::npos : m - e + 1);
        }
        auto t = tokens(line);
        if (t.empty()) continue;
        if (t[0].text == "Legend:") break;
        if (columns.empty()) {
            if (!is_gpu(t[0].text)) continue;
            columns = smi_header(t, file, no);
            header_line = no;
            continue;
        }
        if (!is_gpu(t[0].text) && !is_nic(t[0].text)) continue;
        const std::size_t k = gpu_rows.size() + nic_rows.size();
        if (k >= columns.size() || columns[k].text != t[0].text)
            throw InputError(fmt::format("{}:{}:{}: row {} where {}: nvidia-smi prints one row per header column, in the header's order", file, no,
                                         t[0].col, t[0].text, k < columns.size() ? "the header's order has " + columns[k].text : "every column has its row"));
        SmiRow row = read_row(t, line, columns, file, no);
        if (is_gpu(row.label.text)) f.gpus.push_back({no, 0, 0, 0, false});
        else f.nics.push_back({no, row.label.text, 0, 0, {}});
        (is_gpu(row.label.text) ? gpu_rows : nic_rows).push_back(std::move(row));
    }
    if (columns.empty()) throw InputError(fmt::format("{}: no header row (GPU0 GPU1 ...): expected the output of `nvidia-smi topo -m`", file));
    if (const std::size_t k = gpu_rows.size() + nic_rows.size(); k < columns.size())
        throw InputError(fmt::format("{}:{}:{}: column {} has no row: the matrix is cut short ({} rows for {} columns; nvidia-smi prints one row "
                                     "per column)",
                                     file, header_line, columns[k].col, columns[k].text, k, columns.size()));
    const std::size_t n = f.gpus.size();
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n; ++j) {
            const Token& c = gpu_rows[i].cells[j];
            if (!numbered(c.text, "NV")) continue;
            int count = 0;
            std::from_chars(c.text.data() + 2, c.text.data() + c.text.size(), count);
            if (count < 1 || count > 64)
                throw InputError(fmt::format("{}:{}:{}: {} between GPU{} and GPU{}: expected 1 to 64 NVLinks", file, gpu_rows[i].line, c.col, c.text, i, j));
            f.direct[{static_cast<int>(i), static_cast<int>(j)}] = count;
        }
    }
    for (auto& nic : f.nics) {
        const auto& cells = nic_rows[static_cast<std::size_t>(&nic - f.nics.data())].cells;
        for (std::size_t g = 0; g < n; ++g) nic.distance.push_back(std::max(0, relation(cells[g].text)));
    }
    return assemble(f, hints);
}

}  // namespace collsched::machines
