#include "compiler/io/table_io.hpp"

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

#include <nlohmann/json.hpp>

#include "compiler/core/input_file.hpp"
#include "compiler/core/json_error.hpp"
#include "compiler/io/ranks_import.hpp"
#include "compiler/io/table_read.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

using table_read::trim;

/// A JSON table: the fast reader, else (a per-rank file, or anything the fast reader leaves to it,
/// including every error) the reference readers. `padded`: simdjson's padding follows the text.
SendTable read_json(std::string_view text, bool padded, std::string_view name) {
    bool ranks = false;
    if (auto t = table_read::parse_fast(text, padded, name, ranks)) return std::move(*t);
    if (ranks || looks_like_ranks(text)) return parse_ranks_json(text, name);
    return parse_table_json_reference(text, name);
}

}  // namespace

// The file mapped (MAP_POPULATE: its pages are mapped in one call, no copy, no page fault each)
// when its last page has room for the padding, else read into a padded buffer (pipes, /proc
// files, a file ending just before a page boundary).
TableFile::TableFile(const std::string& path) : path_(path) {
    // The input policy first (compiler/core/input_file.hpp): no directories or devices, at most
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
    // The same reading and messages as read_input_text (a read error, a pipe past the limit).
    if (std::string error = read_input_stream(fd, "table", limit, max_input_hint, buf_); !error.empty())
        throw InputError(fmt::format("{}: {}", path, error));
    size_ = buf_.size();
    buf_.append(table_read::json_padding, '\0');
}

TableFile::~TableFile() {
    if (map_) ::munmap(map_, map_size_);
}

std::string_view TableFile::text() const {
    return map_ ? std::string_view(static_cast<const char*>(map_), map_size_) : std::string_view(buf_.data(), size_);
}

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

SendTable TableFile::parse() const { return parse_table_text(text(), true, path_); }

SendTable read_table(const std::string& path) {
    if (path == "-") return parse_table(read_input_text(path, "table"), "<stdin>");
    return TableFile(path).parse();
}

}  // namespace collsched
