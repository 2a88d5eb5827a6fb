#!/usr/bin/env bash
# links_bench.sh: fetching a 1 GiB linked file over loopback from nginx,
# plain and zstd-encoded, with `carton verify --fetch` (download into the
# blob cache, sha256 while it arrives) against `curl -o` of the same URL
# (no hash) in the same run.
#
#   bash bench/links_bench.sh CARTON [SCRATCH_DIR] [RUNS]
#
# CARTON is the built CLI (e.g. build-rel/tools/carton); SCRATCH_DIR
# defaults to /tmp/carton-links-bench (about 5 GiB is written there and
# removed at the end); RUNS defaults to 5. Prints the median wall time of
# each command and the ratio to curl's. nginx (Debian's nginx-light) runs
# unprivileged on 127.0.0.1 from a generated config.
set -euo pipefail
carton="$(realpath "$1")"
scratch="${2:-/tmp/carton-links-bench}"
runs="${3:-5}"
rm -rf "$scratch"
mkdir -p "$scratch"/{model/model,www/blobs,tmp,cache}
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$scratch"' EXIT

# 1 GiB: half random bytes, half zeros (zstd halves it, like many weights).
echo "writing the 1 GiB model file..." >&2
{ head -c 512M /dev/urandom; head -c 512M /dev/zero; } > "$scratch/model/model/weights.bin"
printf 'spec_version = 1\n[runner]\nrunner_name = "noop"\nrequired_framework_version = "=1.0.0"\nrunner_compat_version = 1\n' \
  > "$scratch/model/carton.toml"
"$carton" pack --compression stored "$scratch/model" -o "$scratch/full.carton" >/dev/null 2>&1
rm -rf "$scratch/model"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$scratch/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $scratch/nginx.pid;
error_log $scratch/error.log warn;
events { worker_connections 64; }
http {
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  client_body_temp_path $scratch/tmp/body;
  proxy_temp_path $scratch/tmp/proxy;
  fastcgi_temp_path $scratch/tmp/fastcgi;
  uwsgi_temp_path $scratch/tmp/uwsgi;
  scgi_temp_path $scratch/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $scratch/www;
    location ~ ^/zstd/(?<blob>[^/]+)\$ {
      add_header Content-Encoding zstd;
      try_files /blobs/\$blob.zst =404;
    }
  }
}
CONF
/usr/sbin/nginx -p "$scratch" -c "$scratch/nginx.conf" -e "$scratch/error.log" &
nginx_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break || sleep 0.05; done

echo "shrinking (writes the blob and its .zst copy)..." >&2
"$carton" shrink "$scratch/full.carton" -o "$scratch/plain.carton" --min-size 1 \
  --url-prefix "http://127.0.0.1:$port/blobs" --blobs "$scratch/www/blobs" --encodings zstd >/dev/null 2>&1
"$carton" shrink "$scratch/full.carton" -o "$scratch/zstd.carton" --min-size 1 \
  --url-prefix "http://127.0.0.1:$port/zstd" --blobs "$scratch/www/blobs" >/dev/null 2>&1
rm -f "$scratch/full.carton"
blob=$(cd "$scratch/www/blobs" && ls | grep -v '\.' | xargs ls -S | head -1)
ls -l "$scratch/www/blobs" >&2
cat "$scratch/www/blobs/$blob" "$scratch/www/blobs/$blob.zst" > /dev/null  # warm the page cache

seconds() {  # runs "$@" and prints its wall time in seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

run_carton() { rm -rf "$scratch/cache"; sync; CARTON_CACHE_DIR="$scratch/cache" "$carton" verify --fetch "$1"; }
run_curl() { rm -f "$scratch/curl.out"; sync; curl -sf "$@" -o "$scratch/curl.out"; }

declare -A times
for i in $(seq "$runs"); do
  times[carton_plain]+="$(seconds run_carton "$scratch/plain.carton") "
  times[curl_plain]+="$(seconds run_curl "http://127.0.0.1:$port/blobs/$blob") "
  times[carton_zstd]+="$(seconds run_carton "$scratch/zstd.carton") "
  times[curl_zstd]+="$(seconds run_curl --compressed "http://127.0.0.1:$port/zstd/$blob") "
  echo "run $i done" >&2
done
printf '%-32s %10s %10s %8s\n' "transfer (1 GiB, loopback)" "carton s" "curl s" "ratio"
for kind in plain zstd; do
  c=$(echo "${times[carton_$kind]}" | tr ' ' '\n' | grep . | median)
  u=$(echo "${times[curl_$kind]}" | tr ' ' '\n' | grep . | median)
  printf '%-32s %10.3f %10.3f %8.2f\n' "$kind" "$c" "$u" "$(echo "$c / $u" | bc -l)"
done
echo "all runs: ${times[*]@K}" >&2
