/** \file
 * An NCCL tuner configuration (`collsched tune`, docs/exports.md "NCCL tuner configuration"): for
 * a machine, every collective NCCL's tuner plugins cover and every size of a grid, the NCCL
 * algorithm, protocol and channel count the executor model (runtime/executor) predicts fastest,
 * beside the one NCCL's own tuning model picks (nccl_model_time, src/graph/tuning.cc), written as
 * the CSV that NVIDIA/nccl's example tuner plugin reads (plugins/tuner/example/plugin.c).
 *
 * The algorithms timed are NCCL's as verifier/constructions/nccl builds them for the machine (ring, tree,
 * PAT; broadcast and reduce on the rings at the best of NCCL's chunk counts) and, where the boxes'
 * switches reduce, NVLS (one box) or NVLS_TREE (several) as verifier/constructions/compose builds them in NCCL's
 * form. Each algorithm runs only the protocols NCCL's model gives it at that size (the others are
 * NCCL_ALGO_PROTO_IGNORE in NCCL's cost table, where plugin.c's line would be skipped). A size gets
 * a line only where NCCL's pick, timed by the same model, is slower than the fastest by more than
 * the model's error (ExecutorModel::error): inside it NCCL's own choice stays.
 *
 * Ranges: neighbouring grid sizes with the same line (or both without one) are merged; between two
 * sizes that differ the boundary is where the two choices' times cross (find_crossover, to 0.1 %),
 * or where the gain leaves the error. plugin.c matches minBytes <= nBytes <= maxBytes, so the
 * ranges are inclusive and disjoint: each starts one byte after the previous one ends.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "verifier/constructions/compose/nvls.hpp"
#include "runtime/executor/executor.hpp"
#include "support/budget.hpp"
#include "verifier/constructions/nccl/nccl.hpp"

namespace collsched {

/// The collectives NCCL's tuner covers (plugin.c parseCollType), in the order the file lists them.
inline constexpr CollectiveKind tuner_collectives[] = {CollectiveKind::allreduce, CollectiveKind::allgather, CollectiveKind::reduce_scatter,
                                                        CollectiveKind::broadcast, CollectiveKind::reduce};
/// plugin.c's spelling of a collective ("reducescatter"; it reads any other word as allreduce).
std::string_view tuner_collective_name(CollectiveKind);
/// plugin.c's spelling of a protocol: "ll", "ll128", "simple".
std::string_view tuner_protocol_name(nccl::Protocol);

/// What a line says: an algorithm in plugin.c's spelling (ring, tree, pat, nvls, nvls_tree), a
/// protocol and the channels.
struct TunerChoice {
    std::string_view algorithm;
    nccl::Protocol protocol = nccl::Protocol::simple;
    std::uint32_t channels = 0;
    bool operator==(const TunerChoice&) const = default;
};

/// One size of the grid.
struct TunerPoint {
    double size = 0;                  ///< NCCL's nBytes
    TunerChoice best;                 ///< the executor model's fastest
    double best_seconds = 0;
    std::optional<TunerChoice> nccl;  ///< NCCL's own pick (its tuning model's least time)
    double nccl_seconds = 0;          ///< NCCL's pick under the executor model; 0: not timed here
    bool line = false;                ///< the gain is outside the model's error: the file says `best`
    double gain() const { return nccl_seconds > 0 && best_seconds > 0 ? nccl_seconds / best_seconds : 1; }
};

/// One size range of a collective: grid points first..last, bytes min..max inclusive.
struct TunerRange {
    std::uint64_t min_bytes = 0, max_bytes = 0;
    std::size_t first = 0, last = 0;
    std::optional<TunerChoice> line;  ///< nullopt: a tie, no line (NCCL's own choice stays)
};

struct TunerCollective {
    CollectiveKind kind = CollectiveKind::allreduce;
    std::vector<TunerPoint> points;  ///< one per size of the grid
    std::vector<TunerRange> ranges;
    std::vector<std::string> notes;  ///< algorithms not timed here, and why
};

struct TunerConfig {
    std::string machine;
    std::uint32_t nodes = 1, ranks = 1;  ///< plugin.c's nNodes and nRanks
    std::string executor;
    double error = 0;                     ///< the model's relative error: gains within it are ties
    std::vector<TunerCollective> collectives;
};

struct TunerOptions {
    std::vector<CollectiveKind> collectives{std::begin(tuner_collectives), std::end(tuner_collectives)};
    std::vector<double> sizes;  ///< increasing
    ExecutorModel executor;     ///< NCCL's (built-in or calibrated)
    RunLimits limits;           ///< polled between predictions (LimitReached)
};

/// The piece counts NCCL's NVLS (one box) or NVLS_TREE (several) is timed at, at `size`: on one
/// box 1, 2, 4, ... 256, across boxes 1, 4, 16, 64 (their tables grow with the boxes), up to the
/// most that keep a piece at 4 KiB or more a GPU. The fastest is taken: the pieces stand for NCCL's
/// chunks in flight, whose per-chunk costs a real kernel overlaps where the executor model's
/// per-piece costs grow with the pieces (one count per size, pieces of 64 KiB, put NVLS on one H100
/// box 15 to 23 % below Azure's ND H100 v5 times from 256 MiB, 5 % above at 128 MiB).
std::vector<std::uint32_t> nccl_nvls_piece_counts(const nccl::System&, double size);

/// NCCL's layout of its one-box NVLS allreduce of `size` bytes over `heads` GPUs (one head each),
/// for the NCCL `version` that ran it ("2.18.5"), as its source lays it; nullopt for a version whose
/// layout is not modelled (2.18.x and 2.20.x are: runtime/executor/calibration/README.md, "NCCL's
/// NVLS layout"). 16 NVLS channels (src/transport/nvls.cc:231 NVLS_NCHANNELS); the chunk NCCL
/// picks for the size (2.18.5 src/enqueue.cc:1339-1345, 2.20.5 :1704-1711: 128 KiB, 64 KiB below
/// 1 GiB, 32 KiB below 64 MiB, 16 KiB below 8 MiB). 2.18.x: channel b takes the bytes from b x heads
/// x chunk of each loop (src/collectives/device/all_reduce.h:387-411), so below 128 KiB one channel
/// moves every chunk. 2.20.x: each channel takes size / 16, rounded up to 4 KiB
/// (src/enqueue.cc:804, :457, :216 with include/enqueue.h:17 NCCL_SIMPLE_ALIGNMENT), in loops of
/// heads x chunk, the last loop's chunk its rest / heads rounded up to 4 KiB (:232-234;
/// src/device/all_reduce.h:368-394). Chunks are taken equal (size / chunks: exact for sizes that are
/// powers of two) and more than 16 loops are merged into 16, which keeps the table within 2,048 chunks.
std::optional<compose::NcclNvlsLayout> nccl_nvls_layout(std::string_view version, std::uint32_t heads, double size);

/// The configuration of the machine. InputError where NCCL's model does not describe the machine,
/// the executor is not NCCL's, or a collective is not one the tuner covers.
TunerConfig nccl_tuner_config(std::shared_ptr<const Topology>, const TunerOptions&);

/// The file plugin.c reads: comment lines (#), then per collective and range with a line
/// `collective,minBytes,maxBytes,algorithm,protocol,channels,nNodes,nRanks`.
std::string tuner_file(const TunerConfig&);
/// The table `collsched tune` prints: per range the line (or the tie), NCCL's own pick, the gain.
std::string tuner_text(const TunerConfig&);
/// The same as one JSON object (with every grid point), with its newline.
std::string tuner_json(const TunerConfig&);

}  // namespace collsched
