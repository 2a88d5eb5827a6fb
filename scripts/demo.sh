#!/usr/bin/env bash
# The main job on a bundled example: installs dependencies, builds carton,
# writes an example model's weights as safetensors, inspects and verifies it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "== write an example model's weights"
build/examples/write_example_safetensors "$out/example.safetensors"
echo "== carton safetensors inspect"
build/tools/carton safetensors inspect "$out/example.safetensors"
echo "== carton safetensors verify"
build/tools/carton safetensors verify "$out/example.safetensors"
