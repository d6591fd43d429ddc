/** \file
 * Collectives through a switch that reduces and multicasts (NVLink SHARP, docs/semantics.md,
 * "Reductions"; issue 44): constructions that build send tables directly, for a box of GPUs on
 * one router declared with "reduce" and "multicast" (docs/topologies.md, "switches"), and for
 * several such boxes joined GPU to GPU along rails. Every table is checked by the direct checker
 * in tests (tests/verifier/test_nvls.cpp); docs/time.md, "NVLS and SHARP constructions", gives the schedules.
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

/// NCCL's layout of its one-box NVLS allreduce for one size (nccl_nvls_layout,
/// verifier/time/nccl_tuner.hpp gives it per NCCL version): `channels` NCCL channels side by
/// side, each one thread block that moves `loops` x `heads` chunks in sequence (per loop one chunk
/// for each of the first `heads` heads, head h's chunk reduced by GPU h).
struct NcclNvlsLayout {
    std::uint32_t channels = 1, loops = 1, heads = 1;
    bool operator==(const NcclNvlsLayout&) const = default;
};

/// NCCL's NVLS allreduce in that layout (NVIDIA/nccl src/device/all_reduce.h, NVLS RunWorkElement:
/// per channel the scatter warps loop over the heads, the head's reduce warps reduce through the
/// switch and store the sum, the gather warps loop over the heads): chunk c = q x channels + b is
/// the q-th of channel b's sequence, owned by head q mod heads. The owner's share goes through the
/// switch (NvlsPlan::owner_through_switch). With H = heads, the q-th are sent in steps 4q + 1 (every
/// GPU to the switch: the scatter), 4(q + H) + 2 (the sum to the head), 4(q + H) + 3 (the head to
/// the switch) and 4(q + H) + 4 (to the others): a GPU's transfers into the switch go in program
/// order (runtime/timing.hpp), a store after the scatters of the loop that follows its own, so no
/// store holds up a scatter of its loop. In each step channel b's transfer is the b-th on its link,
/// so under the nccl executor it runs on the link's b-th connection, one thread block's
/// (runtime/timing.hpp connections_per_channel), after that channel's chunk before it.
SendTable nccl_nvls_allreduce(std::shared_ptr<const Topology>, const NcclNvlsLayout&);

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

namespace collsched::compose {

/// Whether router r is a switch of the network between the boxes rather than a box's own: it
/// reduces and multicasts and its channels to processors are all slower than a quarter of the
/// fastest channel at a processor (a NIC's 50 GB/s against NVLink's 450: the machine view's rule,
/// compiler/topology/machine_view.hpp). nvls_boxes() leaves such routers out.
bool fabric_switch(const Topology&, Node r);

/// SHARP across boxes (InfiniBand switches that reduce and multicast, `collsched machine ...
/// --sharp`; issue 44). What the constructions below share: per box its GPUs, and per local index
/// i (a GPU whose NIC reaches a fabric switch in every box) the tree over the fabric switches that
/// joins the boxes' GPU i (a star at rail switch i; leaves under a spine in a fat tree).
struct SharpPlan {
    std::uint32_t pieces = 1;  ///< pieces per head, pipelined one step apart
    /// In the box: true, NVLS (the boxes' switches reduce to the head and multicast from it); false,
    /// direct (the other GPUs send their values to the head, which sends the sum back to each).
    bool nvls = true;
    /// NCCL's NVLS + CollNet form: the head's own share goes through its box's switch too.
    bool owner_through_switch = false;
};

/// The SHARP allreduce: per piece and head index i, the box reduces its values to its GPU i (NVLS
/// or direct), every GPU i sends its box's sum up the fabric tree, whose switches add the boxes'
/// sums and multicast the total back down, and each GPU i gives it to its box (NVLS multicast or
/// direct). Each GPU's NIC carries M / heads each way. With plan.nvls = false it is NCCL's CollNet
/// Direct (src/device/all_reduce.h, RunWorkColl<..., NCCL_ALGO_COLLNET_DIRECT>: scatter to the
/// heads, recvReduceSend to the network, recv from it and send to the box's GPUs).
SendTable sharp_allreduce(std::shared_ptr<const Topology>, const SharpPlan& = {});

/// NCCL's CollNet Chain (src/device/all_reduce.h, RunWorkColl<..., NCCL_ALGO_COLLNET_CHAIN>): per
/// channel a chain through the box that starts at the GPU of the channel's NIC and visits the
/// others in NVSwitch order (next GPU first); the values are reduced up the chain to its head,
/// which sends the box's sum to the fabric and, with the total back, sends it down the chain.
/// `channels` chains (NCCL gives CollNet Chain the ring's channel count), channel c on NIC c mod
/// NICs per box; plan.pieces pieces per channel.
SendTable collnet_chain_allreduce(std::shared_ptr<const Topology>, std::uint32_t channels, const SharpPlan& = {});

/// What the SHARP constructions see of a machine (for the pieces for a size): the boxes, their
/// size, the head indices (empty when no fabric switch reaches a GPU of every box) and whether
/// the boxes have NVLS (else the box's part is direct).
struct SharpShape {
    std::uint32_t boxes = 0, per_box = 0;
    std::vector<std::uint32_t> heads;
    bool nvls = false;
};
SharpShape sharp_shape(const Topology&);

}  // namespace collsched::compose
