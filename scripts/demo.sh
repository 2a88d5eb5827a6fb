#!/usr/bin/env bash
# The main job on a bundled example: installs dependencies, builds carton,
# then packs the example model directory (examples/mlp), verifies the
# .carton, prints its info, loads it through the cache (a miss, then a hit)
# and runs its self-tests on the noop runner. Also writes and checks a
# safetensors file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DCARTON_BUILD_TESTS=OFF -DCARTON_BUILD_BENCH=OFF >/dev/null
carton=build/tools/carton
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# A private cache for the demo, and the runners built here.
export CARTON_CACHE_DIR="$out/cache"
export CARTON_RUNNER_PATH="$PWD/build/runners/noop"

echo "== safetensors: write example weights, inspect and verify them"
build/examples/write_example_safetensors "$out/example.safetensors"
$carton safetensors inspect "$out/example.safetensors"
$carton safetensors verify "$out/example.safetensors"

echo
echo "== carton: fill in the example model (examples/mlp), pack, verify, info"
cp -r examples/mlp "$out/mlp"
build/examples/make_example_model "$out/mlp"
$carton pack "$out/mlp" -o "$out/mlp.carton"
$carton verify "$out/mlp.carton"
$carton info "$out/mlp.carton"

echo
echo "== loader: load through the cache (a miss, then a hit), then run the self-tests"
$carton load --json "$out/mlp.carton"
$carton load --json "$out/mlp.carton"
echo "model directory: $($carton load "$out/mlp.carton")"
$carton cache list
$carton runners
$carton self-test "$out/mlp.carton"
