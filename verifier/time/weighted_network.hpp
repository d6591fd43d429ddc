/** \file
 * The capacity network of one round (verifier/synth/bounds/capacity_network.hpp) on link speeds: every
 * arc gets a bandwidth in bytes per second and the least latency of the channels through it
 * (a channel its own; a link group its channels' least; a port the sum of its channels'
 * bandwidths, i.e. ports are not counted, and their least latency). The flows run on integer
 * capacities: each bandwidth rounded up to a unit of the largest / 2^20, so a cut is never
 * undercounted; a set found that way is then valued on the exact bandwidths. Not a public API.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/core/model.hpp"
#include "runtime/timing.hpp"
#include "support/budget.hpp"
#include "support/text.hpp"
#include "compiler/topology/topology.hpp"
#include "verifier/synth/bounds/capacity_network.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched::time_internal {

class WeightedNetwork {
public:
    /// `speeds`: what the time model times the channels and groups at (time_bound.hpp: the
    /// ideal executor under --link, or one executor's protocol resolved by with_network_class).
    /// `asynchronous`: the bounds are for the asynchronous time only, where a group's holding also ends the message
    /// before the arrival of a transfer over a channel no faster than the group (group_delay).
    WeightedNetwork(const Topology&, const Model&, const TimeOptions& speeds, bool reverse, bool asynchronous = false);

    const Topology& topology() const { return t_; }
    const CapacityNetwork& net() const { return net_; }
    std::uint32_t processors() const { return t_.processors(); }

    /// The arcs from `side` (a vertex set) to its complement: bandwidths, latencies and texts.
    /// With `onward` (per node: the least latency from it to a processor, alpha_to_processors),
    /// on a network that is not reversed, an arc's latency is the least over its channels of the
    /// channel's alpha plus `onward` at its head: what crosses into a router (a rail switch) has
    /// that far still to go before a processor holds it, whoever adds or copies on the way.
    /// With `release` as well (per node: a crossing over a channel leaves its tail no earlier than this; 0 where no
    /// such time is proved, as at a router that cuts through): the arc's latency is the least release at its
    /// channels' tails plus the least of their alpha and `onward` at the head (its window), and an arc with no way
    /// on (infinite) is left out (windows on a cut, time_bound_windows.cpp).
    void crossing(const std::vector<char>& side, TimeTerm& term, const std::vector<double>* onward = nullptr,
                  const std::vector<double>* release = nullptr) const;
    /// The arcs from `side` to its complement (indices into net().arcs).
    std::vector<std::size_t> leaving(const std::vector<char>& side) const;
    /// Arc i's bandwidth and latency, with `onward` and `release` as crossing() takes them (an infinite latency: an
    /// arc with no way on, which crossing() leaves out).
    CutArc arc(std::size_t i, const std::vector<double>* onward = nullptr, const std::vector<double>* release = nullptr) const;
    /// Arc i with its speed and, where `alpha` is above its own latency, that latency and `extra` ("its window").
    std::string arc_text(std::size_t i, double alpha, const char* extra) const;
    /// The integer capacity of the arcs leaving `side`.
    std::uint64_t cut(const std::vector<char>& side) const;

    /// ForestColl's cut: the set S of nodes with the largest |S ∩ P| / c(S) among those with a
    /// processor outside (on the reversed network for reduce_scatter); one flow per sink
    /// processor of `sinks`. The side of the best set.
    std::vector<char> densest_cut(const std::vector<std::uint32_t>& sinks, std::uint32_t& flows, const RunLimits& limits = {});

    /// The region with the least capacity out of it that holds every processor of `from` and none
    /// of `to` (a max flow from `from` to `to`): its side.
    std::vector<char> region(const std::vector<std::uint32_t>& from, const std::vector<std::uint32_t>& to, std::uint32_t& flows,
                             const RunLimits& limits = {});

private:
    /// Before a max flow, which cannot be stopped once started (Boost's push-relabel): throws
    /// LimitReached when a limit is reached or when the last flow on this network took longer
    /// than the time left (the flows of one network cost about the same). `what` names the term.
    void before_flow(const RunLimits& limits, std::string_view what) const;
    /// The least over the arc's channels of `release` at the tail (none: 0) plus the least of alpha plus `onward` at
    /// the channel's head (a group's channels: group_delay).
    double window_shift(const CapacityArc& a, const std::vector<double>* release, const std::vector<double>& onward) const;
    /// How long before a transfer over channel c arrives its holding of group g has ended: c's alpha (Lemma 1: the
    /// group is held for the bytes, the message is the connection's); asynchronous, and c no faster than g, its
    /// channel_delay (the message too: the transfer holds its connection msg + b/B_c >= msg + b/B_g from the start it
    /// holds g at, and arrives alpha after that hold; time_bound_windows.cpp, "The group's message").
    double group_delay(ChannelId c, std::uint32_t g) const;
    /// Times one flow for before_flow.
    template <class F>
    auto timed(F&& flow) {
        const auto t0 = Clock::now();
        auto r = flow();
        last_flow_s_ = seconds_since(t0);
        return r;
    }
    double last_flow_s_ = 0;

    const Topology& t_;
    TimeOptions speeds_;
    bool reverse_ = false;
    bool asynchronous_ = false;
    CapacityNetwork net_;
    std::vector<double> bw_, alpha_;
    std::vector<std::int64_t> cap_;
    FlowSolver flow_;
};

/// What every transfer on channel c waits at least between its last byte leaving and its arrival,
/// beyond its bytes on the channel: the channel's alpha (with the executor's hop) plus the
/// executor's message cost, which every transfer holds its connection or channel for before its
/// end (runtime/timing.cpp AsyncRun::start, sync_time; docs/time.md, "The bound on an executor").
/// A link group's holding does not include the message: its arcs take the channels' alpha only.
double channel_delay(const Topology&, ChannelId c, const TimeOptions& speeds);

/// Latency of the channels: Dijkstra from `src` over channels (reversed: into `src`), channel_delay as length.
std::vector<double> alpha_distances(const Topology&, const TimeOptions& speeds, std::uint32_t src, bool reversed);
/// Per channel its channel_delay under `speeds`.
std::vector<double> channel_delays(const Topology&, const TimeOptions& speeds);
/// The same from the nearest of `sources` (reversed: to the nearest), on per-channel `delays` (channel_delays).
std::vector<double> alpha_distances(const Topology&, const std::vector<double>& delays, const std::vector<std::uint32_t>& sources, bool reversed);

/// Per node the least latency (channel_delay as length) from it to any processor (0 at a processor).
std::vector<double> alpha_to_processors(const Topology&, const TimeOptions& speeds);

/// Hops (channels crossed) from `src` to every node (unreachable: UINT32_MAX).
std::vector<std::uint32_t> hop_distances(const Topology&, std::uint32_t src);

/// Partitions of the processors tried by the allreduce gossip: per processor its set; `name`
/// says which ("boxes: the components of channels of at least 300 GB/s", "rails of ...").
struct Partition {
    std::string name;
    std::vector<std::uint32_t> set;
    std::uint32_t sets = 0;
};
std::vector<Partition> partitions(const Topology&, const TimeOptions& speeds);

using support::runs_text;

}  // namespace collsched::time_internal
