/** \file
 * Reading an input file under the resource policy (docs/fuzzing.md, "Resource policy"): every
 * file collsched reads as a whole (tables, per-rank files, schedules, graph files, catalogs) goes
 * through read_input_file, which refuses directories and devices with one line naming the file,
 * and stops at a size limit instead of reading `/dev/zero` until the memory runs out. Pipes are
 * read (so `verify <(gen)` works) under the same limit.
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace collsched {

/// Default size limit of tables, per-rank files and schedules: 4 GiB (a 100-million-transfer
/// JSON table is about 5 GB; `compile` streams such tables to files without reading them back).
inline constexpr std::uint64_t default_max_input_bytes = std::uint64_t{4} << 30;

/// The limit for tables, per-rank files and schedules: default_max_input_bytes, or the
/// environment variable COLLSCHED_MAX_INPUT_MB (a positive number of MiB) when it is set.
/// Throws InputError when the variable is set to anything else.
std::uint64_t max_input_bytes();

/// A file opened for reading under the policy (open_input_file); closes its descriptor.
class InputFile {
public:
    InputFile() = default;
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;
    int fd() const { return fd_; }
    /// A regular file (its size is known and within the limit), else a pipe (read until the limit).
    bool regular() const { return regular_; }
    std::uint64_t size() const { return size_; }

private:
    friend std::string open_input_file(const std::string&, std::string_view, std::uint64_t, std::string_view, InputFile&);
    int fd_ = -1;
    bool regular_ = false;
    std::uint64_t size_ = 0;
};

/// Opens `path` for reading: refuses directories, devices and sockets, and a regular file larger
/// than `limit`. Returns the error message without the path (empty on success). For readers
/// that read the descriptor themselves (a pipe must still stop at `limit`: input_too_large).
std::string open_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint, InputFile& file);

/// The message for an input over its limit ("the table is larger than 4 GiB; set ...").
std::string input_too_large(std::string_view what, std::uint64_t limit, std::string_view override_hint);

/// The whole content of `path`, or an error message without the path (empty on success), for
/// callers that report through Diagnostics. `what` names the kind of file ("table", "schedule",
/// "graph file") and `override_hint` says how to raise the limit (empty: it cannot be raised).
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint, std::string& text);

/// Everything that can be read from the open descriptor `fd` (standard input: 0), stopping with
/// an error when it passes `limit`; the error message, or empty on success.
std::string read_input_stream(int fd, std::string_view what, std::uint64_t limit, std::string_view override_hint,
                              std::string& text);

/// The whole content of `path`; throws InputError("PATH: reason") on failure.
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                            std::string_view override_hint);

/// The whole content of `path` when it is a regular file; anything else (a FIFO, a device, a
/// directory) is refused by its kind, checked before opening and again on a descriptor opened
/// with O_NONBLOCK, so that no open or read can wait. For files read as a set (Chakra traces),
/// where a pipe would block the whole set. Throws InputError("PATH: reason").
std::string read_regular_input_file(const std::string& path, std::string_view what, std::uint64_t limit,
                                    std::string_view override_hint);

/// What is at `path` when it is not a regular file ("a FIFO", "a directory", ...), "" when it is
/// one, "missing" when there is nothing (and `error` when it cannot be told: errno's text).
std::string file_kind_problem(const std::string& path);

/// How to raise max_input_bytes, for the messages of its callers.
inline constexpr std::string_view max_input_hint = "set COLLSCHED_MAX_INPUT_MB to read larger files";

}  // namespace collsched
