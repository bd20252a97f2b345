#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and driver (a session with the accelerator): build what the CUDA
# checks need into ./build, run the `gpu`-labelled tests on the device against the interpreter
# (the e2e set, device memory, a device-resident graph with one copy per input / output and
# concurrent runs on their own streams), the NVRTC, emulation, device-residency and fuzz-slice
# tests, and the GPU bench (streaming kernel vs device-to-device copy, row sums in the warp and
# block forms vs the copy, launch overhead, NVRTC ms per kernel), fused attention on both GPU plugins
# (cuda_attention_gpu_test; its emulated and interpreted twins too); print a summary. Under 10 minutes on
# the 16-core device machine. Does not install packages (the device machine may be offline):
# cmake, ninja, the CUDA toolkit, LLVM 19 and the other packages of scripts/setup.sh must be there.
# cuda_triton (issue 10) also needs the `triton` Python package (scripts/setup.sh pins it): when it
# is missing, one `pip install` is tried; without it the Triton checks skip and the summary says so.
#   scripts/gpu_check.sh            # exit status 0 when every check passed
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=build/gpu_check.log
mkdir -p build
: > "$LOG"
status=0
step() { echo "== $*" | tee -a "$LOG"; }

step "device"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
else
  echo "nvidia-smi not found: the gpu tests will skip" | tee -a "$LOG"
fi

step "build"
jobs=$(nproc)
if ! { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >>"$LOG" 2>&1 &&
       timeout 420 cmake --build build -j"$jobs" --target stax stax_plugin_cpu_cpp \
         stax_plugin_cuda_nvrtc cuda_gpu_test cuda_nvrtc_test cuda_emulated_test \
         cuda_driver_test cuda_resident_test cuda_cli_test compiled_fuzz_test \
         stax_plugin_cuda_triton cuda_triton_gpu_test cuda_triton_test cuda_triton_launch_test \
         cuda_attention_gpu_test cuda_attention_test cuda_triton_attention_test >>"$LOG" 2>&1; }; then
  echo "build failed (see $LOG)"; tail -20 "$LOG"; exit 1
fi

step "triton"
if ! python3 -c "import triton" 2>/dev/null; then
  timeout 120 python3 -m pip install -q triton==3.9.0 >>"$LOG" 2>&1 ||
    timeout 120 python3 -m pip install -q --break-system-packages triton==3.9.0 >>"$LOG" 2>&1 || true
fi
python3 -c "import triton; print('triton', triton.__version__)" 2>&1 | tee -a "$LOG" | tail -1

# cuda_gpu_test and cuda_triton_gpu_test are the `gpu`-labelled ctest entries; run directly to keep
# their bench lines.
for t in cuda_gpu_test cuda_nvrtc_test cuda_emulated_test cuda_driver_test cuda_resident_test \
         cuda_cli_test cuda_triton_gpu_test cuda_triton_test cuda_triton_launch_test \
         cuda_attention_gpu_test cuda_attention_test cuda_triton_attention_test; do
  step "$t"
  limit=120
  [ "$t" = cuda_attention_gpu_test ] && limit=300  # Triton compiles a cubin per (kernel, dtype, case)
  timeout $limit "build/bin/$t" >"build/$t.out" 2>&1 || status=1
  cat "build/$t.out" >>"$LOG"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[ cuda" "build/$t.out"
done
step "fuzz slice on cuda_nvrtc (NVRTC compile + emulation)"
timeout 120 build/bin/compiled_fuzz_test --gtest_filter='CompiledFuzz.Cuda*' \
  >build/cuda_fuzz.out 2>&1 || status=1
cat build/cuda_fuzz.out >>"$LOG"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |fuzz graphs on cuda_nvrtc" build/cuda_fuzz.out

step "acceptance: stax run / bench on the GPU (configs/cuda.yaml)"
timeout 120 build/bin/stax run examples/softmax.stax --config configs/cuda.yaml --check \
  >build/cuda_cli.out 2>&1 || status=1
timeout 120 build/bin/stax bench examples/softmax.stax --config configs/cuda.yaml --reps 50 \
  >>build/cuda_cli.out 2>&1 || status=1
cat build/cuda_cli.out | tee -a "$LOG" | grep -E "check:|device-resident|median|error"

step "summary"
grep -h "^\[ cuda" build/cuda_*_test.out
grep -h "fuzz graphs on cuda_nvrtc" build/cuda_fuzz.out
grep -h -E "check:|device-resident|median" build/cuda_cli.out
grep -h "no GPU to run on" build/cuda_gpu_test.out build/cuda_triton_gpu_test.out | head -2
if [ $status -eq 0 ]; then echo "gpu_check: all passed"; else echo "gpu_check: FAILURES (see $LOG)"; fi
exit $status
