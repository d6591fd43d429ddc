#include "cli/output.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "compiler/formats/export_chakra.hpp"
#include "compiler/formats/export_formats.hpp"
#include "compiler/io/table_printer.hpp"

#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"

namespace collsched::tools {

namespace {

// The temporary file write_output is writing, for the signal handler: an interrupted run (Ctrl-C,
// kill, a closed terminal) removes it before it dies, so it leaves neither a partial output nor a
// stray temporary. Plain storage and unlink()/signal()/raise() only: async-signal-safe.
char pending_tmp[4096];
volatile std::sig_atomic_t pending_tmp_set = 0;
constexpr int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_pending_tmp(int sig) {
    if (pending_tmp_set) ::unlink(pending_tmp);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

/// Installs remove_pending_tmp for `tmp` while it is being written, where the signal's action is
/// the default one (a signal the caller ignores or handles stays as it is); restores on exit.
class TmpCleanup {
public:
    explicit TmpCleanup(const std::string& tmp) {
        if (tmp.size() >= sizeof pending_tmp) return;
        std::copy(tmp.begin(), tmp.end(), pending_tmp);
        pending_tmp[tmp.size()] = '\0';
        pending_tmp_set = 1;
        for (std::size_t i = 0; i < std::size(cleanup_signals); ++i) {
            struct sigaction now {};
            if (::sigaction(cleanup_signals[i], nullptr, &old_[i]) != 0 || old_[i].sa_handler != SIG_DFL) continue;
            now.sa_handler = remove_pending_tmp;
            sigemptyset(&now.sa_mask);
            installed_[i] = ::sigaction(cleanup_signals[i], &now, nullptr) == 0;
        }
    }
    ~TmpCleanup() {
        for (std::size_t i = 0; i < std::size(cleanup_signals); ++i)
            if (installed_[i]) ::sigaction(cleanup_signals[i], &old_[i], nullptr);
        pending_tmp_set = 0;
    }
    TmpCleanup(const TmpCleanup&) = delete;
    TmpCleanup& operator=(const TmpCleanup&) = delete;

private:
    struct sigaction old_[std::size(cleanup_signals)] {};
    bool installed_[std::size(cleanup_signals)] = {};
};

[[noreturn]] void fail(const std::string& path, std::string_view what, int err) {
    throw InputError(fmt::format("{}: {} ({})", path, what, std::strerror(err)));
}

/// Writes all of `b` to `fd`, retrying short writes; false with errno set on failure.
bool write_all(int fd, const fmt::memory_buffer& b) {
    const char* p = b.data();
    std::size_t left = b.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return false;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    return true;
}

/// Runs `produce` into `fd`; the first failed write stops the run with its errno.
void produce_into(int fd, const std::string& path, const std::function<void(const Flush&, fmt::memory_buffer&)>& produce) {
    fmt::memory_buffer buf;
    produce([&](fmt::memory_buffer& b) {
        if (!write_all(fd, b)) fail(path, "write failed", errno);
        b.clear();
    }, buf);
    if (buf.size() > 0 && !write_all(fd, buf)) fail(path, "write failed", errno);
}

/// What kind of non-regular file `mode` is, for messages.
std::string_view kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/// A character device or a pipe: written into, never created, truncated or replaced.
void write_into(const std::string& path, const std::function<void(const Flush&, fmt::memory_buffer&)>& produce) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) fail(path, "cannot open for writing", errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        ::close(fd);
        throw InputError(fmt::format("{}: changed while being opened; nothing written", path));
    }
    try {
        produce_into(fd, path, produce);
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0) fail(path, "write failed", errno);
}

/// A regular file at `target` (which may not exist yet): written to a temporary beside it, with
/// the mode of the file it replaces, and renamed over it when complete.
void write_atomically(const std::string& path, const std::string& target,
                      const std::function<void(const Flush&, fmt::memory_buffer&)>& produce) {
    struct stat old {};
    const bool replaces = ::stat(target.c_str(), &old) == 0;
    // O_EXCL: never follow or reuse whatever already has the temporary's name.
    std::string tmp;
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
        tmp = attempt == 0 ? fmt::format("{}.tmp.{}", target, ::getpid()) : fmt::format("{}.tmp.{}.{}", target, ::getpid(), attempt);
        fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) fail(path, "cannot write (directory missing or not writable)", errno);
    }
    if (fd < 0) fail(path, "cannot create a temporary file beside it", EEXIST);
    TmpCleanup cleanup(tmp);
    try {
        if (replaces && ::fchmod(fd, old.st_mode & 07777) != 0) fail(path, "cannot set the mode of the temporary", errno);
        produce_into(fd, path, produce);
        if (::close(fd) != 0) {
            fd = -1;
            fail(path, "write failed", errno);
        }
        fd = -1;
        if (std::rename(tmp.c_str(), target.c_str()) != 0) fail(path, "cannot rename the finished file into place", errno);
    } catch (...) {
        if (fd >= 0) ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
}

}  // namespace

