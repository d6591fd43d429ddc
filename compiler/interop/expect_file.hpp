/** \file
 * `--expect FILE`: a postcondition given by hand, for programs whose collective collsched does
 * not know (`coll="custom"` MSCCL-IR, MSCCL++ `sendrecv`, ...) or to replace a collective's own.
 * One format and one reader for both program readers (compiler/interop/msccl_import.hpp,
 * compiler/interop/mscclpp_check.hpp); docs/exports.md ("--expect") describes it:
 *
 *     {"outputs": [{"rank": 1, "chunk": 3, "holds": [[0, 3]]},
 *                  {"rank": 2, "chunk": 0, "buffer": "o", "holds": [[0, 0], [1, 0]]}]}
 *
 * Each entry names a chunk of a rank's buffer (`buffer` "o" by default, or "i", "s") and the
 * input chunks `[rank, chunk]` it must hold at the end: one is a copy, several their reduction.
 * The reader checks the shape (InputError `file:line:col: ...`, exit 2); each program reader
 * checks the ranks and chunks against its program, pointing at the entry's line and column.
 */
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace collsched {

struct Expectation {
    int rank = 0;
    int chunk = 0;
    char buffer = 'o';  ///< 'o' output, 'i' input, 's' scratch
    std::vector<std::pair<int, int>> holds;  ///< (rank, input chunk); several: their reduction
    int line = 0, col = 0;                   ///< where the entry starts in the file
    std::size_t index = 0;                   ///< its place in "outputs"
};

/// Reads an expectation file; throws InputError `file:line:col: outputs[i]: what` on a bad shape.
std::vector<Expectation> read_expectations(std::string_view text, std::string_view file);

/// Checks the ranks and chunks named against a program of `ranks` ranks whose buffer `buf`
/// ('i', 'o', 's') of rank r has chunks(r, buf) chunks; throws InputError at the entry's line.
void check_expectations(const std::vector<Expectation>&, std::string_view file, int ranks,
                        const std::function<long long(int rank, char buf)>& chunks);

}  // namespace collsched
