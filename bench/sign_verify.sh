#!/usr/bin/env bash
# sign_verify.sh CARTON [RUNS] [SCRATCH_DIR]: what a signature adds to the
# commands that check a carton, on one model: 1 GB of random data in two
# stored files and 100 text files. Runs alternate, so both sides see the
# same machine; each is a child process timed wall-clock; medians.
#   verify:       carton verify M                     (every file hashed)
#   verify+sig:   carton verify M --key K.pub         (the same, and the signature)
#   load (first): carton load M into a fresh cache    (what a first load costs)
#   load (hit):   carton load M again                 (what a cache hit costs)
#   sign:         carton sign M --key K.pem           (verifies first, then signs)
# The signature check itself, on a hit, is sign_bench's (no file is hashed).
#
#   bash bench/sign_verify.sh build/tools/carton 5
set -euo pipefail
C="$(realpath "$1")"
runs=${2:-5}
w="${3:-/tmp/carton-sign-bench}"; rm -rf "$w"; mkdir -p "$w/m/model"
trap 'rm -rf "$w"' EXIT
cat > "$w/m/carton.toml" <<T
spec_version = 1
model_name = "signbench"
[runner]
runner_name = "noop"
required_framework_version = "*"
runner_compat_version = 1
T
head -c 600000000 /dev/urandom > "$w/m/model/a.bin"
head -c 400000000 /dev/urandom > "$w/m/model/b.bin"
for i in $(seq 1 100); do seq 1 $((i*300)) > "$w/m/model/t$i.txt"; done
"$C" pack -q --compression stored "$w/m" -o "$w/m.carton" >/dev/null
"$C" keygen -o "$w/k.pem" >/dev/null 2>&1
"$C" sign -q "$w/m.carton" --key "$w/k.pem" >/dev/null
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1; local e=$(date +%s.%N); awk -v a="$s" -v b="$e" 'BEGIN { printf "%.4f\n", b - a }'; }
declare -A R
for i in $(seq 1 "$runs"); do
  R[verify]+="$(t "$C" verify -q "$w/m.carton") "
  R[verify_sig]+="$(t "$C" verify -q "$w/m.carton" --key "$w/k.pub") "
  rm -rf "$w/cache"
  R[load_first]+="$(t env CARTON_CACHE_DIR="$w/cache" "$C" load -q "$w/m.carton") "
  R[load_hit]+="$(t env CARTON_CACHE_DIR="$w/cache" "$C" load -q "$w/m.carton") "
  R[sign]+="$(t "$C" sign -q "$w/m.carton" --key "$w/k.pem" -o "$w/again.sig") "
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
for k in verify verify_sig load_first load_hit sign; do
  printf '%-11s %s s  (runs: %s)\n' "$k" "$(echo "${R[$k]}" | median)" "${R[$k]}"
done
