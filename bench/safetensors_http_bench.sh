#!/usr/bin/env bash
# safetensors_http_bench.sh: `carton safetensors inspect URL` of a 1 GiB
# file (1,000 tensors) and of a file with a 10 MB header (100,000 tensors),
# served by nginx on 127.0.0.1: requests and body bytes per inspect, from
# nginx's access log, against the header's size; and the wall time against
# `curl -r 0-(8+N-1)`, one request for exactly the length and the header
# (the least a client that already knew N could fetch), in the same run.
#
#   bash bench/safetensors_http_bench.sh CARTON SAFETENSORS_BENCH [SCRATCH_DIR] [RUNS]
#
# CARTON is the built CLI and SAFETENSORS_BENCH the built bench program
# (it writes the files); SCRATCH_DIR defaults to /tmp/carton-st-http-bench
# (about 1.1 GB, removed at the end); RUNS defaults to 7.
set -euo pipefail
carton="$(realpath "$1")"
writer="$(realpath "$2")"
scratch="${3:-/tmp/carton-st-http-bench}"
runs="${4:-7}"
rm -rf "$scratch"
mkdir -p "$scratch"/{www,tmp}
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$scratch"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "writing the files..." >&2
"$writer" --write-large "$scratch/www/large.safetensors"
"$writer" --write-many "$scratch/www/many.safetensors"
header_size() {
  "$carton" safetensors inspect --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["header_size"])'
}

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
  log_format counts '\$request_uri \$status \$body_bytes_sent';
  access_log $scratch/access.log counts;
  client_body_temp_path $scratch/tmp/body;
  proxy_temp_path $scratch/tmp/proxy;
  fastcgi_temp_path $scratch/tmp/fastcgi;
  uwsgi_temp_path $scratch/tmp/uwsgi;
  scgi_temp_path $scratch/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $scratch/www;
    # The same files under another name, for curl: the log tells them apart.
    location /curl/ { alias $scratch/www/; }
  }
}
CONF
/usr/sbin/nginx -p "$scratch" -c "$scratch/nginx.conf" -e "$scratch/error.log" &
nginx_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break || sleep 0.05; done
cat "$scratch"/www/*.safetensors > /dev/null  # page cache warm

seconds() {  # runs "$@" and prints its wall time in seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
spread() { sort -n | awk 'NR==1{min=$1} {max=$1} END {printf "%.4f-%.4f", min, max}'; }
# The access log once nginx has written the line of every earlier request.
synced_log() {
  local tag="/.sync-$RANDOM$RANDOM"
  curl -s -o /dev/null "http://127.0.0.1:$port$tag" || true
  for _ in $(seq 200); do grep -q "^$tag " "$scratch/access.log" && break || sleep 0.01; done
  grep -v '^/\.sync-' "$scratch/access.log"
}

printf '%-20s %6s %9s %12s %10s %8s %12s %12s %8s\n' file header requests bytes "bytes/hdr" runs "inspect s" "curl s" ratio
for name in large many; do
  n=$(header_size "$scratch/www/$name.safetensors")
  url="http://127.0.0.1:$port/$name.safetensors"
  curl_url="http://127.0.0.1:$port/curl/$name.safetensors"
  t_inspect="" t_curl=""
  for _ in $(seq "$runs"); do
    t_inspect+="$(seconds "$carton" safetensors inspect "$url") "
    t_curl+="$(seconds curl -sf -r "0-$((8 + n - 1))" -o /dev/null "$curl_url") "
  done
  log=$(synced_log)
  requests=$(echo "$log" | awk -v u="/$name.safetensors" '$1 == u' | wc -l)
  bytes=$(echo "$log" | awk -v u="/$name.safetensors" '$1 == u {s += $3} END {print s + 0}')
  statuses=$(echo "$log" | awk -v u="/$name.safetensors" '$1 == u {print $2}' | sort -u | tr '\n' ' ')
  i=$(echo "$t_inspect" | tr ' ' '\n' | grep . | median)
  c=$(echo "$t_curl" | tr ' ' '\n' | grep . | median)
  printf '%-20s %6s %9s %12s %10.3f %8s %12.4f %12.4f %8.2f\n' "$name.safetensors" "$n" \
    "$(echo "$requests / $runs" | bc -l | xargs printf '%.2f')" "$((bytes / runs))" \
    "$(echo "$bytes / $runs / (8 + $n)" | bc -l)" "$runs" "$i" "$c" "$(echo "$i / $c" | bc -l)"
  echo "  $name: inspect runs $(echo "$t_inspect" | tr ' ' '\n' | grep . | spread) s," \
    "curl runs $(echo "$t_curl" | tr ' ' '\n' | grep . | spread) s, statuses: $statuses"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
