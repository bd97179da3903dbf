#!/usr/bin/env bash
# Whether the response cache's bound holds in memory (issue 27): a gateway whose one API
# caches every answer with `max_size: MAX` is fed new keys (wrk, a new query per
# request) until its store has been filled several times over; its resident memory
# (VmRSS) is read before and after, next to MAX. The growth should stay near MAX (the
# store's weight charges what an entry holds: crates/turnpike-cache/src/footprint.rs),
# not a multiple of it.
#
# Usage: bench/cache-memory.sh [--max 64MiB] [--duration 20] [--connections 50]
# TURNPIKE_BIN picks the binary (else a build of $TURNPIKE_PROFILE, bench/lib.sh).
# Needs: wrk, python3, taskset.
set -euo pipefail
cd "$(dirname "$0")/.."

max=64MiB; duration=20; conns=50
while [ $# -gt 0 ]; do
  case "$1" in
    --max) max=$2; shift 2;;
    --duration) duration=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

. bench/lib.sh

echo_port=$(free_port); port=$(free_port)
# Every miss stores (adaptive admission would stop storing a stream of new keys).
cache_api apis "$echo_port" "    policies: [ { cache: { ttl: 600s, max_size: $max$(admission_always "$bin") } } ]"
taskset -c 0 "$bin" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/apis.yaml" \
  --http-port "$port" --https-port off --data-dir "$work/data" --analytics off >"$work/gw.log" 2>&1 &
gw=$!; pids+=($gw)
wait_port "$echo_port"; wait_port "$port"


rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$gw/status"; }
mib() { awk -v b="$1" 'BEGIN{printf "%.1f MiB", b / 1048576}'; }
url="http://127.0.0.1:$port/api/v1/x"
# Warm-up: connections, buffers and the allocator's arenas (2 s of one repeated key).
taskset -c 0 wrk -t1 -c"$conns" -d2s "$url?size=50&warm" >/dev/null 2>&1
before=$(rss)
taskset -c 0 wrk -t1 -c"$conns" -d"${duration}s" -s bench/cache-unique.lua "$url" >"$work/wrk.out" 2>&1
after=$(rss)
reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
bound=$(python3 -c "
import re,sys
m = re.fullmatch(r'(\d+)\s*(KiB|MiB|GiB)?', sys.argv[1])
print(int(m.group(1)) * {None: 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30}[m.group(2)])" "$max")
echo "max_size $max; $reqs new keys (50-byte answers) in ${duration}s, ${conns} connections"
echo "gateway VmRSS: $(mib "$before") after warm-up, $(mib "$after") after the keys"
awk -v g="$((after - before))" -v b="$bound" \
  'BEGIN{printf "growth %.1f MiB = %.2fx max_size\n", g / 1048576, g / b}'
