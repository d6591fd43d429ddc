/** \file
 * Link-class counting (issue 28; docs/synthesis.md, "Lower bounds"): a lower bound for
 * personalized collectives on machines whose links differ in kind (NVLink inside a box, NICs
 * between boxes). For a class E of channels (those of one link speed of a graph file), every
 * message m(s, d) crosses at least h_E(s, d) channels of E on any walk from s to d (h_E: the
 * 0-1 distance, channels of E weighing 1, the others 0), each crossing is a transfer on a channel
 * of E, and the channels of E carry at most K_E transfers per step together (the least of
 * step_capacity and the per-node count: every sender's, or every receiver's, class channels cut
 * by each of its link groups and its ports). So T >= ceil(sum h_E / K_E). On multibox 4 x 8 alltoall the
 * NIC class gives 768 / 32 = 24; on the 4 x 8 rail machine the NVLink class gives 896 / 32 = 28
 * (a message to another local index must cross an NVLink: the rails join equal indices only).
 */
#pragma once

#include <vector>

#include "verifier/synth/problem/instance.hpp"

namespace collsched {

/// One bound per link class (at least two classes; graph files with link speeds), for
/// personalized collectives; empty otherwise, or when the walk over sources would exceed 2 * 10^8
/// channel visits.
/// `limits` polled in the group's check and every 65,536 goals (LimitReached).
std::vector<Bound> class_bounds(const SynthInstance&, const RunLimits& limits = {});

}  // namespace collsched
