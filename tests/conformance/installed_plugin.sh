#!/usr/bin/env bash
# ctest conformance_<plugin>: what a vendor does, from an installed SDK to a passing conformance
# suite. Installs this build's SDK component to a fresh prefix, builds the plugin project
# PROJECT_DIR against it (find_package(StaxSDK 1.0) from the prefix), writes a config selecting
# the plugin for the cpu device and runs `stax conformance` on it. Also checks the package
# version: the ABI's, so find_package(StaxSDK <this ABI>) works and StaxSDK 2.0 is refused.
# With VENDOR_TEST_DIR (tests/conformance/vendor_test) it also installs the `conformance` component
# to the prefix, builds that vendor test against it (find_package(StaxSDK 1.0 COMPONENTS
# conformance)) and runs it on the plugin with the filter VENDOR_FILTER.
#   installed_plugin.sh BUILD_DIR STAX_BINARY PROJECT_DIR PLUGIN_NAME [VENDOR_TEST_DIR VENDOR_FILTER]
set -euo pipefail
build=$1 stax=$2 project=$3 name=$4 vendor=${5:-} vendor_filter=${6:-}
work="$build/conformance_$name"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" --component sdk >"$work/install.log"
test -f "$work/prefix/share/doc/stax/backend_guide.md"
abi=$(sed -n 's/^#define STAX_PLUGIN_API_\(MAJOR\|MINOR\) \([0-9]*\)$/\2/p' \
  "$work/prefix/include/stax/plugin_api.h" | paste -sd.)
version_probe() {  # version_probe VERSION: configures a project doing find_package(StaxSDK VERSION)
  mkdir -p "$work/probe_$1"
  printf 'cmake_minimum_required(VERSION 3.20)\nproject(p NONE)\nfind_package(StaxSDK %s REQUIRED)\n' \
    "$1" >"$work/probe_$1/CMakeLists.txt"
  cmake -S "$work/probe_$1" -B "$work/probe_$1/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
    >"$work/probe_$1.log" 2>&1
}
version_probe "$abi"
if version_probe 2.0; then echo "find_package(StaxSDK 2.0) accepted a $abi SDK" >&2; exit 1; fi
grep -q 'compatible with requested version "2.0"' "$work/probe_2.0.log"
grep -q "version: $abi" "$work/probe_2.0.log"
cmake -S "$project" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log"
cat >"$work/conformance.yaml" <<YAML
plugin_path: ["$work/build/plugins"]
devices:
  cpu: { backend: $name, options: { work_dir: "$work" } }
YAML
if [[ -n "$vendor" ]]; then
  # a prefix without the component: find_package(... COMPONENTS conformance) must say so
  mkdir -p "$work/probe_component"
  printf 'cmake_minimum_required(VERSION 3.20)\nproject(p NONE)\nfind_package(StaxSDK 1.0 REQUIRED COMPONENTS conformance)\n' \
    >"$work/probe_component/CMakeLists.txt"
  if cmake -S "$work/probe_component" -B "$work/probe_component/build" \
    -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/probe_component.log" 2>&1; then
    echo "find_package(StaxSDK COMPONENTS conformance) accepted a prefix without it" >&2; exit 1
  fi
  grep -q "component 'conformance' is not installed" "$work/probe_component.log"
  cmake --install "$build" --prefix "$work/prefix" --component conformance >>"$work/install.log"
  cmake -S "$vendor" -B "$work/vendor" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/vendor_configure.log"
  cmake --build "$work/vendor" >"$work/vendor_build.log"
  # the installed library resolves the core libraries next to it, not from this build tree
  if ldd "$work/vendor/vendor_conformance_test" | grep -q "$build/lib/"; then
    echo "the vendor test loads libraries from the build tree:" >&2
    ldd "$work/vendor/vendor_conformance_test" >&2; exit 1
  fi
  # In a sanitizer build the installed library is instrumented and the vendor test is not: the
  # sanitizer runtime must be loaded first (cmake/SanitizerTests.cmake). The preload is inherited
  # by the C99 plugin's `cc` (gcc, cc1: uninstrumented, and they never free what they allocate
  # before exit), so LeakSanitizer is off in this one process tree; every other test checks the
  # same libraries for leaks.
  # ASan only: TSan's runtime (gcc) starts fine as the instrumented library's dependency, and a
  # preloaded libtsan makes the /bin/sh that std::system starts for the C99 plugin's `cc` die of
  # SIGSEGV (every kernel then "fails to compile" with an empty log).
  preload=()
  if [[ "${STAX_SANITIZER_RUNTIME:-}" == *asan* ]]; then
    preload=(env LD_PRELOAD="$STAX_SANITIZER_RUNTIME" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0")
  fi
  "${preload[@]}" "$work/vendor/vendor_conformance_test" "$work/conformance.yaml" \
    --gtest_filter="$vendor_filter"
fi
exec "$stax" conformance --config "$work/conformance.yaml" --fuzz 8
