/** \file
 * A JSON document tree that remembers where every value starts (line and column), for readers
 * whose findings must point into the file: nlohmann's tree keeps no positions. Objects keep
 * their members in file order, duplicates included (a reader decides what a duplicate means;
 * nlohmann, which third-party executors use, keeps the last one). Numbers keep their text, so a
 * reader can tell 3 from 3.0 and from 3e0 and refuse what its source would refuse.
 *
 * Malformed text throws InputError `file:line:col: malformed JSON: what`; nesting deeper than
 * compiler/core/json_error.hpp's bound is refused before parsing.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/budget.hpp"

namespace collsched::json_tree {

enum class Kind { null, boolean, number, string, array, object };

struct Member;

struct Value {
    Kind kind = Kind::null;
    int line = 0, col = 0;
    bool boolean = false;
    std::string text;  ///< a string's value (unescaped), or a number's text
    std::vector<Value> items;                          ///< array
    std::vector<Member> members;  ///< object, in file order

    /// The last member named `key` (as nlohmann would keep it), or null.
    const Value* find(std::string_view key) const;
    /// How many members are named `key`.
    int count(std::string_view key) const;
    /// The number as an exact integer, when it is one (no fraction, no exponent, in range).
    std::optional<std::int64_t> integer() const;
    /// "an object", "a string", ... for messages.
    std::string_view kind_name() const;
};

/// One member of an object: its key and its value, named as the std::pair they were (a pair of
/// the incomplete Value does not compile with clang 14 and libstdc++ 12, the fuzzing build).
struct Member {
    std::string first;
    Value second;
};

/// Parses `text`; `file` names it in errors. Past `deadline` (polled every 65,536 values) it throws
/// LimitReached, the tree parsed so far left to the operating system (support/teardown.hpp).
Value parse(std::string_view text, std::string_view file, Deadline deadline = {});

}  // namespace collsched::json_tree
