#!/usr/bin/env bash
# Installs dependencies (with the test peers), builds carton with its tests and
# runs the whole suite through CTest.
#   bash scripts/test.sh              # RelWithDebInfo build in build/
#   bash scripts/test.sh --sanitize   # AddressSanitizer + UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
bash scripts/check-style.sh
if [ "${1:-}" = "--sanitize" ]; then
  export BUILD_DIR="${BUILD_DIR:-build-asan}" BUILD_TYPE=Debug
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  bash scripts/build.sh -DCARTON_BUILD_TESTS=ON -DCARTON_BUILD_BENCH=OFF -DCARTON_SANITIZE=ON
else
  bash scripts/build.sh -DCARTON_BUILD_TESTS=ON
fi
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --parallel "$(nproc)"
