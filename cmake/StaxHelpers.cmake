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
include(${CMAKE_CURRENT_LIST_DIR}/StaxPlugin.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/SanitizerTests.cmake)
