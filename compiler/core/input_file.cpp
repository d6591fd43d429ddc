#include "compiler/core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

/// What a file that is neither regular nor a pipe is, for the message.
std::string_view kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISFIFO(mode)) return "a FIFO";
    return "not a regular file";
}

std::string size_text(std::uint64_t bytes) {
    if (bytes % (std::uint64_t{1} << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
    return fmt::format("{} MiB", bytes >> 20);
}

}  // namespace

std::uint64_t max_input_bytes() {
    const char* env = std::getenv("COLLSCHED_MAX_INPUT_MB");
    if (env == nullptr) return default_max_input_bytes;
    std::string_view s(env);
    std::uint64_t mb = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), mb);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || mb == 0 || mb > (std::uint64_t{1} << 40))
        throw InputError(fmt::format("COLLSCHED_MAX_INPUT_MB must be a whole number of MiB from 1 to 2^40, not '{}'",
                                     s.substr(0, 40)));
    return mb << 20;
}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

std::string input_too_large(std::string_view what, std::uint64_t limit, std::string_view override_hint) {
    return fmt::format("the {} is larger than {}{}{}", what, size_text(limit), override_hint.empty() ? "" : "; ", override_hint);
}

// Checks the kind of file before opening it (opening a device can have effects of its own), and
// again on the descriptor (the name may have changed in between). A regular file larger than the
// limit is refused from its size.
std::string open_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint, InputFile& file) {
    auto refuse = [&](mode_t mode) -> std::string {
        if (S_ISDIR(mode)) return fmt::format("is a directory, not a {}", what);
        return fmt::format("is {}, not a {} (only regular files and pipes are read)", kind_of(mode), what);
    };
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fmt::format("cannot open file ({})", std::strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) return refuse(st.st_mode);
    if (file.fd_ >= 0) ::close(file.fd_);
    file.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file.fd_ < 0) return fmt::format("cannot open file ({})", std::strerror(errno));
    if (::fstat(file.fd_, &st) != 0) return fmt::format("cannot read file ({})", std::strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) return refuse(st.st_mode);
    file.regular_ = S_ISREG(st.st_mode);
    file.size_ = file.regular_ ? static_cast<std::uint64_t>(st.st_size) : 0;
    if (file.size_ > limit) return input_too_large(what, limit, override_hint);
    return {};
}

// A pipe is read until it passes the limit; so is a regular file that grows while it is read.
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint, std::string& text) {
    text.clear();
    InputFile file;
    if (std::string error = open_input_file(path, what, limit, override_hint, file); !error.empty()) return error;
    text.reserve(static_cast<std::size_t>(file.size()));
    return read_input_stream(file.fd(), what, limit, override_hint, text);
}

std::string read_input_stream(int fd, std::string_view what, std::uint64_t limit, std::string_view override_hint,
                              std::string& text) {
    text.clear();
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            std::string error = fmt::format("cannot read file ({})", std::strerror(errno));
            text.clear();
            return error;
        }
        if (n == 0) break;
        if (text.size() + static_cast<std::size_t>(n) > limit) {
            text.clear();
            text.shrink_to_fit();
            return input_too_large(what, limit, override_hint);
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
    return {};
}

std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint) {
    std::string text;
    std::string error = read_input_file(path, what, limit, override_hint, text);
    if (!error.empty()) throw InputError(fmt::format("{}: {}", path, error));
    return text;
}

std::string file_kind_problem(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? "missing" : std::strerror(errno);
    return S_ISREG(st.st_mode) ? "" : std::string(kind_of(st.st_mode));
}

std::string read_regular_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                                    std::string_view override_hint) {
    auto refuse = [&](mode_t mode) {
        throw InputError(fmt::format("{}: is {}, not a {} (only regular files are read)", path, kind_of(mode), what));
    };
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw InputError(fmt::format("{}: cannot open file ({})", path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) refuse(st.st_mode);
    // O_NONBLOCK: a FIFO put in the file's place since the check must not block the open.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw InputError(fmt::format("{}: cannot open file ({})", path, std::strerror(errno)));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    if (::fstat(fd, &st) != 0) throw InputError(fmt::format("{}: cannot read file ({})", path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) refuse(st.st_mode);
    if (static_cast<std::uint64_t>(st.st_size) > limit) throw InputError(fmt::format("{}: {}", path, input_too_large(what, limit, override_hint)));
    std::string text;
    text.reserve(static_cast<std::size_t>(st.st_size));
    if (std::string error = read_input_stream(fd, what, limit, override_hint, text); !error.empty())
        throw InputError(fmt::format("{}: {}", path, error));
    return text;
}

}  // namespace collsched
