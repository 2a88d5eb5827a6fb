#!/usr/bin/env bash
# How pack, verify and load scale with threads, beside the limits of the
# same machine measured in the same run:
#
#   bash bench/scaling.sh CARTON DIR
#
# CARTON is the built CLI; DIR is where the model and the outputs are made
# (use tmpfs, e.g. /dev/shm/scaling, to measure the CPU and not the disk).
# Needs only the CLI, openssl, cp, tar and zstd (and /usr/bin/time for peak
# memory, when there).
#
# The model: BIG files of BIG_MIB MiB of random bytes and SMALL files of
# SMALL_KIB KiB (defaults 8 x 1024 MiB and 300 x 16 KiB: the 16-core server
# figures in docs/BENCHMARKS.md). Other shapes: BIG=0 SMALL=100000
# SMALL_KIB=4 (many small files), BIG=1 BIG_MIB=16384 SMALL=0 (one large).
#
# For each run (RUNS, default 3) and each thread count in JOBS (default 1 2
# 4 ... up to the core count), interleaved:
#   carton pack DIR -o OUT --compression stored -j N    vs  cp -r DIR COPY
#   carton verify OUT -j N                              vs  openssl dgst -sha256
#   carton load OUT -j N (an empty cache each time)         (one process, every
#                                                            file; and the largest
#                                                            file alone: the
#                                                            ceiling when there are
#                                                            no more large files
#                                                            than threads; and the
#                                                            large files by up to N
#                                                            processes at once, the
#                                                            ceiling with N streams
#                                                            sharing the machine)
#   carton pack DIR -o OUT --compression zstd -j N      vs  tar -cf - DIR | zstd -3 -T<N>
# and prints the median seconds, the ratio to the baseline, and the peak
# resident memory of each carton command.
#
# DGST_ALL=0 skips the openssl dgst of every file (the slowest baseline at
# 100000 files or 8 GiB; its column shows "-"); the one-file dgst stays.
# PROFILE=1 then runs pack stored, verify, load and pack zstd once more at
# the largest -j under bench/thread_profile.py (when python3 is there) and
# prints each one's CPU seconds per thread. RESULTS=FILE keeps the raw
# timings ("what -j seconds peak-KiB", one line per command, written as
# they go) in FILE instead of DIR/results.
set -euo pipefail
carton=$(realpath "$1")
dir=$2
here=$(dirname "$(realpath "$0")")
big=${BIG:-8}
big_mib=${BIG_MIB:-1024}
small=${SMALL:-300}
small_kib=${SMALL_KIB:-16}
runs=${RUNS:-3}
dgst_all=${DGST_ALL:-1}
profile=${PROFILE:-0}
cores=$(nproc)
if [ -z "${JOBS:-}" ]; then
  JOBS=1
  j=2
  while [ "$j" -lt "$cores" ]; do JOBS="$JOBS $j"; j=$((j * 2)); done
  [ "$cores" -gt 1 ] && JOBS="$JOBS $cores"
fi
mkdir -p "$dir"
dir=$(realpath "$dir")
model=$dir/model
stamp="$big x $big_mib MiB + $small x $small_kib KiB"

# Random bytes at memory speed: AES-CTR over zeros, a different key per file.
generate() {
  [ -f "$model/.done" ] && [ "$(cat "$model/.done")" = "$stamp" ] && return
  rm -rf "$model"
  mkdir -p "$model/model/small"
  local i
  for ((i = 0; i < big; i++)); do
    head -c $((big_mib << 20)) /dev/zero |
      openssl enc -aes-128-ctr -nosalt -pass "pass:big$i" 2>/dev/null > "$model/model/big-$i.bin"
  done
  if [ "$small" -gt 0 ]; then
    head -c $(((small * small_kib) << 10)) /dev/zero |
      openssl enc -aes-128-ctr -nosalt -pass pass:small 2>/dev/null > "$dir/small.bin"
    (cd "$model/model/small" && split -a 6 -d -b $((small_kib << 10)) "$dir/small.bin" f)
    rm -f "$dir/small.bin"
  fi
  cat > "$model/carton.toml" <<'TOML'
spec_version = 1
model_name = "scaling"
[runner]
runner_name = "noop"
required_framework_version = "=1.0.0"
runner_compat_version = 1
TOML
  echo "$stamp" > "$model/.done"
}

# Seconds of one command or function below (its output discarded; a
# failure stops the script), then the largest resident set of its
# processes in KiB ("-" without /usr/bin/time).
timed() {
  local start end peak=-
  start=$(date +%s.%N)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f %M -o "$dir/peak" bash -c '"$@"' timed "$@" > /dev/null 2> "$dir/err" ||
      { cat "$dir/err" >&2; return 1; }
    peak=$(tail -n1 "$dir/peak")
  else
    "$@" > /dev/null 2> "$dir/err" || { cat "$dir/err" >&2; return 1; }
  fi
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" -v p="$peak" 'BEGIN { printf "%.3f %s", b - a, p }'
}

hash_all() { find "$model" -type f -print0 | xargs -0 openssl dgst -sha256; }
hash_largest() { [ -n "$largest" ] && openssl dgst -sha256 "$largest"; }
# The large files hashed by up to $1 openssl processes at once: the
# ceiling when as many streams share the machine as verify runs.
hash_parallel() { [ -n "$largest" ] && ls "$model"/model/big-* | xargs -P "$1" -n 1 openssl dgst -sha256; }
copy() { cp -r "$model" "$dir/copy"; }
tar_zstd() { tar -C "$model" -cf - . | zstd -q -3 -T"$1" -c > "$dir/out.tar.zst"; }
pack() { "$carton" pack "$model" -o "$dir/out.carton" -q --compression "$1" -j "$2"; }
# The cache is emptied before the clock starts (removing 8 GiB of files
# takes longer than some loads).
load() { CARTON_CACHE_DIR=$dir/cache "$carton" load "$dir/out.carton" -q -j "$1"; }

