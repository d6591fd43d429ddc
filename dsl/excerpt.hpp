/** \file
 * Short quotations of long inputs in error messages (docs/fuzzing.md, "Error messages"): a
 * message quotes at most about 80 characters of what the user gave, with "..." where it was cut,
 * so a 1 MB topology spec or message name gives one readable line instead of echoing itself.
 * Used where messages are printed (tools/main.cpp, Diagnostics::render), so every message of
 * every stage is covered, including those built before this rule existed.
 */
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace collsched {

/// Longest quotation kept whole, in bytes.
inline constexpr std::size_t max_quote = 80;

/// `s` when it has at most `max` bytes, else its first bytes (cut at a UTF-8 character
/// boundary) followed by "...", max bytes in all.
std::string excerpt(std::string_view s, std::size_t max = max_quote);

/// `s` when it has at most `max` bytes, else its beginning, "..." and its end, max bytes in all
/// (cut at UTF-8 character boundaries): a long `path:line:col:` keeps the place.
std::string excerpt_middle(std::string_view s, std::size_t max = max_quote);

/// Longest message kept whole by shorten_quotes, in bytes.
inline constexpr std::size_t max_message = 1000;

/// `message` with every quotation longer than max_quote shortened by excerpt(): a span between
/// single quotes, and (by excerpt_middle, so a long `path:line:col:` keeps its place) any run of
/// non-blank characters longer than max_quote + 40 (a long value echoed without quotes, or many
/// short quotations in a row). A message still longer than
/// max_message keeps its first 60% and last 30% with the number of bytes left out between.
std::string shorten_quotes(std::string_view message);

/// The part of a long source line around `column` (1-based, bytes) that a diagnostic shows:
/// the line itself when it has at most 2 * max_quote bytes, else about max_quote bytes around
/// the column with "..." on the sides that were cut. `caret` is set to the 0-based offset of the
/// column within the returned text.
std::string source_window(std::string_view line, std::size_t column, std::size_t& caret);

}  // namespace collsched
