#!/usr/bin/env bash
# `carton pack --compression zstd` against the zstd CLI on both cores over
# the same bytes, for float32 weights and for a folder of text files, and
# the sizes beside `zip -6`, `zstd -3` and `zstd -19`.
#
#   bash bench/zstd_pack_bench.sh CARTON WORKDIR [N]
#
# CARTON is the built CLI (build-rel/tools/carton). WORKDIR/weights and
# WORKDIR/text are generated when missing (Debian's /usr/bin/python3 with
# numpy): 512 MiB of float32 weights (normal, sd 0.02, full precision) in two
# shards, and 128 MiB of text in 2,000 files of 1-128 KiB. Each of N runs
# times, per corpus, alternately:
#   carton pack DIR -o OUT --compression zstd        (level 2, min match 4,
#                                                     2 MiB jobs, 2 workers)
#   zstd -q -T2 -2 --zstd=mml=4 -B2MiB -c FILES > OUT (the same settings)
#   zstd -q -T2 -3 -c FILES > OUT                     (zstd's default level)
# with `sync`, untimed, before each. pack also hashes every byte and writes
# a zip; the CLI writes one zstd frame per file, as pack stores one per
# entry. Then, once: `zip -q -r -6` (timed) and `zstd -q -T2 -19` (sizes).
# Prints one line per run and the median and range of each column.
# N = 0 only generates the corpora. ZSTD19=0 skips zstd -19 (about 6
# minutes on the weights here).
set -euo pipefail
carton=$(realpath "$1")
work=$2
runs=${3:-5}
mkdir -p "$work"
cd "$work"
toml() {
  cat > "$1/carton.toml" <<TOML
spec_version = 1
model_name = "zstd-pack-bench"
[runner]
runner_name = "noop"
required_framework_version = "=1.0.0"
runner_compat_version = 1
TOML
}
if [ ! -f weights/carton.toml ]; then
  mkdir -p weights/model
  /usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(17)
for i in range(2):
    w = rng.normal(0.0, 0.02, size=(256 << 20) // 4).astype(np.float32)
    w.tofile(f"weights/model/model-{i + 1:05d}-of-00002.bin")
PY
  toml weights
fi
if [ ! -f text/carton.toml ]; then
  mkdir -p text
  /usr/bin/python3 - <<'PY'
import itertools, os, random
rng = random.Random(17)
words = [
    "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
    for _ in range(20000)
]
cum = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(words))))  # Zipf-like
total, target, i = 0, 128 << 20, 0
while total < target:
    size = min(rng.randint(1 << 10, 128 << 10), target - total)
    out, n = [], 0
    while n < size:
        line = " ".join(rng.choices(words, cum_weights=cum, k=rng.randint(4, 16)))
        if rng.random() < 0.2:
            line += " " + str(rng.randint(0, 1 << 20))
        out.append(line)
        n += len(line) + 1
    d = f"text/model/part-{i % 20:02d}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/file-{i:05d}.txt", "w") as f:
        f.write(("\n".join(out) + "\n")[:size])
    total += size
    i += 1
PY
  toml text
fi

[ "$runs" -gt 0 ] || exit 0  # N = 0: only generate the corpora

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
: > runs.txt
for corpus in weights text; do
  files=$(find "$corpus" -type f | sort)
  bytes=$(cat $files | wc -c)
  for i in $(seq "$runs"); do
    rm -f out.carton out.zst; sync
    s=$(now); "$carton" pack "$corpus" -o out.carton --compression zstd > /dev/null; e=$(now)
    p=$(secs "$s" "$e")
    rm -f out.zst; sync
    s=$(now); zstd -q -T2 -2 --zstd=mml=4 -B2MiB -c $files > out.zst; e=$(now)
    z2=$(secs "$s" "$e"); z2size=$(stat -c %s out.zst)
    rm -f out.zst; sync
    s=$(now); zstd -q -T2 -3 -c $files > out.zst; e=$(now)
    z3=$(secs "$s" "$e"); z3size=$(stat -c %s out.zst)
    r2=$(echo "scale=4; $p / $z2" | bc); r3=$(echo "scale=4; $p / $z3" | bc)
    printf '%s: pack %.3f s  zstd -2 mml=4 -T2 %.3f s (%.2fx)  zstd -3 -T2 %.3f s (%.2fx)  load %s\n' \
      "$corpus" "$p" "$z2" "$r2" "$z3" "$r3" "$(cut -d' ' -f1 /proc/loadavg)"
    echo "$corpus $p $z2 $z3 $r2 $r3" >> runs.txt
  done
  psize=$(stat -c %s out.carton)
  rm -f out.zip; sync
  s=$(now); (cd "$corpus" && zip -q -r -6 ../out.zip .); e=$(now)
  zt=$(secs "$s" "$e"); zsize=$(stat -c %s out.zip)
  z19t=skipped; z19size=skipped
  if [ "${ZSTD19:-1}" = 1 ]; then
    s=$(now); zstd -q -T2 -19 -c $files > out.zst; e=$(now)
    z19t=$(secs "$s" "$e"); z19size=$(stat -c %s out.zst)
  fi
  rm -f out.zip out.zst out.carton
  # Median (the middle run, or the upper middle one) and range of a column.
  col() { awk -v c="$corpus" '$1 == c' runs.txt | cut -d' ' -f"$1" | sort -g | awk '{v[NR]=$1}
    END { printf "%.3f (%.3f-%.3f)", v[int(NR/2)+1], v[1], v[NR] }'; }
  echo "$corpus, medians of $runs (range): pack $(col 2) s, zstd -2 mml=4 $(col 3) s," \
    "zstd -3 $(col 4) s; pack / zstd same settings $(col 5), pack / zstd -3 $(col 6)"
  pct() { echo "scale=2; 100 * $1 / $bytes" | bc; }
  echo "$corpus sizes of $bytes bytes: carton zstd $psize ($(pct $psize)%)," \
    "zstd -2 mml=4 $z2size ($(pct $z2size)%), zstd -3 $z3size ($(pct $z3size)%)," \
    "zstd -19 $z19size ($([ "$z19size" = skipped ] || pct $z19size)%, $z19t s)," \
    "zip -6 $zsize ($(pct $zsize)%, $zt s)"
done
