/** \file
 * Diagnostics shared by every stage: source locations, error records with stable codes, and the
 * renderer that prints `file:line:col: error[CODE]: message` followed by the source line and a
 * caret. The two other ways a stage stops live in support/ and are included here for every
 * stage's convenience: `InputError` (support/error.hpp) for bad input that has no source text to
 * point into, and `COLLSCHED_ASSERT` (support/assert.hpp) for broken invariants.
 */
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "support/assert.hpp"
#include "support/error.hpp"

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

}  // namespace collsched
