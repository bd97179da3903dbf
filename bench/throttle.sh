#!/usr/bin/env bash
# Throttling cost (issue 5): in one run and alternating rounds, wrk drives
#   (a) plain:   an API without throttling,
#   (b) limited: the same gateway, an API with an advanced policy and the Unauthenticated
#                tier (per client IP) whose limits are far from reached,
#   (c) redis:   a second gateway process with the same file and --redis (quota leased
#                in batches from a real redis-server by a background task),
# each gateway pinned to core 1 (one worker), wrk + echo back end + redis-server on core 0,
# and prints throughput, p50, p99, gateway CPU per request and the ratios against (a)
# (targets: (b) costs <= 5% throughput, (c) <= 10%).
#
# Usage: bench/throttle.sh [--duration 10] [--connections 100] [--rounds 3]
# Needs: wrk, redis-server, taskset (scripts/install-deps.sh); builds the release binary.
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

# TURNPIKE_BIN=path skips the build (e.g. a copy of the release binary on a busy box).
if [ -n "${TURNPIKE_BIN:-}" ]; then bin=$TURNPIKE_BIN; else
  cargo build --release -p turnpike >/dev/null; bin=target/release/turnpike; fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

echo_port=$(free_port); gw_port=$(free_port); gwr_port=$(free_port); redis_port=$(free_port)

taskset -c 0 "$bin" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
taskset -c 0 redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)

# Limits far beyond what one run can reach, so every request is counted and passes.
cat >"$work/apis.yaml" <<YAML
throttling:
  subscription_tiers:
    - name: Unauthenticated
      quota: { requests: 1000000000000, per: minute }
  advanced_policies:
    - name: High
      default_limit: { requests: 1000000000000, per: minute }
apis:
  - name: plain
    context: /plain
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
  - name: limited
    context: /limited
    version: v1
    throttling: High
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
YAML

start_gw() { # port extra-args... -> pid
  local port=$1; shift
  TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/apis.yaml" \
    --http-port "$port" --https-port off --data-dir "$work/data" "$@" >"$work/gw-$port.log" 2>&1 &
  echo $!
}
gw_pid=$(start_gw "$gw_port"); pids+=($gw_pid)
# b >= rate x sync interval (docs/throttling.md): 10000 >= ~50k/s x 50 ms.
gwr_pid=$(start_gw "$gwr_port" --redis "redis://127.0.0.1:$redis_port/" --redis-batch 10000); pids+=($gwr_pid)
wait_port "$echo_port"; wait_port "$gw_port"; wait_port "$gwr_port"; wait_port "$redis_port"
sleep 0.5
for u in "http://127.0.0.1:$gw_port/plain/v1/x" "http://127.0.0.1:$gw_port/limited/v1/x" "http://127.0.0.1:$gwr_port/limited/v1/x"; do
  curl -sf -o /dev/null "$u" || { echo "warm-up failed: $u" >&2; exit 1; }
done
curl -si "http://127.0.0.1:$gwr_port/limited/v1/x" | grep -i '^ratelimit' >&2

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
to_us() { awk -v v="$1" 'BEGIN{ if (v ~ /us$/) {sub(/us/,"",v); print v+0} else if (v ~ /ms$/) {sub(/ms/,"",v); print v*1000} else if (v ~ /s$/) {sub(/s/,"",v); print v*1000000} else print v }'; }

run_one() { # url pid -> "rps p50us p99us cpu_us_per_req non2xx"
  local url=$1 pid=$2 before after reqs rps p50 p99 non2xx cpu
  before=$(cpu_ticks "$pid")
  taskset -c 0 wrk -t1 -c"$conns" -d"${duration}s" --latency "$url" >"$work/wrk.out" 2>&1
  after=$(cpu_ticks "$pid")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
  p50=$(to_us "$(awk '$1=="50%" {print $2}' "$work/wrk.out")")
  p99=$(to_us "$(awk '$1=="99%" {print $2}' "$work/wrk.out")")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$work/wrk.out"); non2xx=${non2xx:-0}
  cpu=$(awk -v a="$after" -v b="$before" -v hz="$hz" -v n="$reqs" 'BEGIN{printf "%.2f", (a-b)/hz*1e6/n}')
  echo "$rps $p50 $p99 $cpu $non2xx"
}

results="$work/results.txt"; : >"$results"
for r in $(seq "$rounds"); do
  echo "plain $(run_one "http://127.0.0.1:$gw_port/plain/v1/x" "$gw_pid")" >>"$results"
  echo "limited $(run_one "http://127.0.0.1:$gw_port/limited/v1/x" "$gw_pid")" >>"$results"
  echo "redis $(run_one "http://127.0.0.1:$gwr_port/limited/v1/x" "$gwr_pid")" >>"$results"
  echo "round $r done" >&2
done
keys=$(redis-cli -p "$redis_port" --scan --pattern 'turnpike:throttle:*' | wc -l)

python3 - "$results" "$conns" "$duration" "$rounds" "$keys" <<'PY'
import sys, statistics as st
path, conns, dur, rounds, keys = sys.argv[1:]
rows = {}
for line in open(path):
    t, rps, p50, p99, cpu, non2xx = line.split()
    rows.setdefault(t, []).append((float(rps), float(p50), float(p99), float(cpu), int(non2xx)))
med = lambda xs: st.median(xs)
print(f"\nGET through one gateway worker, {conns} connections, {dur}s x {rounds} rounds, medians\n")
print("| target | req/s | p50 | p99 | gateway CPU/req | non-2xx |")
print("|---|---|---|---|---|---|")
s = {}
for t in ["plain", "limited", "redis"]:
    v = rows[t]
    s[t] = [med([x[i] for x in v]) for i in range(4)]
    print(f"| {t} | {s[t][0]:,.0f} | {s[t][1]/1000:.2f} ms | {s[t][2]/1000:.2f} ms | {s[t][3]:.2f} µs | {sum(x[4] for x in v)} |")
p = s["plain"]
for t, target in [("limited", 5), ("redis", 10)]:
    cost = (1 - s[t][0] / p[0]) * 100
    print(f"\n{t}/plain throughput {s[t][0]/p[0]:.3f} (cost {cost:.1f}%, target <= {target}%), CPU/req {s[t][3]/p[3]:.3f}", end="")
print(f"\nredis lease hashes written: {keys}")
PY
