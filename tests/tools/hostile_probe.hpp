/** \file
 * The fourth hostile campaign's probe (issue 57): a hostile Case with what the fourth generation
 * adds (either answer of a reader, a note that must come with exit 0, a machine file read back),
 * its runner, and the NCCL topology XML of a box as NCCL dumps it. tests/tools/test_hostile_fourth.cpp
 * holds the runner and the machine readers' categories (NCCL XML, `machine`, nvidia-smi, the slow
 * category); test_hostile_fourth_io.cpp the rest (graph files, messages, sizes, size ranges,
 * compose, --library, NVLS and SHARP, bounds, the Python module).
 */
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tests/tools/hostile_case.hpp"

namespace collsched::test::hostile4 {

using hostile::Case;

/// The campaign's seed (the third generation's was the issue's; this one is new).
inline constexpr unsigned kSeed = 20261126u;

/// What a fourth-generation case adds to the first generations' Case.
struct Probe {
    Case c;
    bool either = false;       ///< exit 0 or 2 (both are the contract: a reader may refuse or read)
    bool said = false;         ///< with either: exit 0 must come with a note on standard error
    std::string said_in;       ///< with said: the note, on standard output or standard error
    std::string machine_file;  ///< exit 0 wrote this machine file: read back by topo and verify --size
    std::string not_message;   ///< must not be on standard error
    std::string then;          ///< exit 0: this command is run next in the scratch directory ({C}, {D} as in args) and answers 0 or 1,
                               ///< never an error (what one command writes, the next reads)
};

/// A probe of `c` with the first generations' contract only.
Probe probe(Case c);

/// Runs every probe of a category in its own scratch directory, and says the campaign's count.
void run_probes(const std::string& category, const std::vector<Probe>& probes);

/// The seeded generator of mutated NCCL topology XML (`count` mutants of `seed`). Every mutant is
/// read by `machine`: refused with its file's name and line (exit 2, nothing written), or written
/// and then read back. The fifth campaign runs it again with its own seed.
std::vector<Probe> nccl_mutant_cases(std::size_t count, unsigned seed = kSeed);
/// `sample` of the product of `machine` families, switches, networks and faults, shuffled by `seed`
/// (all of it when `sample` is larger): refused in one line, or written and read back.
std::vector<Probe> machine_option_cases(std::size_t sample, unsigned seed = kSeed + 1);

/// `file:line:col` of byte `at` of `text` (lines and columns from 1).
std::string place(const std::string& file, const std::string& text, std::size_t at);

// NCCL topology XML: a box as NCCL dumps it (NCCL_TOPO_DUMP_FILE).

enum class Links { none, nvswitch, mesh };

struct Box {
    int gpus = 8;
    int sm = 90;
    Links links = Links::nvswitch;
    bool nics = true;
    int per_link = 2;  ///< NVLinks per GPU pair (mesh) or per GPU and NVSwitch
};

/// The bus id of GPU g.
std::string busid(int g);
/// The box's topology XML as NCCL dumps it.
std::string nccl_box(const Box& b);

}  // namespace collsched::test::hostile4

namespace collsched::test::hostile5 {

/// The fifth campaign's seed (tests/tools/test_hostile_fifth.cpp).
inline constexpr unsigned kSeed5 = 20261127u;
/// A case under `--timeout S` ends within S + kSlack seconds: the 1 s of the contract, plus a loaded 2-core machine's.
inline constexpr double kSlack = 3;

/// A probe whose exit may be 0 or 2 (a reader may read or refuse) or `or_code`; on 0, `then` reads back what it wrote.
inline hostile4::Probe either(hostile::Case c, std::string then = "", int or_code = -1) {
    hostile4::Probe p = hostile4::probe(std::move(c));
    p.either = true;
    p.then = std::move(then);
    if (or_code >= 0) p.c.or_code = or_code;
    return p;
}

}  // namespace collsched::test::hostile5