generate
largest=$(ls -S "$model"/model/big-* 2>/dev/null | head -n1 || true)
export carton dir model largest
export -f hash_all hash_largest hash_parallel copy tar_zstd pack load
results=${RESULTS:-$dir/results}
: > "$results"
echo "model: $stamp ($(du -sh "$model" | cut -f1)) in $dir; $cores cores; runs: $runs; -j: $JOBS"
for ((run = 1; run <= runs; run++)); do
  for j in $JOBS; do
    # What a command replaces is removed before its clock starts: freeing
    # gigabytes of tmpfs pages is not part of writing them.
    rm -f "$dir/out.carton"
    echo "stored $j $(timed pack stored "$j")" >> "$results"
    rm -rf "$dir/copy"
    echo "cp $j $(timed copy)" >> "$results"
    echo "verify $j $(timed "$carton" verify "$dir/out.carton" -q -j "$j")" >> "$results"
    if [ "$dgst_all" != 0 ]; then echo "dgst $j $(timed hash_all)" >> "$results"; fi
    echo "dgst1 $j $(timed hash_largest)" >> "$results"
    echo "dgstpar $j $(timed hash_parallel "$j")" >> "$results"
    rm -rf "$dir/cache"
    echo "load $j $(timed load "$j")" >> "$results"
    rm -f "$dir/out.carton"
    echo "zstd $j $(timed pack zstd "$j")" >> "$results"
    rm -f "$dir/out.tar.zst"
    echo "tarzstd $j $(timed tar_zstd "$j")" >> "$results"
  done
  echo "run $run done" >&2
done
size_zstd=$(stat -c %s "$dir/out.carton")
size_tar=$(stat -c %s "$dir/out.tar.zst")
rm -rf "$dir/copy" "$dir/cache" "$dir/out.tar.zst"

# Medians per (what, -j) ("-" when not measured), then one line per -j.
median() { awk -v w="$1" -v j="$2" '$1 == w && $2 == j && $3 != "" { print $3 }' "$results" | sort -n |
  awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]
    else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
peak() { awk -v w="$1" -v j="$2" '$1 == w && $2 == j && $4 != "-" { if ($4 > m) m = $4 } END { printf "%d", m / 1024 }' "$results"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
printf '%-4s | %-26s | %-26s | %-20s | %-28s | %s\n' -j "pack stored (cp -r)" \
  "verify (dgst all; 1 file)" "load (ratio to 1 file)" "pack zstd (tar|zstd -T)" "peak MiB s/v/l/z"
for j in $JOBS; do
  s=$(median stored "$j") c=$(median cp "$j") v=$(median verify "$j") d=$(median dgst "$j")
  d1=$(median dgst1 "$j") l=$(median load "$j") z=$(median zstd "$j") t=$(median tarzstd "$j")
  ratio_v=$(ratio "$v" "$d1") ratio_l=$(ratio "$l" "$d1")
  [ "$d" = - ] || d=${d}s
  [ "$d1" = - ] || d1=${d1}s
  printf '%-4s | %6ss (%5s) %5sx     | %6ss (%7s; %6s) %5sx | %6ss %5sx         | %6ss (%6ss) %5sx        | %s/%s/%s/%s\n' \
    "$j" "$s" "$c" "$(ratio "$s" "$c")" "$v" "$d" "$d1" "$ratio_v" "$l" \
    "$ratio_l" "$z" "$t" "$(ratio "$z" "$t")" "$(peak stored "$j")" \
    "$(peak verify "$j")" "$(peak load "$j")" "$(peak zstd "$j")"
done
echo "zstd sizes: carton $size_zstd bytes, tar|zstd -3 $size_tar bytes"
for j in $JOBS; do
  p=$(median dgstpar "$j") v=$(median verify "$j")
  echo "-j $j: openssl dgst of the large files, up to $j at once: ${p}s; verify $(ratio "$v" "$p")x that"
done

# One more run of each carton command at the largest -j, CPU per thread.
if [ "$profile" = 1 ]; then
  if ! command -v python3 > /dev/null; then
    echo "PROFILE=1: no python3, no thread profiles"
    exit 0
  fi
  j=0
  for n in $JOBS; do if [ "$n" -gt "$j" ]; then j=$n; fi; done
  profiled() {
    echo
    echo "== profile: $1 (-j $j) =="
    shift
    rm -f "$dir/profile"
    python3 "$here/thread_profile.py" --out "$dir/profile" -- "$@" > /dev/null 2> "$dir/err" ||
      { echo "(exit status $?)"; cat "$dir/err"; }
    cat "$dir/profile" 2> /dev/null || true
  }
  rm -f "$dir/out.carton"
  profiled "pack --compression stored" "$carton" pack "$model" -o "$dir/out.carton" -q \
    --compression stored -j "$j"
  profiled verify "$carton" verify "$dir/out.carton" -q -j "$j"
  rm -rf "$dir/cache"
  profiled "load (empty cache)" env CARTON_CACHE_DIR="$dir/cache" "$carton" load "$dir/out.carton" -q -j "$j"
  rm -rf "$dir/cache" "$dir/out.carton"
  profiled "pack --compression zstd" "$carton" pack "$model" -o "$dir/out.carton" -q \
    --compression zstd -j "$j"
  rm -f "$dir/profile"
fi
