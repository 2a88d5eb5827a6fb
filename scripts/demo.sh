#!/usr/bin/env bash
# The main job on bundled examples: installs dependencies, builds carton,
# then packs the example model directory (examples/mlp: a two-layer MLP in
# numpy, run by the Python runner), verifies the .carton, prints its info,
# loads it through the cache (a miss, then a hit), runs its self-test (the
# MLP's outputs against values computed in C++) and one inference. Also
# writes and checks a safetensors file. Last, the main job on a real model:
# a digits classifier trained with torch on scikit-learn's handwritten
# digits (examples/digits), packed with carton.pack, self-tested and run by
# the TorchScript runner on 297 held-out digits: its accuracy and a few
# predictions.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --demo
bash scripts/build.sh -DCARTON_BUILD_TESTS=OFF -DCARTON_BUILD_BENCH=OFF >/dev/null
carton=build/tools/carton
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# A private cache for the demo, and the runners built here.
export CARTON_CACHE_DIR="$out/cache"
export CARTON_RUNNER_PATH="$PWD/build/runners/python:$PWD/build/runners/torchscript"
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}"

echo "== safetensors: write example weights, inspect and verify them"
build/examples/write_example_safetensors "$out/example.safetensors"
$carton safetensors inspect "$out/example.safetensors"
$carton safetensors verify "$out/example.safetensors"

echo
echo "== carton: fill in the example model (examples/mlp), pack, verify, info"
cp -r examples/mlp "$out/mlp"
build/examples/make_example_model "$out/mlp" "$out/inputs.safetensors"
$carton pack "$out/mlp" -o "$out/mlp.carton"
$carton verify "$out/mlp.carton"
$carton info "$out/mlp.carton"

echo
echo "== loader: load through the cache (a miss, then a hit)"
$carton load --json "$out/mlp.carton"
$carton load --json "$out/mlp.carton"
echo "model directory: $($carton load "$out/mlp.carton")"
$carton cache list

echo
echo "== the Python runner: the MLP's self-test, then one inference"
$carton runners
$carton self-test "$out/mlp.carton"
$carton infer "$out/mlp.carton" --input x="$out/inputs.safetensors" \
    --input labels="$out/inputs.safetensors" --output "$out/outputs.safetensors"
# Print the outputs (string tensors are length-prefixed bytes, runner/PROTOCOL.md).
/usr/bin/python3 - "$out/outputs.safetensors" <<'PY'
import json, struct, sys
import numpy as np
data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header, body = json.loads(data[8:8 + n]), data[8 + n:]
begin, end = header["y"]["data_offsets"]
print("y =", np.frombuffer(body[begin:end], "<f4").reshape(header["y"]["shape"]).round(4))
begin, end = header["labels"]["data_offsets"]
raw, labels = body[begin:end], []
while raw:
    (size,) = struct.unpack("<Q", raw[:8])
    labels.append(raw[8:8 + size].decode())
    raw = raw[8 + size:]
print("labels =", labels)
PY

echo
echo "== the main job: a digits classifier (torch, scikit-learn's digits), packed, run"
/usr/bin/python3 examples/digits/train.py "$out/digits"
$carton verify "$out/digits/digits.carton"
$carton self-test "$out/digits/digits.carton"
$carton infer "$out/digits/digits.carton" --input images="$out/digits/heldout.safetensors" \
    --output "$out/digits/logits.safetensors"
/usr/bin/python3 examples/digits/score.py "$out/digits/heldout.safetensors" \
    "$out/digits/logits.safetensors"
