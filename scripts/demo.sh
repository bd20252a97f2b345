#!/usr/bin/env bash
# README command 1 (the main job): set up the machine, build into ./build, then compile the seed's
# Example 1.1 (examples/example_1_1.stax) with the cpu_cpp plugin and run it, checked against the
# reference interpreter.
#   stax compile ... --dump loop_ir,kernels   the loop IR in the Listing 6.2 form, the generated C++
#                                              kernel, and a summary line (kernels, fallbacks,
#                                              compile ms per kernel)
#   stax run ... --check                       the compiled run next to the interpreter: max abs /
#                                              rel difference per output; exit 1 beyond tolerance
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"$(nproc)"
echo
echo "== stax compile examples/example_1_1.stax --config configs/cpu.yaml --dump loop_ir,kernels"
./build/bin/stax compile examples/example_1_1.stax --config configs/cpu.yaml --dump loop_ir,kernels
echo
echo "== stax run examples/example_1_1.stax --config configs/cpu.yaml --check"
./build/bin/stax run examples/example_1_1.stax --config configs/cpu.yaml --check
echo
echo "== stax grad examples/example_5_1_forward.stax --wrt primals_2"
# Listing 5.2's joint graph, Table 5.1's network (9011, 225781552), max flow 9011, saved {matmul},
# the forward and backward graphs, then the compiled forward + backward (seed §5.3-5.6).
./build/bin/stax grad examples/example_5_1_forward.stax --wrt primals_2
echo
echo "== stax_train_mlp (SGD through the compiled forward and backward)"
./build/bin/stax_train_mlp
echo
echo "== stax grad examples/cnn_train_step.stax --check (a CNN training step: conv, batch_norm, relu, max_pool, linear, cross-entropy)"
./build/bin/stax grad examples/cnn_train_step.stax --wrt conv_w,conv_b,bn_w,bn_b,fc_w,fc_b \
  --config configs/cpu.yaml --check | tail -n 3
echo
echo "== stax grad examples/transformer_block.stax --check (layer_norm, causal attention, MLP, residuals)"
./build/bin/stax grad examples/transformer_block.stax \
  --wrt x,ln1_w,ln1_b,w_qkv,b_qkv,w_o,b_o,ln2_w,ln2_b,w_1,b_1,w_2,b_2 \
  --config configs/cpu.yaml --check | tail -n 3
echo
echo "== examples/torch_backend_train.py (torch.compile(model, backend=\"stax\"): a GPT-style block, 5 AdamW steps against eager)"
PYTHONPATH=build/python .venv/bin/python examples/torch_backend_train.py
