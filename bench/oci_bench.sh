#!/usr/bin/env bash
# oci_bench.sh: `carton push` and `carton pull` of a 1 GiB carton to and
# from Debian's docker-registry on 127.0.0.1, against `curl` moving the
# same bytes to and from the same registry's blob endpoint in the same run
# (a monolithic PUT of the weights file; a GET of that blob), and a re-push
# of the unchanged carton (one HEAD per blob and the manifest PUT) against
# curl sending the same HEADs. Also times a pull whose blobs are all cached
# (one manifest request and the rebuild), `pull --cache` (the weights
# written into the blob cache and into the carton), and `dd` writing the
# downloaded blob a second time (what --cache adds to a pull, which writes
# a large blob only into the carton), to show where a pull's time goes.
#
#   bash bench/oci_bench.sh CARTON [SCRATCH_DIR] [RUNS]
#
# CARTON is the built CLI (build-rel/tools/carton). SCRATCH_DIR defaults to
# /tmp/carton-oci-bench (about 6 GiB is written there and removed at the
# end); RUNS defaults to 5. Every push goes to a new repository with an
# empty carton cache (so no blob is present and no mount is known: every
# byte is sent), every pull into an empty cache. Prints the median of each
# and its ratio to curl's, and the load average.
set -euo pipefail
carton="$(realpath "$1")"
scratch="${2:-/tmp/carton-oci-bench}"
runs="${3:-5}"
rm -rf "$scratch"
mkdir -p "$scratch"/{model/model,storage}
trap 'kill "$registry_pid" 2>/dev/null || true; rm -rf "$scratch"' EXIT

echo "writing the 1 GiB model file..." >&2
head -c 1G /dev/urandom > "$scratch/model/model/weights.bin"
printf 'spec_version = 1\n[runner]\nrunner_name = "noop"\nrequired_framework_version = "=1.0.0"\nrunner_compat_version = 1\n' \
  > "$scratch/model/carton.toml"
"$carton" pack --compression stored "$scratch/model" -o "$scratch/m.carton" >/dev/null 2>&1
weights="$scratch/model/model/weights.bin"
digest="sha256:$(openssl dgst -sha256 -r "$weights" | cut -d' ' -f1)"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$scratch/registry.yml" <<YML
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $scratch/storage
http:
  addr: 127.0.0.1:$port
YML
docker-registry serve "$scratch/registry.yml" >"$scratch/registry.log" 2>&1 &
registry_pid=$!
reg="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -s -o /dev/null "$reg/v2/" && break || sleep 0.05; done

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

curl_push() {  # $1: repository
  local loc
  loc=$(curl -sS -X POST -D - -o /dev/null "$reg/v2/$1/blobs/uploads/" |
        tr -d '\r' | awk 'tolower($1)=="location:" {print $2}')
  curl -sS -f -X PUT -H 'Content-Type: application/octet-stream' -T "$weights" \
    -o /dev/null "$loc&digest=$digest"
}

