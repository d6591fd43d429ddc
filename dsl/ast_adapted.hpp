/** \file
 * Boost.Fusion adaptations of the AST structs that the grammar fills by attribute propagation
 * (the members in grammar order; `loc` is set by the rules' on_success annotation). Included
 * only by dsl/parser_def.hpp.
 */
#pragma once

#include <boost/fusion/include/adapt_struct.hpp>

#include "dsl/ast.hpp"

BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Call, name, args)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Param, name, value)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Let, name, value)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::For, var, first, last, body)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::If, cond, then_body, else_body)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::StepBlock, step, rounds, body)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Send, src, dst, msg)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Hop, from, to, msg)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Require, msg, at)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Assert, cond, message)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::TopoCall, family, args)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::TopoArg, key, value)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::ModelArg, key, value)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::ModelDecl, timing, args)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::SetItem, first, last)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::CollectiveDecl, name, args, chunks)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Comprehension, var, first, last)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Claim, name, at_most, value)
BOOST_FUSION_ADAPT_STRUCT(collsched::dsl::ast::Bound, kind, value)
