#!/usr/bin/env bash
# Response cache (issue 27): the same open API through two gateways started from one file
# each, in front of `turnpike echo` (which serves `?size=N` bytes to a GET):
#   plain   no cache;
#   cached  `policies: [ { cache: { ttl: 60s } } ]`;
#   nostore the same cache with `statuses: [404]`: the echo's 200s are never storable.
# Arms (alternating rounds, medians; 100 connections by default):
#   hit-50 / hit-10k      cached gateway, one warm key: every request a HIT;
#   plain-50 / plain-10k  the same requests through the plain gateway;
#   miss                  cached gateway, every request a new key (a counter in the query):
#                         every request a MISS, looked up, led, stored;
#   plain-unique          the same unique-key requests through the plain gateway;
#   nostore               the unique-key requests through the nostore gateway: every
#                         request a MISS judged unstorable from the response head.
# Ratios: hit/plain throughput (target >= 1.5x at lower CPU per request); miss/plain-unique
# (target cost <= 5 %); nostore/plain-unique (a cache configured, nothing storable). Gateways pinned to core 1 (TURNPIKE_WORKERS=1); wrk and the echo
# back end to core 0.
#
# Usage: [TURNPIKE_BIN=... | TURNPIKE_PROFILE=ci-bench] bench/cache.sh [--duration 10] [--connections 100] [--rounds 3]
# Needs: wrk, taskset, curl, python3 (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=10; conns=100; rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

. bench/lib.sh

echo_port=$(free_port); plain_port=$(free_port); cached_port=$(free_port); nostore_port=$(free_port)
write_file() { # name policies-line
  cat >"$work/$1.yaml" <<YAML
apis:
  - name: api
    context: /api
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
$2
YAML
}
write_file plain ""
write_file cached "    policies: [ { cache: { ttl: 60s, max_size: 256MiB } } ]"
write_file nostore "    policies: [ { cache: { ttl: 60s, statuses: [404] } } ]"

taskset -c 0 "$bin" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
start_gw() { # name port
  TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/$1.yaml" \
    --http-port "$2" --https-port off --data-dir "$work/data-$1" --analytics off >"$work/gw-$1.log" 2>&1 &
  pids+=($!)
}
start_gw plain "$plain_port"; plain_pid=${pids[-1]}
start_gw cached "$cached_port"; cached_pid=${pids[-1]}
start_gw nostore "$nostore_port"; nostore_pid=${pids[-1]}
wait_port "$echo_port"; wait_port "$plain_port"; wait_port "$cached_port"; wait_port "$nostore_port"

x_cache() { curl -s -o /dev/null -D - "$1" | awk -F': ' 'tolower($1)=="x-cache" {print $2}' | tr -d '\r'; }
for size in 50 10240; do
  url="http://127.0.0.1:$cached_port/api/v1/x?size=$size"
  [ "$(x_cache "$url")" = MISS ] || { echo "first request not a MISS" >&2; exit 1; }
  [ "$(x_cache "$url")" = HIT ] || { echo "second request not a HIT" >&2; exit 1; }
done


hz=$(getconf CLK_TCK)
run_one() { # url gateway-pid [lua] -> "rps p50us p99us cpu_us_per_req non2xx requests"
  local url=$1 pid=$2 script=${3:-} before after reqs
  before=$(cpu_ticks "$pid")
  taskset -c 0 wrk -t1 -c"$conns" -d"${duration}s" --latency ${script:+-s "$script"} "$url" >"$work/wrk.out" 2>&1
  after=$(cpu_ticks "$pid")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$work/wrk.out")
  echo "$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out") \
$(to_us "$(awk '$1=="50%" {print $2}' "$work/wrk.out")") \
$(to_us "$(awk '$1=="99%" {print $2}' "$work/wrk.out")") \
$(awk -v a="$after" -v b="$before" -v hz="$hz" -v n="${reqs:-0}" 'BEGIN{ if (n > 0) printf "%.1f", (a-b)/hz*1e6/n; else print "-" }') \
${non2xx:-0} ${reqs:-0}"
}

results="$work/results.txt"; : >"$results"
plain="http://127.0.0.1:$plain_port/api/v1/x"; cached="http://127.0.0.1:$cached_port/api/v1/x"
nostore="http://127.0.0.1:$nostore_port/api/v1/x"
arms=(plain-50 hit-50 plain-10k hit-10k plain-unique miss nostore)
for r in $(seq "$rounds"); do
  for which in "${arms[@]}"; do
    case $which in
      plain-50) line=$(run_one "$plain?size=50" "$plain_pid");;
      hit-50) line=$(run_one "$cached?size=50" "$cached_pid");;
      plain-10k) line=$(run_one "$plain?size=10240" "$plain_pid");;
      hit-10k) line=$(run_one "$cached?size=10240" "$cached_pid");;
      plain-unique) line=$(run_one "$plain" "$plain_pid" bench/cache-unique.lua);;
      miss) line=$(run_one "$cached" "$cached_pid" bench/cache-unique.lua);;
      nostore) line=$(run_one "$nostore" "$nostore_pid" bench/cache-unique.lua);;
    esac
    echo "$which $line" >>"$results"
  done
  echo "round $r done" >&2
done
# The cached gateway's memory after every round's misses, beside its store's bound (the
# store's weight charges what an entry holds: bench/cache-memory.sh measures the growth).
rss_mib=$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$cached_pid/status")

echo "cached gateway VmRSS after the rounds: ${rss_mib} MiB (max_size 256MiB)" >&2
python3 - "$results" "$conns" "$duration" "$rounds" <<'PY'
import sys, statistics as st
path, conns, dur, rounds = sys.argv[1:]
rows = {}
for line in open(path):
    name, rps, p50, p99, cpu, non2xx, reqs = line.split()
    rows.setdefault(name, []).append((float(rps), float(p50), float(p99), None if cpu == '-' else float(cpu), int(non2xx), int(reqs)))
med = lambda i, name: st.median([r[i] for r in rows[name] if r[i] is not None])
print(f"\nopen API, one gateway worker, {conns} connections, {dur}s x {rounds} rounds, medians\n")
print("| arm | req/s | p50 | p99 | gateway CPU/req | non-2xx |")
print("|---|---|---|---|---|---|")
for name in ("plain-50", "hit-50", "plain-10k", "hit-10k", "plain-unique", "miss", "nostore"):
    print(f"| {name} | {med(0, name):,.0f} | {med(1, name):.0f} us | {med(2, name):.0f} us | {med(3, name):.1f} us | {sum(r[4] for r in rows[name])} |")
for a, b, target in (("hit-50", "plain-50", ">= 1.5"), ("hit-10k", "plain-10k", ">= 1.5"), ("miss", "plain-unique", ">= 0.95"), ("nostore", "plain-unique", ">= 0.95")):
    print(f"\n{a}/{b}: throughput {med(0, a) / med(0, b):.3f} (target {target}), CPU per request {med(3, a) / med(3, b):.3f}x")
PY
