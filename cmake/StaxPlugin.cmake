# stax_add_plugin(NAME <name> SOURCES <src>... [LIBS <lib>...] [OUTPUT_DIR <dir>] [NO_ALL_PLUGINS])
#
# Builds the Stax backend plugin libstax_<name>.so (target stax_plugin_<name>) from sources that
# use STAX_DEFINE_PLUGIN (stax/sdk/plugin.hpp):
#   * a MODULE library named exactly libstax_<name>.so (what the loader looks for),
#   * placed in OUTPUT_DIR, default ${STAX_PLUGIN_DIR} (in the Stax tree:
#     ${CMAKE_BINARY_DIR}/plugins; out of tree: the plugin project's ${CMAKE_BINARY_DIR}/plugins),
#   * compiled with hidden visibility: only the entry point `stax_plugin_api` is exported,
#   * linked with the SDK only (stax_sdk in tree, StaxSDK::stax_sdk from find_package(StaxSDK)),
#   * added to the `stax_all_plugins` target when it exists, unless NO_ALL_PLUGINS.
# Works in the Stax build (include(cmake/StaxPlugin.cmake)) and from the installed package.
include_guard(GLOBAL)

function(stax_add_plugin)
  cmake_parse_arguments(P "NO_ALL_PLUGINS" "NAME;OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
  if(NOT P_NAME)
    message(FATAL_ERROR "stax_add_plugin: NAME is required")
  endif()
  if(NOT P_NAME MATCHES "^[A-Za-z0-9_]+$")
    message(FATAL_ERROR "stax_add_plugin: NAME '${P_NAME}' must be [A-Za-z0-9_]+")
  endif()
  if(NOT P_SOURCES)
    message(FATAL_ERROR "stax_add_plugin(${P_NAME}): SOURCES is required")
  endif()
  if(P_OUTPUT_DIR)
    set(out_dir "${P_OUTPUT_DIR}")
  elseif(DEFINED STAX_PLUGIN_DIR)
    set(out_dir "${STAX_PLUGIN_DIR}")
  else()
    set(out_dir "${CMAKE_BINARY_DIR}/plugins")
  endif()

  set(target stax_plugin_${P_NAME})
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "stax_${P_NAME}"
    SUFFIX ".so"
    LIBRARY_OUTPUT_DIRECTORY "${out_dir}"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${target} PRIVATE cxx_std_17)

  if(TARGET StaxSDK::stax_sdk)
    target_link_libraries(${target} PRIVATE StaxSDK::stax_sdk)
  elseif(TARGET stax_sdk)
    target_link_libraries(${target} PRIVATE stax_sdk)
  else()
    message(FATAL_ERROR "stax_add_plugin(${P_NAME}): no Stax SDK target; use find_package(StaxSDK)")
  endif()
  if(P_LIBS)
    target_link_libraries(${target} PRIVATE ${P_LIBS})
  endif()

  if(TARGET stax_all_plugins AND NOT P_NO_ALL_PLUGINS)
    add_dependencies(stax_all_plugins ${target})
  endif()
endfunction()
