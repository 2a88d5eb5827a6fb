#!/usr/bin/env bash
# ab_cli.sh: two builds of the `carton` CLI compared on one model, run
# alternately so that both see the same machine: pack (stored), verify, a
# first load into a fresh cache and a cache hit, each a child process timed
# wall-clock; medians, and new/old ratios. Also checks that both pack the
# same bytes. The model: 1 GB of random data in two files and 100 text files.
# AB_EXT=safetensors names the two big files *.safetensors, which the loader
# maps (views in the cached carton) as well as copying into the model folder.
#
#   bash bench/ab_cli.sh OLD_CARTON NEW_CARTON [RUNS] [SCRATCH_DIR]
set -euo pipefail
A="$(realpath "$1")"; B="$(realpath "$2")"
w="${4:-/tmp/carton-ab}"; rm -rf "$w"; mkdir -p $w/m/model $w/m/tensor_data
trap 'rm -rf "$w"' EXIT
cat > $w/m/carton.toml <<T
spec_version = 1
name = "ab"
[runner]
runner_name = "noop"
required_framework_version = "*"
runner_compat_version = 1
T
ext=${AB_EXT:-bin}
head -c 600000000 /dev/urandom > $w/m/model/a.$ext
head -c 400000000 /dev/urandom > $w/m/model/b.$ext
for i in $(seq 1 100); do seq 1 $((i*300)) > $w/m/model/t$i.txt; done
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1; local e=$(date +%s.%N); awk -v a="$s" -v b="$e" 'BEGIN { printf "%.4f\n", b - a }'; }
declare -A R
runs=${3:-7}
for i in $(seq 1 $runs); do
  for v in A B; do
    bin=${!v}
    rm -f $w/$v.carton
    R[pack$v]+="$(t $bin pack $w/m -o $w/$v.carton --compression stored) "
  done
  R[openssl]+="$(t openssl dgst -sha256 $w/A.carton) "
  for v in A B; do bin=${!v}; R[verify$v]+="$(t $bin verify $w/$v.carton) "; done
  for v in A B; do
    bin=${!v}; rm -rf $w/cache$v
    R[first$v]+="$(t env CARTON_CACHE_DIR=$w/cache$v $bin load $w/$v.carton) "
    R[hit$v]+="$(t env CARTON_CACHE_DIR=$w/cache$v $bin load $w/$v.carton) "
  done
done
cmp $w/A.carton $w/B.carton && echo "packed bytes identical"
med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); runs: $runs"
printf "%-10s %10s %10s %8s\n" what old new new/old
echo "openssl $(echo ${R[openssl]} | med)"
for k in pack verify first hit; do
  a=$(echo ${R[${k}A]} | med); b=$(echo ${R[${k}B]} | med)
  printf "%-10s %10.4f %10.4f %8.3f\n" $k $a $b $(awk -v a="$a" -v b="$b" 'BEGIN { print b / a }')
done
