#!/usr/bin/env bash
# Passthrough benchmark of issue 2: one wrk drives, in one run and alternating rounds,
#   (a) the echo back end directly, (b) the Turnpike gateway, (c) nginx as a plain reverse
#   proxy (1 worker, upstream keep-alive),
# with each proxy pinned to core 1 and wrk + the echo back end pinned to core 0. For each
# target and body size it prints throughput, p50, p99 and the proxy's own CPU time per
# request (utime+stime from /proc/PID/stat before and after), then Turnpike/nginx ratios.
#
# Usage: bench/proxy-vs-nginx.sh [--duration 10] [--connections 100] [--rounds 3] [--sizes "50 1024"]
# Needs: wrk, nginx, taskset (scripts/install-deps.sh), a release build (built here unless
# TURNPIKE_BIN names one).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=10; conns=100; rounds=3; sizes="50 1024"
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --sizes) sizes=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

# TURNPIKE_BIN=path compares another build (e.g. an older commit's) without building.
TURNPIKE_PROFILE=${TURNPIKE_PROFILE:-release}
. bench/lib.sh

echo_port=$(free_port); gw_port=$(free_port); nginx_port=$(free_port)

taskset -c 0 "$bin" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)

cat >"$work/apis.yaml" <<YAML
apis:
  - name: echo
    context: /echo
    version: v1
    default: true
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET, POST, PUT, DELETE] }
YAML
TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/apis.yaml" \
  --http-port "$gw_port" --https-port 0 --data-dir "$work/data" >"$work/gw.log" 2>&1 &
gw_pid=$!; pids+=($gw_pid)

nginx_start <<NGINX
  proxy_temp_path $work/nginx/proxy;
  upstream echo { server 127.0.0.1:$echo_port; keepalive 256; }
  server {
    listen 127.0.0.1:$nginx_port reuseport backlog=4096;
    location /echo/v1/ {
      proxy_pass http://echo/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
NGINX

wait_port "$echo_port"; wait_port "$gw_port"; wait_port "$nginx_port"
nginx_worker=$(nginx_worker_pid)
hz=$(getconf CLK_TCK)

run_one() { # name url size pid_or_empty -> "rps p50us p99us cpu_us_per_req"
  local name=$1 url=$2 size=$3 pid=$4
  head -c "$size" /dev/zero | tr '\0' 'x' >"$work/body"
  cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/plain"
local f = io.open("$work/body", "rb"); wrk.body = f:read("*a"); f:close()
LUA
  local before=0 after=0
  [ -n "$pid" ] && before=$(cpu_ticks "$pid")
  taskset -c 0 wrk -t1 -c"$conns" -d"${duration}s" --latency -s "$work/post.lua" "$url" >"$work/wrk.out" 2>&1
  [ -n "$pid" ] && after=$(cpu_ticks "$pid")
  local reqs rps p50 p99 non2xx
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
  p50=$(to_us "$(awk '$1=="50%" {print $2}' "$work/wrk.out")")
  p99=$(to_us "$(awk '$1=="99%" {print $2}' "$work/wrk.out")")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$work/wrk.out"); non2xx=${non2xx:-0}
  local cpu="-"
  if [ -n "$pid" ] && [ "${reqs:-0}" -gt 0 ]; then
    cpu=$(awk -v a="$after" -v b="$before" -v hz="$hz" -v n="$reqs" 'BEGIN{printf "%.1f", (a-b)/hz*1e6/n}')
  fi
  echo "$rps $p50 $p99 $cpu $non2xx"
}

results="$work/results.txt"; : >"$results"
for size in $sizes; do
  for r in $(seq "$rounds"); do
    echo "$size direct $(run_one direct "http://127.0.0.1:$echo_port/" "$size" "")" >>"$results"
    echo "$size turnpike $(run_one turnpike "http://127.0.0.1:$gw_port/echo/v1/" "$size" "$gw_pid")" >>"$results"
    echo "$size nginx $(run_one nginx "http://127.0.0.1:$nginx_port/echo/v1/" "$size" "$nginx_worker")" >>"$results"
    echo "round $r size $size done" >&2
  done
done

python3 - "$results" "$conns" "$duration" "$rounds" <<'PY'
import sys, statistics as st
path, conns, dur, rounds = sys.argv[1:]
rows = {}
for line in open(path):
    size, target, rps, p50, p99, cpu, non2xx = line.split()
    rows.setdefault((int(size), target), []).append((float(rps), float(p50), float(p99), None if cpu == '-' else float(cpu), int(non2xx)))
def med(xs): return st.median(xs) if xs else float('nan')
print(f"\nPOST passthrough, {conns} connections, {dur}s x {rounds} rounds, medians\n")
print("| body | target | req/s | p50 | p99 | proxy CPU/req | non-2xx |")
print("|---|---|---|---|---|---|---|")
summary = {}
for (size, target), v in sorted(rows.items(), key=lambda kv: (kv[0][0], ['direct','turnpike','nginx'].index(kv[0][1]))):
    rps = med([x[0] for x in v]); p50 = med([x[1] for x in v]); p99 = med([x[2] for x in v])
    cpus = [x[3] for x in v if x[3] is not None]; cpu = med(cpus) if cpus else None
    summary[(size, target)] = (rps, p50, p99, cpu)
    cpu_s = f"{cpu:.1f} µs" if cpu is not None else "—"
    print(f"| {size} B | {target} | {rps:,.0f} | {p50/1000:.2f} ms | {p99/1000:.2f} ms | {cpu_s} | {sum(x[4] for x in v)} |")
print()
for size in sorted({k[0] for k in summary}):
    t = summary.get((size, 'turnpike')); n = summary.get((size, 'nginx')); d = summary.get((size, 'direct'))
    if t and n:
        print(f"{size} B: Turnpike/nginx throughput {t[0]/n[0]:.2f}x, CPU per request {t[3]/n[3]:.2f}x, p99 {t[2]/n[2]:.2f}x; Turnpike/direct throughput {t[0]/d[0]:.2f}x")
PY
