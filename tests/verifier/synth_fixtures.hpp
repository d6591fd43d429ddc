/** \file
 * What the synthesizer's tests share: an instance from a topology spec, a collective and model
 * options, and the spec of a machine file (schedules/machines/).
 */
#pragma once

#include <string>

#include "compiler/core/model.hpp"
#include "compiler/topology/topology.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched::test {

/// The instance of `coll` on `spec` with the topology's model changed by `model` (model options,
/// "" for none), every route allowed.
inline SynthInstance inst(const std::string& spec, const char* coll, const char* model = "") {
    auto topo = Topology::parse(spec);
    return {topo, apply_model_options(topo->default_model(), model), Collective::parse(coll, *topo)};
}

/// As inst, with a reduce-scatter in one chunk per processor.
inline SynthInstance split_instance(const std::string& spec, const std::string& coll, const std::string& model = "") {
    auto t = Topology::parse(spec);
    SynthInstance in{t, apply_model_options(t->default_model(), model), Collective::parse(coll, *t), RouteSpace::any};
    if (in.collective.kind == CollectiveKind::reduce_scatter) in.collective.set_chunks(t->processors(), *t);
    return in;
}

}  // namespace collsched::test
