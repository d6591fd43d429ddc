/** \file
 * Collectives through a switch that reduces and multicasts (NVLink SHARP, docs/semantics.md,
 * "Reductions"; issue 44): constructions that build send tables directly, for a box of GPUs on
 * one router declared with "reduce" and "multicast" (docs/topologies.md, "switches"), and for
 * several such boxes joined GPU to GPU along rails. Every table is checked by the direct checker
 * in tests (tests/verifier/test_nvls.cpp); docs/synthesis.md, "NVLS", gives the schedules.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/table/send_table.hpp"

namespace collsched::compose {

/// One box: its GPUs (processor numbers, in order) and its switch (a router joined to each of
/// them both ways that can reduce and multicast).
struct NvlsBox {
    std::vector<Node> gpus;
    Node sw;
};

/// The boxes of a topology: every router that can reduce and multicast with the processors it is
/// joined to both ways. Throws InputError when some processor is on no such switch, or a switch
/// serves fewer than 2.
std::vector<NvlsBox> nvls_boxes(const Topology&);

struct NvlsPlan {
    /// Pieces the buffer is cut into per owner (chunks C = pieces * GPUs of a box): piece j of
    /// owner i is chunk j * P + i (allreduce) or i * pieces + j (reduce_scatter, whose owner of
    /// block i must be i); pieces pipeline one step apart.
    std::uint32_t pieces = 1;
    /// Allreduce only: of every `direct_period` pieces the last goes over the GPUs' direct
    /// channels (all-pairs reduce-scatter and allgather) instead of the switch, so that the links
    /// the switch's efficiency leaves idle carry data too (0: every piece through the switch).
    std::uint32_t direct_period = 0;
    /// NCCL's form (its NVLS algorithm as it runs): the owner's own contribution goes through the
    /// switch too (multimem.ld_reduce reads every GPU, the owner included) and the owner's buffer
    /// takes the switch's sum; each GPU then sends and receives (1 + 1/P) M. The baseline.
    bool owner_through_switch = false;
};

/// NVLS allreduce on one box (NCCL's NVLS algorithm, without the owner's own share through the
/// switch): per piece, every GPU sends its contribution to the chunk of owner i to the switch
/// (step t), the switch adds the P - 1 contributions and sends the sum to owner i, which adds its
/// own (t + 1), owner i stores the sum into the switch (t + 2), which multicasts it to the other
/// P - 1 (t + 3). Each GPU sends and receives its buffer exactly once: M each way.
SendTable nvls_allreduce(std::shared_ptr<const Topology>, const NvlsPlan& = {});
/// NVLS reduce-scatter: the first two steps of the allreduce per piece.
SendTable nvls_reduce_scatter(std::shared_ptr<const Topology>, const NvlsPlan& = {});
/// NVLS allgather: per piece, every GPU stores its chunk into the switch (t), which multicasts it
/// to the other P - 1 (t + 1).
SendTable nvls_allgather(std::shared_ptr<const Topology>, const NvlsPlan& = {});

/// NVLS_TREE-like allreduce on k boxes joined rail by rail (GPU i of every box linked to GPU i of
/// every other box): reduce-scatter through each box's switch, then the owners of one chunk (one
/// per box, the same local index) allreduce it over their rail (a ring: reduce-scatter and
/// allgather over the k owners), then each owner multicasts the result through its switch.
SendTable nvls_rail_allreduce(std::shared_ptr<const Topology>, const NvlsPlan& = {});

/// NCCL's NVLS_TREE allreduce (src/device/all_reduce.h, RunWorkColl<..., NCCL_ALGO_NVLS_TREE>):
/// per chunk, every box's switch reduces all of its GPUs' values (the head's too, as
/// multimem.ld_reduce reads every GPU) to the chunk's head (GPU i of the box), the heads of one
/// rail reduce up and broadcast down NCCL's double binary tree over the boxes (ncclGetDtree; half
/// of the chunks on each tree), and every head multicasts the sum through its switch. The baseline
/// across boxes.
SendTable nvls_tree_allreduce(std::shared_ptr<const Topology>, const NvlsPlan& = {});

/// The pieces for a buffer of `bytes` bytes per rank on P GPUs per box: as many as keep every
/// chunk at least `min_chunk_bytes` (default 64 KiB, about what one NVLS channel of NCCL moves per
/// step), at most 256 and at least 1. The time model has no cost per message, so more pieces
/// never cost time there; the floor keeps tables small and messages the size executors move.
std::uint32_t nvls_pieces_for_size(std::uint32_t P, double bytes, double min_chunk_bytes = 65536);

/// The direct period that balances the switch's channels against a GPU's links (NvlsPlan):
/// through the switch a piece costs M_p / B_sw on the GPU's switch channel and M_p / B_gpu on its
/// links, over the direct channels 2 (P - 1) / P M_p / B_gpu on its links only; the share f
/// through the switch with f / B_sw = (f + 2 (P - 1) / P (1 - f)) / B_gpu makes both equal.
/// 0 when the switch channel is as fast as the links (every piece through the switch).
std::uint32_t nvls_direct_period(const Topology&);

}  // namespace collsched::compose