: > "$scratch/push.times"; : > "$scratch/curl_push.times"
: > "$scratch/pull.times"; : > "$scratch/curl_pull.times"
: > "$scratch/repush.times"; : > "$scratch/curl_heads.times"; : > "$scratch/rebuild.times"
: > "$scratch/copy.times"; : > "$scratch/pull_cache.times"
for i in $(seq "$runs"); do
  sync
  t0=$(now); curl_push "curl$i"; t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/curl_push.times"
  rm -rf "$scratch/cache"
  t0=$(now)
  CARTON_CACHE_DIR="$scratch/cache" "$carton" push "$scratch/m.carton" "oci://127.0.0.1:$port/carton$i:v1" >/dev/null 2>&1
  t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/push.times"

  # A re-push of the unchanged carton: one HEAD per blob and the manifest.
  t0=$(now)
  CARTON_CACHE_DIR="$scratch/cache" "$carton" push "$scratch/m.carton" "oci://127.0.0.1:$port/carton$i:v1" >/dev/null 2>&1
  t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/repush.times"
  blobs=$(CARTON_CACHE_DIR="$scratch/cache" "$carton" push --json "$scratch/m.carton" "oci://127.0.0.1:$port/carton$i:v1" |
          python3 -c 'import json, sys; print(" ".join(b["digest"] for b in json.load(sys.stdin)["blobs"]))')
  urls=()
  for b in $blobs; do urls+=("$reg/v2/carton$i/blobs/$b"); done
  t0=$(now); curl -sS --head "${urls[@]}" >/dev/null; t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/curl_heads.times"

  rm -f "$scratch/curl.out" "$scratch/curl.copy"; sync
  t0=$(now); curl -sS -f -o "$scratch/curl.out" "$reg/v2/curl$i/blobs/$digest"; t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/curl_pull.times"
  # A pull --cache writes the bytes twice (the blob cache, then the
  # carton): the same second write of the downloaded file, in 256 KiB
  # writes as the carton's writer makes them.
  t0=$(now); dd if="$scratch/curl.out" of="$scratch/curl.copy" bs=256K status=none; t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/copy.times"
  rm -rf "$scratch/pull-cache" "$scratch/pulled.carton"; sync
  t0=$(now)
  CARTON_CACHE_DIR="$scratch/pull-cache" "$carton" pull "oci://127.0.0.1:$port/carton$i:v1" -o "$scratch/pulled.carton" >/dev/null 2>&1
  t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/pull.times"
  cmp -s "$scratch/pulled.carton" "$scratch/m.carton" || { echo "pull $i: not byte-identical" >&2; exit 1; }
  # pull --cache into an empty cache: the weights go into the blob cache
  # too.
  rm -rf "$scratch/pull-cache" "$scratch/pulled.carton"; sync
  t0=$(now)
  CARTON_CACHE_DIR="$scratch/pull-cache" "$carton" pull --cache "oci://127.0.0.1:$port/carton$i:v1" -o "$scratch/pulled.carton" >/dev/null 2>&1
  t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/pull_cache.times"
  cmp -s "$scratch/pulled.carton" "$scratch/m.carton" || { echo "pull --cache $i: not byte-identical" >&2; exit 1; }
  # The same pull with every blob cached: the manifest request and the
  # rebuild of the carton from the cached blobs.
  rm -f "$scratch/pulled.carton"; sync
  t0=$(now)
  CARTON_CACHE_DIR="$scratch/pull-cache" "$carton" pull "oci://127.0.0.1:$port/carton$i:v1" -o "$scratch/pulled.carton" >/dev/null 2>&1
  t1=$(now)
  echo "$t1 - $t0" | bc >> "$scratch/rebuild.times"
  echo "run $i: push $(tail -1 "$scratch/push.times") s (curl $(tail -1 "$scratch/curl_push.times")), pull $(tail -1 "$scratch/pull.times") s (curl $(tail -1 "$scratch/curl_pull.times"); --cache: $(tail -1 "$scratch/pull_cache.times"); cached: $(tail -1 "$scratch/rebuild.times")), copy $(tail -1 "$scratch/copy.times") s, re-push $(tail -1 "$scratch/repush.times") s ($(echo "$blobs" | wc -w) HEADs by curl: $(tail -1 "$scratch/curl_heads.times") s)" >&2
done

m() { median < "$scratch/$1.times"; }
push=$(m push); curl_push_t=$(m curl_push); pull=$(m pull); curl_pull_t=$(m curl_pull)
repush=$(m repush); heads=$(m curl_heads); rebuild=$(m rebuild); copy=$(m copy)
pull_cache=$(m pull_cache)
printf 'carton push 1 GiB:  %.3f s, curl PUT of the same bytes: %.3f s, ratio %.2f\n' \
  "$push" "$curl_push_t" "$(echo "$push / $curl_push_t" | bc -l)"
printf 'carton pull 1 GiB:  %.3f s, curl GET of the same bytes: %.3f s, ratio %.2f\n' \
  "$pull" "$curl_pull_t" "$(echo "$pull / $curl_pull_t" | bc -l)"
printf 'carton pull --cache 1 GiB: %.3f s (ratio %.2f to curl); curl GET + a second write of the same bytes (dd): %.3f + %.3f s, ratio %.2f\n' \
  "$pull_cache" "$(echo "$pull_cache / $curl_pull_t" | bc -l)" "$curl_pull_t" "$copy" \
  "$(echo "$pull_cache / ($curl_pull_t + $copy)" | bc -l)"
printf 'carton pull, every blob cached (manifest request + rebuild): %.3f s\n' "$rebuild"
printf 'carton re-push:     %.3f s, curl HEAD of every blob: %.3f s, re-push minus HEADs: %.3f s\n' \
  "$repush" "$heads" "$(echo "$repush - $heads" | bc -l)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
