#!/usr/bin/env bash
# device_check.sh: how pack, verify and load scale on a many-core GPU
# server, with per-thread profiles, and the GPU load bench, in one run
# whose results are written as they go (a run cut short keeps what it did).
#
#   bash bench/device_check.sh stage [BUILD_DIR]   on the build machine (Debian 12)
#   bash bench/device_check.sh run                 on the GPU server
#
# stage empties .device, then copies BUILD_DIR/tools/carton and
# BUILD_DIR/bench/safetensors_device_bench (each when present; BUILD_DIR
# defaults to build-release, a Release build: see bench/gpu_load.sh) and
# /usr/bin/zstd into .device/bin, stripped, and every shared library they
# need but glibc's own (libc, libm, libresolv, ld-linux, ...) into
# .device/lib, so that they run on a machine without Debian's libraries
# (about 26 MB). .device/ is ignored by git: name it in the carry list of
# whatever copies the checkout to the GPU server.
#
# run puts .device/bin first on PATH and .device/lib on LD_LIBRARY_PATH,
# then runs the sections below, each one's output shown and written to
# $OUT/<section>.txt (OUT defaults to /tmp/device-out) as it goes, with
# its elapsed seconds and, when it fails, its exit status (the next
# sections run anyway). The bench/scaling.sh sections also keep their raw
# timings in $OUT/<section>-raw.txt, one line per command as it ends.
# SKIP_<SECTION>=1 (SKIP_MACHINE, SKIP_MAIN, ...) skips a section.
#   machine  cores, CPU, memory, /dev/shm, the GPU, tool versions
#   main     bench/scaling.sh in /dev/shm/scaling-main: BIG=8 BIG_MIB=1024
#            SMALL=300 SMALL_KIB=16 JOBS="2 16" RUNS=3 DGST_ALL=0 PROFILE=1
#   large    the same in /dev/shm/scaling-large: BIG=1 BIG_MIB=8192 SMALL=0
#            JOBS=16 RUNS=1 DGST_ALL=0 PROFILE=0
#   small    the same in /dev/shm/scaling-small: BIG=0 SMALL=100000
#            SMALL_KIB=4 JOBS=16 RUNS=1 DGST_ALL=1 PROFILE=0
#   gpu      bash bench/gpu_load.sh run with CARTON_BENCH_MIB=$GPU_MIB
#            (default 4096), when .device/bin/safetensors_device_bench is
#            staged and the machine has nvidia-smi or libcuda.so.1
# Each scaling.sh knob of a section is overridden by <SECTION>_<KNOB>
# (MAIN_BIG_MIB=64, MAIN_JOBS="1 2", LARGE_BIG_MIB=128, SMALL_RUNS=2, ...),
# except the small section's file count: SMALL_COUNT. Each section's
# folder under /dev/shm is removed when it ends.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
mode="${1:-run}"

# glibc's own libraries, which must come from the machine that runs the
# binaries: libresolv, for one, calls libc's GLIBC_PRIVATE symbols, which
# change between glibc versions.
glibc='libc|libm|libmvec|libpthread|libdl|librt|libresolv|libanl|libutil|libnsl|libnss_[a-z]+'
glibc+='|libBrokenLocale|libthread_db|libc_malloc_debug|ld-linux[^/]*'

stage() {
  local build="${1:-build-release}" name src lib
  rm -rf .device
  mkdir -p .device/bin .device/lib
  grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo /.device/ >> .git/info/exclude
  for src in "$build/tools/carton" "$build/bench/safetensors_device_bench" /usr/bin/zstd; do
    if [[ ! -x "$src" ]]; then
      echo "missing: $src (not staged)"
      continue
    fi
    name=$(basename "$src")
    cp "$src" ".device/bin/$name"
    strip ".device/bin/$name"
    echo "staged: $src"
    ldd "$src" | awk '/=> \// {print $3}' |
      grep -Ev "/($glibc)\.so" |
      while read -r lib; do cp -L "$lib" .device/lib/; done
  done
  du -sh .device
}

