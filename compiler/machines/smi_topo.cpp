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

}  // namespace

TopoBox read_smi_topo(std::string_view text, std::string_view file, const TopoHints& hints) {
    TopoFacts f;
    f.file = std::string(file);
    f.format = "nvidia-smi topo -m";
    f.nvlinks_known = true;
    f.order_by_dev = true;
    std::istringstream in{std::string(text)};
    std::string line;
    std::vector<std::string> columns;
    std::vector<std::vector<std::string>> gpu_rows, nic_rows;
    int row_line = 0;
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
            for (const Token& x : t) {
                if (!is_gpu(x.text) && !is_nic(x.text)) break;
                columns.push_back(x.text);
            }
            continue;
        }
        if (!is_gpu(t[0].text) && !is_nic(t[0].text)) continue;
        if (t.size() < columns.size() + 1)
            throw InputError(fmt::format("{}:{}: row {} has {} cells, the header {} columns", file, no, t[0].text, t.size() - 1, columns.size()));
        std::vector<std::string> cells;
        for (std::size_t c = 0; c < columns.size(); ++c) {
            const Token& x = t[c + 1];
            if (x.text != "X" && !numbered(x.text, "NV") && relation(x.text) < 0)
                throw InputError(fmt::format("{}:{}:{}: '{}' is no connection nvidia-smi prints (X, NV#, PIX, PXB, PHB, NODE, SYS)", file, no,
                                             x.col, x.text));
            cells.push_back(x.text);
        }
        (is_gpu(t[0].text) ? gpu_rows : nic_rows).push_back(cells);
        if (is_gpu(t[0].text) && gpu_rows.size() == 1) row_line = no;
        if (is_gpu(t[0].text)) f.gpus.push_back({no, 0, 0, 0, false});
        else f.nics.push_back({no, t[0].text, 0, 0, {}});
    }
    if (columns.empty()) throw InputError(fmt::format("{}: no header row (GPU0 GPU1 ...): expected the output of `nvidia-smi topo -m`", file));
    const std::size_t n = f.gpus.size();
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = i + 1; j < n && j < columns.size(); ++j) {
            const std::string& c = gpu_rows[i][j];
            if (!numbered(c, "NV")) continue;
            int count = 0;
            std::from_chars(c.data() + 2, c.data() + c.size(), count);
            if (count < 1 || count > 64)
                throw InputError(fmt::format("{}:{}: {} between GPU{} and GPU{}: expected 1 to 64 NVLinks", file, row_line + static_cast<int>(i), c, i, j));
            f.direct[{static_cast<int>(i), static_cast<int>(j)}] = count;
        }
    }
    for (auto& nic : f.nics) {
        const auto& cells = nic_rows[&nic - f.nics.data()];
        for (std::size_t g = 0; g < n && g < cells.size(); ++g) nic.distance.push_back(std::max(0, relation(cells[g])));
    }
    return assemble(f, hints);
}

}  // namespace collsched::machines
