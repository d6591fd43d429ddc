#include "compiler/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "dsl/diagnostics.hpp"

namespace collsched {

namespace {

/// What a file that is neither regular nor a pipe is, for the message.
std::string_view kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::string size_text(std::uint64_t bytes) {
    if (bytes % (std::uint64_t{1} << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
    return fmt::format("{} MiB", bytes >> 20);
}

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

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

// Checks the kind of file before opening it (opening a device can have effects of its own), and
// again on the descriptor (the name may have changed in between). A regular file larger than the
// limit is refused from its size; a pipe is read until the limit is passed.
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint, std::string& text) {
    text.clear();
    auto too_large = [&] {
        return fmt::format("the {} is larger than {}{}{}", what, size_text(limit), override_hint.empty() ? "" : "; ",
                           override_hint);
    };
    auto refuse = [&](mode_t mode) -> std::string {
        if (S_ISDIR(mode)) return fmt::format("is a directory, not a {}", what);
        return fmt::format("is {}, not a {} (only regular files and pipes are read)", kind_of(mode), what);
    };
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fmt::format("cannot open file ({})", std::strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) return refuse(st.st_mode);
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return fmt::format("cannot open file ({})", std::strerror(errno));
    if (::fstat(fd.get(), &st) != 0) return fmt::format("cannot read file ({})", std::strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) return refuse(st.st_mode);
    if (S_ISREG(st.st_mode)) {
        if (static_cast<std::uint64_t>(st.st_size) > limit) return too_large();
        text.reserve(static_cast<std::size_t>(st.st_size));
    }
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            std::string error = fmt::format("cannot read file ({})", std::strerror(errno));
            text.clear();
            return error;
        }
        if (n == 0) break;
        if (text.size() + static_cast<std::size_t>(n) > limit) {  // a pipe, or a file that grows while read
            text.clear();
            text.shrink_to_fit();
            return too_large();
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

}  // namespace collsched
