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
};

/// A probe of `c` with the first generations' contract only.
Probe probe(Case c);

/// Runs every probe of a category in its own scratch directory, and says the campaign's count.
void run_probes(const std::string& category, const std::vector<Probe>& probes);

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
