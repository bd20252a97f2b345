// install_ops(): fills the engines' op tables with every op family of core/ops/<family>/.
//
// The engines (the op registry and the multi-output expansions and decompositions of core/graph,
// the VJP and JVP rules of core/autodiff, the interpreter's kernels, the lowering rules) own their
// tables empty, with a registration API, and name no op family; this library (stax_ops, above
// them in cmake/CoreModules.cmake) fills them. Reading a table before install_ops() throws a
// stax::Error that names this call (docs/DECISIONS.md, "Op tables filled by install_ops").
//
// Every entry point that builds a pipeline calls it: the Compiler and CompiledFunction of
// core/driver, the stax CLI, the conformance suite, the tests' main, benches, examples, fuzzers.
#pragma once

namespace stax {

class OpRegistry;

// Idempotent and thread-safe (std::call_once): the first call fills the tables, later calls (from
// any thread) return once they are filled. The tables are immutable afterwards.
void install_ops();

// Fills `r` with the schemas of every op family: a registry of one's own (a test adding ops of
// its own to a graph's registry). The default registry is install_ops()'s.
void register_all_ops(OpRegistry& r);

}  // namespace stax
