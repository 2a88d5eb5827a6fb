#!/usr/bin/env bash
# Installs dependencies (with the test peers), builds carton with its tests and
# runs the whole suite through CTest.
#   bash scripts/test.sh              # RelWithDebInfo build in build/
#   bash scripts/test.sh --sanitize   # AddressSanitizer + UBSan build in build-asan/
# The suite includes the fuzz targets' replay of their seeds, known-bad
# inputs and regressions (tests/hostile/fuzz_regression_test.cc); mutation
# runs are scripts/fuzz.sh's. Both builds share one build of the Rust peer
# (build-rust-peer/), which is not sanitized.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
bash scripts/check-style.sh
options=(-DCARTON_BUILD_TESTS=ON -DCARTON_BUILD_BENCH=OFF -DCARTON_RUST_PEER_DIR="$PWD/build-rust-peer")
if [ "${1:-}" = "--sanitize" ]; then
  export BUILD_DIR="${BUILD_DIR:-build-asan}" BUILD_TYPE=Debug
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  bash scripts/build.sh "${options[@]}" -DCARTON_SANITIZE=ON
else
  bash scripts/build.sh "${options[@]}"
fi
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --parallel "$(nproc)"
