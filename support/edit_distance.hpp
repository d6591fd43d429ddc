/** \file
 * The edit distance behind every "did you mean" hint (misspelled keywords in the parser, unknown
 * names in the resolver, unknown subcommands and keys on the command line): one function, so the
 * hints agree on what counts as close.
 */
#pragma once

#include <cstddef>
#include <string_view>

namespace collsched::support {

/// Edit distance with adjacent transpositions (optimal string alignment): insertions, deletions,
/// substitutions and swaps of two neighbouring characters each cost 1, so `sned` is one edit from
/// `send`.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace collsched::support
