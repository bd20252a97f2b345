# stax_add_test(NAME src... [LIBS ...]): one GoogleTest executable per test file, one ctest entry each.
# Its main (tests/support/test_main.cpp) fills the engines' op tables (install_ops) first.
find_package(GTest REQUIRED)
function(stax_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;DEPENDS" ${ARGN})
  if(NOT TARGET stax_test_main)
    add_library(stax_test_main STATIC ${CMAKE_SOURCE_DIR}/tests/support/test_main.cpp)
    target_link_libraries(stax_test_main PUBLIC stax_core GTest::gtest)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE stax_core stax_conformance GTest::gtest stax_test_main ${T_LIBS})
  target_compile_definitions(${name} PRIVATE
    STAX_SOURCE_DIR="${CMAKE_SOURCE_DIR}" STAX_BINARY_DIR="${CMAKE_BINARY_DIR}"
    STAX_PLUGIN_DIR="${STAX_PLUGIN_DIR}")
  if(T_DEPENDS)
    add_dependencies(${name} ${T_DEPENDS})
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300)
endfunction()

# stax_add_folder_tests(): every *_test.cpp of the calling folder (tests/<area>/CMakeLists.txt) as
# its own GoogleTest executable and ctest entry, named after the file, built after the plugins and
# the stax CLI. A new tests/<area>/ folder needs a CMakeLists.txt calling this, then
# stax_finish_test_folder(), and one add_subdirectory line in tests/CMakeLists.txt.
function(stax_add_folder_tests)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp)
  set(deps "")
  if(TARGET stax_all_plugins)
    set(deps stax_all_plugins)
  endif()
  foreach(src ${srcs})
    get_filename_component(stem ${src} NAME_WE)
    stax_add_test(${stem} SOURCES ${src} DEPENDS ${deps} stax)
  endforeach()
endfunction()

# stax_finish_test_folder(): call last in every folder that adds tests (a TEST property can only
# be set in the directory of its add_test). Hermetic runs (issue 11): no test reads or writes a
# user's kernel cache (the shipped configs name ~/.cache/stax), so every ctest entry of the folder
# runs with STAX_CACHE_DIR=off (kernel_cache_test / cuda_cache_test choose their own temporary
# directories); then the sanitizer builds' settings (cmake/SanitizerTests.cmake).
function(stax_finish_test_folder)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT STAX_CACHE_DIR=off)
  endforeach()
  stax_sanitizer_test_settings()
endfunction()

# The Python whose torch (2.x, from PyPI) is the reference of every torch-backed test: the schema
# check, the FX printouts, OpInfo (tests/aten/), nn_torch_check, model_ops_torch_test and the
# VJP-vs-autograd test. Default: the project's virtual environment made by scripts/setup.sh.
set(STAX_TORCH_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python CACHE FILEPATH
    "the Python interpreter with torch 2.x that the torch-backed tests compare against")

# stax_add_torch_test(NAME SCRIPT [ARGS ...]): a ctest entry running SCRIPT with STAX_TORCH_PYTHON.
# It skips (exit 77, "SKIPPED: ...") when that interpreter does not exist; the script itself skips
# the same way when torch does not import (tests/aten/common.py).
function(stax_add_torch_test name script)
  add_test(NAME ${name} COMMAND sh -c
    "[ -x \"$0\" ] || { echo \"SKIPPED: no Python at $0 (STAX_TORCH_PYTHON; scripts/setup.sh makes the .venv)\"; exit 77; }; exec \"$0\" \"$@\""
    ${STAX_TORCH_PYTHON} ${script} ${ARGN})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/StaxPlugin.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/SanitizerTests.cmake)
