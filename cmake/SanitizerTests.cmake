# ctest settings of sanitizer builds (issue 12): time limits, and the sanitizer runtime for
# programs built without sanitizers that load our instrumented libraries.
#
# Time limits. A TIMEOUT is a hang guard sized for a plain
# build; under ASan the JIT's Clang allocates through ASan's allocator and every instrumented
# access is checked, under TSan every access is, so the same work takes several times longer
# (compiled_e2e_test: ~5 min plain, > 15 min under ASan on a loaded 2-core machine). In a
# sanitizer build each ctest entry's TIMEOUT (set or default) is multiplied by
# STAX_SANITIZE_TIMEOUT_FACTOR.
#
# Runtime. A program compiled without sanitizers that links an instrumented library (the vendor
# test of conformance_c99, built by the system compiler against the installed conformance
# library) must load the shared sanitizer runtime first ("ASan runtime does not come first in
# initial library list"): every test gets STAX_SANITIZER_RUNTIME (the runtime's path) in its
# environment, and such a program runs with LD_PRELOAD set to it (tests/conformance/
# installed_plugin.sh).
#
# Call stax_sanitizer_test_settings() last in every directory that adds tests (a TEST property can
# only be set in the directory of its add_test).
if(STAX_SANITIZE MATCHES "thread")
  set(stax_default_factor 20)
elseif(STAX_SANITIZE)
  set(stax_default_factor 8)
else()
  set(stax_default_factor 1)
endif()
set(STAX_SANITIZE_TIMEOUT_FACTOR ${stax_default_factor} CACHE STRING
    "multiplier of every test's TIMEOUT (sanitizer builds are slower)")

set(STAX_SANITIZER_RUNTIME "")
if(STAX_SANITIZE)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(stax_rt_name libclang_rt.asan-x86_64.so)  # shared only with -shared-libsan (STAX_FUZZ)
    if(STAX_SANITIZE MATCHES "thread")
      set(stax_rt_name libclang_rt.tsan-x86_64.so)
    endif()
  else()
    set(stax_rt_name libasan.so)  # GCC links its runtimes shared by default
    if(STAX_SANITIZE MATCHES "thread")
      set(stax_rt_name libtsan.so)
    endif()
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${stax_rt_name}
                  OUTPUT_VARIABLE stax_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(IS_ABSOLUTE "${stax_rt}" AND EXISTS "${stax_rt}")
    set(STAX_SANITIZER_RUNTIME "${stax_rt}")
  endif()
endif()

function(stax_sanitizer_test_settings)
  if(NOT STAX_SANITIZE)
    return()
  endif()
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    if(STAX_SANITIZER_RUNTIME)
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
                   STAX_SANITIZER_RUNTIME=${STAX_SANITIZER_RUNTIME})
    endif()
  endforeach()
  if(STAX_SANITIZE_TIMEOUT_FACTOR LESS_EQUAL 1)
    return()
  endif()
  foreach(t IN LISTS tests)
    get_test_property(${t} TIMEOUT limit)
    if(NOT limit)
      set(limit 1500)  # ctest's default
    endif()
    math(EXPR limit "${limit} * ${STAX_SANITIZE_TIMEOUT_FACTOR}")
    set_tests_properties(${t} PROPERTIES TIMEOUT ${limit})
  endforeach()
endfunction()