# The value of knob $2 for section $1: <SECTION>_<KNOB> when set, else $3.
knob() {
  local var="${1^^}_$2"
  [[ "$1" == small && "$2" == SMALL ]] && var=SMALL_COUNT
  echo "${!var-$3}"
}

# bench/scaling.sh for section $1, its knobs' defaults after it (KNOB=VALUE).
scaling() {
  local section=$1 dir="/dev/shm/scaling-$1" args=() a k status carton
  shift
  for a in "$@"; do
    k=${a%%=*}
    args+=("$k=$(knob "$section" "$k" "${a#*=}")")
  done
  carton=$(command -v carton) || { echo "no carton on PATH (stage it first)"; return 127; }
  printf '%q ' "${args[@]}" bash bench/scaling.sh "$carton" "$dir"
  echo
  env "${args[@]}" RESULTS="$out/$section-raw.txt" bash bench/scaling.sh "$carton" "$dir"
  status=$?
  rm -rf "$dir"
  return "$status"
}

machine() {
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(uname -r); uptime:$(uptime)"
  echo "cores: $(nproc); $(lscpu | grep -m1 'Model name' | tr -s ' ')"
  free -g
  df -h /dev/shm
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  else
    echo "nvidia-smi: not found"
  fi
  local tool
  for tool in carton zstd openssl tar python3 /usr/bin/time; do
    printf '%s: %s\n' "$tool" "$(command -v "$tool" || echo 'not found')"
  done
  openssl version
  zstd --version
  tar --version | head -n1
  python3 --version
  if [[ -x .device/bin/carton ]]; then
    carton version
    ldd .device/bin/carton | grep 'not found' || echo "carton: every library found"
  fi
}

gpu() {
  if [[ ! -x .device/bin/safetensors_device_bench ]]; then
    echo "no gpu section: .device/bin/safetensors_device_bench is not staged"
    return 0
  fi
  if ! command -v nvidia-smi > /dev/null && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "no gpu section: neither nvidia-smi nor libcuda.so.1 on this machine"
    return 0
  fi
  CARTON_BENCH_MIB="${GPU_MIB:-4096}" bash bench/gpu_load.sh run
}

# Runs section $1 (the command after it), its output to stdout and to
# $out/$1.txt as it goes, then its elapsed seconds and exit status.
section() {
  local name=$1 skip="SKIP_${1^^}" start status elapsed
  shift
  if [[ "${!skip:-0}" == 1 ]]; then
    echo "== $name: skipped ($skip=1) ==" | tee "$out/$name.txt"
    return
  fi
  start=$(date +%s.%N)
  echo "== $name ==" | tee "$out/$name.txt"
  "$@" 2>&1 | tee -a "$out/$name.txt"
  status=${PIPESTATUS[0]}
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo "== $name: $elapsed s, exit status $status ==" | tee -a "$out/$name.txt"
  echo "$name $elapsed s, exit status $status" >> "$out/summary.txt"
}

if [[ "$mode" == stage ]]; then
  stage "${2:-}"
  exit
fi
if [[ "$mode" != run ]]; then
  echo "usage: bash bench/device_check.sh stage [BUILD_DIR] | run" >&2
  exit 2
fi
export PATH="$PWD/.device/bin:$PATH"
export LD_LIBRARY_PATH="$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-/tmp/device-out}"
mkdir -p "$out"
: > "$out/summary.txt"
section machine machine
section main scaling main BIG=8 BIG_MIB=1024 SMALL=300 SMALL_KIB=16 "JOBS=2 16" RUNS=3 \
  DGST_ALL=0 PROFILE=1
section large scaling large BIG=1 BIG_MIB=8192 SMALL=0 SMALL_KIB=16 JOBS=16 RUNS=1 DGST_ALL=0 \
  PROFILE=0
section small scaling small BIG=0 BIG_MIB=1024 SMALL=100000 SMALL_KIB=4 JOBS=16 RUNS=1 \
  DGST_ALL=1 PROFILE=0
section gpu gpu
cat "$out/summary.txt"
