#!/usr/bin/env bash
# Alternates `openssl dgst -sha256`, `cp -r`, `carton pack --compression
# stored` and `carton verify` over one model directory, N times, and prints
# each run's times and ratios (one line per run; pack and verify against
# openssl, pack against cp -r too), then the median and range of each
# column, so that the noise of a shared machine shows run by run instead of
# hiding in a median.
#
#   bash bench/pack_verify_loop.sh CARTON WORKDIR [N]
#
# CARTON is the built CLI (build-rel/tools/carton). WORKDIR/m is the model
# directory; it is generated when missing (four 500 MiB files of random
# bytes and 300 files of 1-64 KiB, about 2.1 GB). The carton is written to
# WORKDIR/out.carton, the copy to WORKDIR/copy. The page cache is warmed
# first; `sync` runs, untimed, before each pack and each copy.
set -euo pipefail
carton=$(realpath "$1")
work=$2
runs=${3:-7}
mkdir -p "$work"
cd "$work"
if [ ! -f m/carton.toml ]; then
  mkdir -p m/model m/misc
  cat > m/carton.toml <<'TOML'
spec_version = 1
model_name = "pack-verify-loop"
[runner]
runner_name = "noop"
required_framework_version = "=1.0.0"
runner_compat_version = 1
TOML
  for i in 0 1 2 3; do head -c $((500 << 20)) /dev/urandom > "m/model/w$i.bin"; done
  for i in $(seq 0 299); do
    d=model; [ "$i" -ge 200 ] && d=misc
    head -c $((1024 + (i * 7919) % 64512)) /dev/urandom > "m/$d/t$i.txt"
  done
fi
files=$(find m -type f | sort)
cat $files > /dev/null
now() { date +%s.%N; }
: > runs.txt
for i in $(seq "$runs"); do
  s=$(now); openssl dgst -sha256 $files > /dev/null; e=$(now)
  o=$(echo "$e - $s" | bc)
  rm -rf copy; sync
  s=$(now); cp -r m copy; e=$(now)
  c=$(echo "$e - $s" | bc)
  rm -rf copy
  rm -f out.carton; sync
  s=$(now); "$carton" pack m -o out.carton --compression stored > /dev/null; e=$(now)
  p=$(echo "$e - $s" | bc)
  s=$(now); "$carton" verify out.carton > /dev/null; e=$(now)
  v=$(echo "$e - $s" | bc)
  pr=$(echo "scale=4; $p / $o" | bc); vr=$(echo "scale=4; $v / $o" | bc)
  pc=$(echo "scale=4; $p / $c" | bc)
  printf 'openssl %.3f s  cp -r %.3f s  pack %.3f s (%.2fx, %.2fx cp)  verify %.3f s (%.2fx)  load %s\n' \
    "$o" "$c" "$p" "$pr" "$pc" "$v" "$vr" "$(cut -d' ' -f1 /proc/loadavg)"
  echo "$o $c $p $v $pr $pc $vr" >> runs.txt
done
# Median (the middle run, or the upper middle one) and range of each column.
col() { cut -d' ' -f"$1" runs.txt | sort -g | awk '{v[NR]=$1} END {
  printf "%.3f (%.3f-%.3f)", v[int(NR/2)+1], v[1], v[NR]}'; }
echo "medians of $runs (range): openssl $(col 1) s, cp -r $(col 2) s, pack $(col 3) s," \
  "verify $(col 4) s; pack/openssl $(col 5), pack/cp $(col 6), verify/openssl $(col 7)"
