# Test time limits in sanitizer builds (issue 12). A TIMEOUT is a hang guard sized for a plain
# build; under ASan the JIT's Clang allocates through ASan's allocator and every instrumented
# access is checked, under TSan every access is, so the same work takes several times longer
# (compiled_e2e_test: ~5 min plain, > 15 min under ASan on a loaded 2-core machine). In a
# sanitizer build each ctest entry's TIMEOUT (set or default) is multiplied by
# STAX_SANITIZE_TIMEOUT_FACTOR. Call stax_scale_test_timeouts() last in every directory that adds
# tests (a TEST property can only be set in the directory of its add_test).
if(STAX_SANITIZE MATCHES "thread")
  set(stax_default_factor 20)
elseif(STAX_SANITIZE)
  set(stax_default_factor 8)
else()
  set(stax_default_factor 1)
endif()
set(STAX_SANITIZE_TIMEOUT_FACTOR ${stax_default_factor} CACHE STRING
    "multiplier of every test's TIMEOUT (sanitizer builds are slower)")

function(stax_scale_test_timeouts)
  if(STAX_SANITIZE_TIMEOUT_FACTOR LESS_EQUAL 1)
    return()
  endif()
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} TIMEOUT limit)
    if(NOT limit)
      set(limit 1500)  # ctest's default
    endif()
    math(EXPR limit "${limit} * ${STAX_SANITIZE_TIMEOUT_FACTOR}")
    set_tests_properties(${t} PROPERTIES TIMEOUT ${limit})
  endforeach()
endfunction()
