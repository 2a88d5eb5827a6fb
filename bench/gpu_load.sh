#!/usr/bin/env bash
# gpu_load.sh: safetensors::Load into a GPU (and into host memory) against
# a pinned-copy ceiling and the reference's load_file(device=...), in the
# same run (bench/safetensors_device_bench.cc says what each row measures).
#
#   bash bench/gpu_load.sh stage [BUILD_DIR]   on the build machine (Debian 12)
#   bash bench/gpu_load.sh [run]               on the GPU machine
#
# stage copies BUILD_DIR/bench/safetensors_device_bench (a Release build,
# default build-release: cmake -S . -B build-release -G Ninja
# -DCMAKE_BUILD_TYPE=Release -DCARTON_BUILD_BENCH=ON -DCARTON_BUILD_TESTS=OFF, then
# ninja -C build-release safetensors_device_bench) into .device/bin, stripped,
# with every shared library it needs but glibc's into .device/lib, so
# that it runs on a machine without Debian's libraries. .device/ is
# ignored by git.
#
# run uses .device/lib, writes the checkpoint into $CARTON_BENCH_DIR
# (default /dev/shm/carton-gpu-load, removed at the end unless
# CARTON_BENCH_KEEP=1), and runs the bench for each target in
# $CARTON_BENCH_TARGETS (default "cuda:0 cpu"). Size knobs, passed through:
# CARTON_BENCH_MIB (default 4096), CARTON_BENCH_TENSORS (64),
# CARTON_BENCH_RUNS (3), and the LoadOptions ones (CARTON_BENCH_THREADS,
# CARTON_BENCH_BUFFER_MIB, CARTON_BENCH_BUFFERS, CARTON_BENCH_STREAMS).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-run}"

if [[ "$mode" == stage ]]; then
  build="${2:-build-release}"
  bin="$build/bench/safetensors_device_bench"
  mkdir -p .device/bin .device/lib
  grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo /.device/ >> .git/info/exclude
  cp "$bin" .device/bin/
  strip .device/bin/safetensors_device_bench
  ldd "$bin" | awk '/=> \// {print $3}' |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" .device/lib/; done
  du -sh .device
  exit 0
fi

export LD_LIBRARY_PATH="$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench="${CARTON_BENCH_BIN:-$PWD/.device/bin/safetensors_device_bench}"
dir="${CARTON_BENCH_DIR:-/dev/shm/carton-gpu-load}"
export CARTON_BENCH_MIB="${CARTON_BENCH_MIB:-4096}"
[[ "${CARTON_BENCH_KEEP:-0}" == 1 ]] || trap 'rm -rf "$dir"' EXIT
echo "$(nproc) cores; $(uptime)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for target in ${CARTON_BENCH_TARGETS:-cuda:0 cpu}; do
  echo
  CARTON_BENCH_TARGET="$target" "$bench" "$dir"
done
