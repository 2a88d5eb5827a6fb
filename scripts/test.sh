#!/usr/bin/env bash
# Installs dependencies (with the test peers), builds carton with its tests and
# runs the whole suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
bash scripts/build.sh -DCARTON_BUILD_TESTS=ON
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --parallel "$(nproc)"
