# The layering of core/ (DESIGN.md §5): one SHARED library stax_<module> per folder core/<module>,
# lowest first, each listing the lower modules it may use. This table is the only copy: core/
# builds its libraries from it (stax_add_core_module below) and the `layering` test
# (tests/layering/check_layering.py) checks every #include "core/<m>/..." against it.
#
# Format (read by the check too): one `set(STAX_CORE_DEPS_<module> <deps...>)` per module.
# A module whose folder does not exist yet (scheduler, until it lands) is skipped by the build; its
# dependents link it once it exists.
set(STAX_CORE_MODULES
  support types graph tensor autodiff partition interpreter functional ir policy lowering ops
  scheduler codegen config backend runtime cache driver)

set(STAX_CORE_DEPS_support)
# Element types, tensor metadata and the 16-bit float storage types: the vocabulary of both the
# graph and the tensors, so neither depends on the other.
set(STAX_CORE_DEPS_types support)
set(STAX_CORE_DEPS_graph types support)
set(STAX_CORE_DEPS_tensor types support)
set(STAX_CORE_DEPS_autodiff graph)
set(STAX_CORE_DEPS_partition autodiff graph)
set(STAX_CORE_DEPS_interpreter tensor graph)
# Functional differentiation on the interpreter (jvp, vjp, hvp, jacobian, hessian): autodiff's
# graphs run by the interpreter, above both.
set(STAX_CORE_DEPS_functional autodiff interpreter tensor graph)
set(STAX_CORE_DEPS_ir graph)
set(STAX_CORE_DEPS_policy ir)
set(STAX_CORE_DEPS_lowering ir policy graph)
# The op library: every op family (core/ops/<family>/: schemas, inference, decompositions, VJP /
# JVP rules, interpreter kernels, lowering rules) and install_ops(), which fills the engines'
# empty tables. No engine below it names an op family.
set(STAX_CORE_DEPS_ops support types graph tensor autodiff interpreter ir policy lowering)
set(STAX_CORE_DEPS_scheduler ir policy lowering graph)
set(STAX_CORE_DEPS_codegen ir lowering scheduler)
set(STAX_CORE_DEPS_config support)
set(STAX_CORE_DEPS_backend config policy graph)
set(STAX_CORE_DEPS_runtime tensor interpreter ir lowering codegen backend scheduler)
# The persistent kernel cache: bytes keyed by bytes, no graph, no plugin ABI (issue 11).
set(STAX_CORE_DEPS_cache support)
set(STAX_CORE_DEPS_driver
  support types graph tensor autodiff partition interpreter functional ir policy lowering ops
  scheduler codegen config backend runtime cache)

# Only core/backend and core/codegen may include the plugin ABI ("stax/plugin_api.h",
# "stax/sdk/backend.hpp", "stax/sdk/plugin.hpp"); every module may use the SDK's vocabulary
# headers (ops.def, types.hpp, scalar_ops.hpp).
set(STAX_CORE_PLUGIN_ABI_MODULES backend codegen)

# stax_add_core_module(<module>): the SHARED library stax_<module> from every .cpp under
# core/<module>, linking its declared modules (those that exist) PUBLIC and nothing else, with
# -Wl,--no-undefined so a use of an undeclared module fails to link. Does nothing when
# core/<module> does not exist. Per-module extras (third-party libraries, definitions) are added
# by the caller on the target. Fuzzing builds (STAX_FUZZ) link without --no-undefined: the
# coverage callbacks of -fsanitize=fuzzer-no-link are defined by libFuzzer in the executable.
function(stax_add_core_module module)
  set(dir ${CMAKE_SOURCE_DIR}/core/${module})
  if(NOT IS_DIRECTORY ${dir})
    return()
  endif()
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${dir}/*.cpp)
  add_library(stax_${module} SHARED ${sources})
  target_include_directories(stax_${module} PUBLIC ${CMAKE_SOURCE_DIR})
  target_link_libraries(stax_${module} PUBLIC stax_sdk)
  foreach(dep IN LISTS STAX_CORE_DEPS_${module})
    if(IS_DIRECTORY ${CMAKE_SOURCE_DIR}/core/${dep})
      target_link_libraries(stax_${module} PUBLIC stax_${dep})
    endif()
  endforeach()
  if(NOT STAX_FUZZ)
    target_link_options(stax_${module} PRIVATE -Wl,--no-undefined)
  endif()
  # Calls between functions of one module bind at link time, not through the PLT: the first
  # graph a process compiles resolved ~180 such symbols lazily (~0.15 ms, issue 11), and every
  # call paid the PLT jump. Data (statics of inline functions, typeinfo) stays interposable.
  target_link_options(stax_${module} PRIVATE -Wl,-Bsymbolic-functions)
endfunction()