// Decides by what is at `path` now (docs/fuzzing.md, "Output"): nothing or a regular file is
// replaced atomically; a symbolic link is followed (a link to a regular file has its target
// replaced, the link stays); a character device or a pipe is written into; anything else is
// refused before a byte is produced.
void write_output(const std::string& path, const std::function<void(const Flush&, fmt::memory_buffer&)>& produce) {
    if (path == "-") {
        fmt::memory_buffer buf;
        auto out = [](fmt::memory_buffer& b) {
            if (std::fwrite(b.data(), 1, b.size(), stdout) != b.size()) fail("standard output", "write failed", errno);
            b.clear();
        };
        produce(out, buf);
        out(buf);
        check_stdout();
        return;
    }
    if (path.empty()) throw InputError("the output path is empty");
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno != ENOENT) fail(path, "cannot write", errno);
        write_atomically(path, path, produce);
        return;
    }
    if (S_ISLNK(st.st_mode)) {
        if (::stat(path.c_str(), &st) != 0)
            throw InputError(fmt::format("{}: is a symbolic link to a missing file; nothing written", path));
        if (S_ISREG(st.st_mode)) {
            // The link's final target, checked to be the same file that stat() found.
            char resolved[PATH_MAX];
            struct stat again {};
            if (::realpath(path.c_str(), resolved) == nullptr || ::stat(resolved, &again) != 0 || again.st_dev != st.st_dev ||
                again.st_ino != st.st_ino)
                throw InputError(fmt::format("{}: cannot resolve the symbolic link to a file; nothing written", path));
            write_atomically(path, resolved, produce);
            return;
        }
    }
    if (S_ISREG(st.st_mode)) write_atomically(path, path, produce);
    else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) write_into(path, produce);
    else
        throw InputError(fmt::format("{}: is {}; output goes to regular files, character devices and pipes; nothing written",
                                     path, kind_of(st.st_mode)));
}

void check_stdout() {
    errno = 0;
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        int err = errno;
        std::clearerr(stdout);
        throw InputError(err != 0 ? fmt::format("standard output: write failed ({})", std::strerror(err))
                                  : std::string("standard output: write failed"));
    }
}

namespace {

/// Writes every file to a temporary name first and renames them only when all were written.
void write_files(const std::vector<OutputFile>& files) {
    std::vector<std::string> tmps;
    auto cleanup = [&] {
        for (const std::string& t : tmps) std::remove(t.c_str());
    };
    for (const ChakraFile& f : files) {
        tmps.push_back(fmt::format("{}.tmp.{}", f.path, ::getpid()));
        std::FILE* out = std::fopen(tmps.back().c_str(), "wb");
        const bool ok = out && std::fwrite(f.content.data(), 1, f.content.size(), out) == f.content.size();
        if (!out || std::fclose(out) != 0 || !ok) {
            cleanup();
            throw InputError(fmt::format("{}: cannot write (directory missing or not writable, or disk full)", f.path));
        }
    }
    for (std::size_t i = 0; i < files.size(); ++i)
        if (std::rename(tmps[i].c_str(), files[i].path.c_str()) != 0) {
            cleanup();
            throw InputError(fmt::format("{}: cannot rename the finished file into place", files[i].path));
        }
}

}  // namespace

std::vector<std::string> table_output_formats() { return output_format_names(); }

std::string table_output_formats_help() {
    return fmt::format("Output format: {} (default: the one -o FILE's extension names, such as .csv, .svg or .sched, else json)",
                       output_format_list());
}

void write_table_output(const SendTable& table, const std::string& format, const std::string& output, const ExportOptions& options) {
    const OutputFormat* f = format_named(format);
    if (f && f->write_files) {
        if (output == "-") throw InputError(fmt::format("--format {} writes several files: give -o DIR/PREFIX", f->name));
        // -o DIR/ (or a directory) has no prefix: the files would be hidden ones, DIR/.0.et, ...
        if (output.ends_with('/') || std::filesystem::is_directory(output) || output.ends_with("/.") || output == "." ||
            output.ends_with(".."))
            throw InputError(fmt::format("-o {}: --format {} writes {}: give -o DIR/PREFIX, not a directory; nothing written", output,
                                         f->name, f->files));
        ExportOptions o = options;
        o.file = std::filesystem::absolute(output).string();
        write_files(f->write_files(table, o));
        return;
    }
    if (format == "nccl-graph") {  // read back first: NCCL must run the table's data, not more (nccl_runs_more); nothing written else
        const std::vector<std::string> xmls = nccl_graph_files_xml(table);
        if (xmls.size() > 1 && (output == "-" || std::filesystem::is_directory(output) || output.ends_with('/')))
            throw InputError(fmt::format("nccl-graph: the boxes need one graph file each (their nets or GPU orders differ): give -o "
                                         "FILE.xml, written as FILE.node0.xml to FILE.node{}.xml; nothing written",
                                         xmls.size() - 1));
        if (std::string why = nccl::nccl_runs_more(table, xmls); !why.empty()) throw InputError("nccl-graph: " + why + "; nothing written");
        if (xmls.size() == 1) {
            write_output(output, [&](const Flush&, fmt::memory_buffer& buf) { buf.append(xmls.front()); });
            return;
        }
        std::vector<OutputFile> files;  // one per node (docs/exports.md, "One file per node")
        for (std::size_t k = 0; k < xmls.size(); ++k) files.push_back({nccl_graph_node_path(output, std::uint32_t(k)), xmls[k]});
        write_files(files);
        return;
    }
    write_output(output, [&](const Flush& flush, fmt::memory_buffer& buf) { write_table_text(table, format, options, buf, flush); });
}

void write_table_text(const SendTable& table, const std::string& format, const ExportOptions& options, fmt::memory_buffer& buf,
                      const Flush& flush) {
    write_table_as(table, format, options, buf, flush);
}

}  // namespace collsched::tools
