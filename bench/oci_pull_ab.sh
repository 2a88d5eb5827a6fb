#!/usr/bin/env bash
# oci_pull_ab.sh A B [RUNS] [SCRATCH]: two carton CLIs pulling the same 1 GiB
# stored carton from a loopback docker-registry, alternating with a curl GET
# of its weights blob (the baseline) in every run, each pull into an empty
# cache; checks every pull is byte-identical to the pushed carton and prints
# the medians and their ratios to curl. A and B: e.g. a build of main and of
# a change.
set -euo pipefail
A="$(realpath "$1")"; B="$(realpath "$2")"; runs="${3:-5}"; scratch="${4:-/tmp/carton-pull-ab}"
rm -rf "$scratch"; mkdir -p "$scratch"/{model/model,storage}
trap 'kill "$registry_pid" 2>/dev/null || true; rm -rf "$scratch"' EXIT
head -c 1G /dev/urandom > "$scratch/model/model/weights.bin"
printf 'spec_version = 1\n[runner]\nrunner_name = "noop"\nrequired_framework_version = "=1.0.0"\nrunner_compat_version = 1\n' > "$scratch/model/carton.toml"
"$A" pack --compression stored "$scratch/model" -o "$scratch/m.carton" >/dev/null 2>&1
digest="sha256:$(openssl dgst -sha256 -r "$scratch/model/model/weights.bin" | cut -d' ' -f1)"
rm "$scratch/model/model/weights.bin"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s/storage\nhttp:\n  addr: 127.0.0.1:%s\n' "$scratch" "$port" > "$scratch/registry.yml"
docker-registry serve "$scratch/registry.yml" >"$scratch/registry.log" 2>&1 &
registry_pid=$!
reg="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -s -o /dev/null "$reg/v2/" && break || sleep 0.05; done
CARTON_CACHE_DIR="$scratch/c0" "$A" push "$scratch/m.carton" "oci://127.0.0.1:$port/m:v1" >/dev/null 2>&1
rm -rf "$scratch/c0"
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
: > $scratch/curl.t; : > $scratch/a.t; : > $scratch/b.t
for i in $(seq "$runs"); do
  rm -f "$scratch/curl.out"; sync
  t0=$(now); curl -sS -f -o "$scratch/curl.out" "$reg/v2/m/blobs/$digest"; t1=$(now); echo "$t1 - $t0" | bc >> $scratch/curl.t
  rm -f "$scratch/curl.out"
  for x in a b; do
    bin=$A; [ $x = b ] && bin=$B
    rm -rf "$scratch/pc" "$scratch/p.carton"; sync
    t0=$(now); CARTON_CACHE_DIR="$scratch/pc" "$bin" pull "oci://127.0.0.1:$port/m:v1" -o "$scratch/p.carton" >/dev/null 2>&1; t1=$(now)
    echo "$t1 - $t0" | bc >> $scratch/$x.t
    cmp -s "$scratch/p.carton" "$scratch/m.carton" || { echo "pull $x: not identical" >&2; exit 1; }
  done
  echo "run $i: curl $(tail -1 $scratch/curl.t) A $(tail -1 $scratch/a.t) B $(tail -1 $scratch/b.t) (load $(cut -d' ' -f1 /proc/loadavg))" >&2
done
c=$(median < $scratch/curl.t); a=$(median < $scratch/a.t); b=$(median < $scratch/b.t)
printf 'medians of %s: curl %.3f s, A %.3f s (%.2fx curl), B %.3f s (%.2fx curl)\n' "$runs" "$c" "$a" "$(echo "$a/$c"|bc -l)" "$b" "$(echo "$b/$c"|bc -l)"
