#!/usr/bin/env bash
# Adaptive admission under a burst of new keys (docs/caching.md, "Admission"): the
# default cache (`cache: { ttl: 60s }`, 64 MiB store) in front of `turnpike echo`, the
# bench kit's open loop at --rate R with a new key per request (`{seq}`). After a warm-up
# of --warmup seconds (the store goes selective within two windows of 4096 lookups), the
# measured window of --duration seconds: the answers, the misses the store left unstored
# (`turnpike_cache_unadmitted_total` in /metrics) and so the share of one-off keys that
# were stored anyway (their counter in the count table taken by another key, or a window
# the store spent storing every miss). Then, 1.5 s after the burst, whether the mode ended.
# Usage: bench/cache-admission.sh [--rate 7000] [--duration 20] [--warmup 3] BIN [BIN...]
# Needs: curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

rate=7000; duration=20; warmup=3; bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2;;
    --duration) duration=$2; shift 2;;
    --warmup) warmup=$2; shift 2;;
    -*) echo "unknown option $1" >&2; exit 2;;
    *) bins+=("$1"); shift;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { echo "usage: $0 [--rate R] [--duration S] [--warmup S] BIN [BIN...]" >&2; exit 2; }
TURNPIKE_BIN=${bins[0]}
. bench/lib.sh

metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 ~ "^"m"[{]" {print $2}'; }
kit() { # bin port seconds -> answers
  TURNPIKE_LOG=warn "$1" bench run --url "http://127.0.0.1:$2/api/v1/x?n={seq}" --rate "$rate" \
    --connections 20 --threads 1 --warmup 0s --duration "${3}s" --json >"$work/kit.json" 2>"$work/kit.err" \
    || { echo "bench run failed: $(cat "$work/kit.err")" >&2; exit 1; }
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['samples'])" "$work/kit.json"
}

printf '%-36s %8s %9s %10s %9s %s\n' binary rate answers unadmitted stored "selective after 1.5 s quiet"
for b in "${bins[@]}"; do
  echo_port=$(free_port); port=$(free_port); mport=$(free_port)
  cache_api "adm" "$echo_port" "    policies: [ { cache: { ttl: 60s } } ]"
  "$b" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
  pids+=($!); e=$!
  TURNPIKE_LOG=warn "$b" gateway --config "$work/adm.yaml" --http-port "$port" --https-port off \
    --data-dir "$work/data-$port" --analytics off --metrics-addr "127.0.0.1:$mport" >"$work/gw.log" 2>&1 &
  pids+=($!); g=$!
  wait_port "$echo_port"; wait_port "$port"; wait_port "$mport"
  kit "$b" "$port" "$warmup" >/dev/null
  before=$(metric "$mport" turnpike_cache_unadmitted_total)
  n=$(kit "$b" "$port" "$duration")
  after=$(metric "$mport" turnpike_cache_unadmitted_total)
  sleep 1.5
  quiet=$(metric "$mport" turnpike_cache_selective)
  unadmitted=$((after - before))
  stored=$(python3 -c "print(f'{($n - $unadmitted) / $n * 100:.1f} %')")
  printf '%-36s %8s %9s %10s %9s %s\n' "$b" "$rate" "$n" "$unadmitted" "$stored" "$quiet"
  kill "$g" "$e" 2>/dev/null || true; wait "$g" "$e" 2>/dev/null || true
done
