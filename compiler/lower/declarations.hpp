/** \file
 * The declarations of a schedule, evaluated: the `topology` statement becomes a Topology (with
 * the program's messages and the router numbering that r(level, index) reads), `model` a Model and
 * a lowering policy, `collective` a Collective. Part of the evaluate pass (compiler/lower/evaluate.hpp),
 * which calls them when it meets the declarations; errors are EvalErrors (E030..E033, E053) or
 * reports through the Env's Reporter.
 */
#pragma once

#include "compiler/lower/env.hpp"
#include "compiler/core/model.hpp"

namespace collsched::compiler {

/// Builds the topology of a `topology` statement into `env` (topo, messages, router levels).
void build_topology(Env& env, const XStmt& s);

/// The model of a `model` declaration on top of `base`; its `policy` key goes to `policy`.
Model build_model(Env& env, const ast::ModelDecl& d, Model base, LoweringPolicy& policy);

/// The collective of a `collective` declaration; the topology is built.
Collective build_collective(Env& env, const ast::CollectiveDecl& d);

}  // namespace collsched::compiler
