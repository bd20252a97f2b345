# stax_add_test(NAME src... [LIBS ...]): one GoogleTest executable per test file, one ctest entry each.
find_package(GTest REQUIRED)
function(stax_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;DEPENDS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE stax_core stax_conformance GTest::gtest GTest::gtest_main ${T_LIBS})
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
