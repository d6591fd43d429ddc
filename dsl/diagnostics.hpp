/** \file
 * Diagnostics shared by every stage: source locations, error records with stable codes, and the
 * renderer that prints `file:line:col: error[CODE]: message` followed by the source line and a
 * caret. Also the two ways a stage stops: `InputError` for bad input that has no source text to
 * point into (a malformed table file, an unknown topology spec), and `COLLSCHED_ASSERT` for
 * broken invariants, which are bugs and abort.
 */
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace collsched {

/// A position in a source text; 1-based. line == 0 means "no location".
struct SourceLoc {
    std::uint32_t line = 0;
    std::uint32_t column = 0;
    bool operator==(const SourceLoc&) const = default;
    bool known() const { return line != 0; }
};

enum class Severity { error, note, warning };

struct Diagnostic {
    Severity severity = Severity::error;
    std::string code;  ///< stable code such as "E012"; empty for notes
    SourceLoc loc;
    std::string message;
    bool operator==(const Diagnostic&) const = default;
};

/// Collects the diagnostics of one source text. A stage reports every error it finds, then the
/// caller checks `has_errors()` and stops before the next stage.
class Diagnostics {
public:
    Diagnostics() = default;
    Diagnostics(std::string file, std::string text) : file_(std::move(file)), text_(std::move(text)) {}

    void error(std::string code, SourceLoc loc, std::string message);
    void note(SourceLoc loc, std::string message);
    /// Something legal but almost certainly not meant (a wasted send): reported, not fatal.
    void warning(std::string code, SourceLoc loc, std::string message);

    bool has_errors() const { return errors_ != 0; }
    std::size_t error_count() const { return errors_; }
    std::size_t warning_count() const { return warnings_; }
    const std::vector<Diagnostic>& all() const { return list_; }
    const std::string& file() const { return file_; }
    const std::string& text() const { return text_; }

    /// Every diagnostic, each as `file:line:col: error[CODE]: message`, the source line and a caret.
    std::string render() const;

private:
    std::string file_;
    std::string text_;
    std::vector<Diagnostic> list_;
    std::size_t errors_ = 0;
    std::size_t warnings_ = 0;
};

/// Line and column (1-based, column counted in bytes) of a byte offset into `text`.
SourceLoc location_of(std::string_view text, std::size_t offset);

/// Bad input outside a source program: one clear line saying what, where and what was expected.
/// The command line prints it and exits with code 2.
class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line);

}  // namespace collsched

#define COLLSCHED_ASSERT(cond) \
    ((cond) ? static_cast<void>(0) : ::collsched::assertion_failed(#cond, __FILE__, __LINE__))
