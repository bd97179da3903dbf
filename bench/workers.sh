#!/usr/bin/env bash
# Multi-core scaling (issue 19): Turnpike with `--workers N` against nginx with
# `worker_processes N`, both plain reverse proxies of the same echo back end (GET, upstream
# keep-alive), for each N given. The proxy under test is pinned to the last N cores and
# the load generator (wrk, one thread per core) and the echo back end to the others; when
# N takes every core they share the proxy's cores, and the table says so. For each target
# and N it prints throughput, p99, the proxy's CPU per request (all its threads or worker
# processes, from /proc), the scaling against N = 1, and the load generator's own CPU use
# (wrk's CPU time over the run's wall time, per core it had): near 100 % means wrk, not
# the proxy, set the pace and the scaling figure says nothing about the proxy.
#
# Usage: [TURNPIKE_BIN=...] bench/workers.sh [--workers "1 2"] [--duration 10]
#          [--connections 200] [--rounds 3]
# On this project's 2-core VM only "1 2" fits, and N = 2 shares both cores with wrk: the
# method runs as is on a larger machine (e.g. --workers "1 2 4 8" on 16 cores).
# Needs: wrk, nginx, taskset (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

workers="1 2"; duration=10; conns=200; rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) workers=$2; shift 2;;
    --duration) duration=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
. bench/lib.sh
ncpu=$(nproc)

# Cores: the proxy takes the last N; the load generator the rest (all of them if none).
proxy_cores() { seq -s, $((ncpu - $1)) $((ncpu - 1)); }
load_cores() { if [ "$1" -ge "$ncpu" ]; then seq -s, 0 $((ncpu - 1)); else seq -s, 0 $((ncpu - $1 - 1)); fi; }
count() { echo "$1" | tr ',' '\n' | wc -l; }

echo_port=$(free_port)
cat >"$work/apis.yaml" <<YAML
apis:
  - name: echo
    context: /echo
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
YAML

results="$work/results.txt"; : >"$results"
for n in $workers; do
  if [ "$n" -gt "$ncpu" ]; then echo "skipping $n workers: $ncpu cores" >&2; continue; fi
  pc=$(proxy_cores "$n"); lc=$(load_cores "$n"); lthreads=$(count "$lc")
  gw_port=$(free_port); nginx_port=$(free_port)
  taskset -c "$lc" "$bin" echo --port "$echo_port" --threads "$lthreads" >"$work/echo.$n.log" 2>&1 &
  echo_pid=$!; pids+=($echo_pid)
  TURNPIKE_LOG=warn TURNPIKE_WORKERS=$n taskset -c "$pc" "$bin" gateway --config "$work/apis.yaml" \
    --http-port "$gw_port" --https-port off --data-dir "$work/data.$n" >"$work/gw.$n.log" 2>&1 &
  gw=$!; pids+=($gw)
  mkdir -p "$work/nginx.$n"
  cat >"$work/nginx.$n/nginx.conf" <<NGINX
worker_processes $n;
daemon off;
pid $work/nginx.$n/nginx.pid;
error_log $work/nginx.$n/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx.$n/body;
  proxy_temp_path $work/nginx.$n/proxy;
  upstream echo { server 127.0.0.1:$echo_port; keepalive 256; }
  server {
    listen 127.0.0.1:$nginx_port reuseport backlog=4096;
    location /echo/v1/ { proxy_pass http://echo/; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
NGINX
  taskset -c "$pc" nginx -c "$work/nginx.$n/nginx.conf" -p "$work/nginx.$n" 2>"$work/nginx.$n/stderr" &
  pids+=($!)
  wait_port "$echo_port"; wait_port "$gw_port"; wait_port "$nginx_port"
  sleep 0.5
  nginx_workers=$(pgrep -P "$(cat "$work/nginx.$n/nginx.pid")" | tr '\n' ' ')
  for target in turnpike nginx; do  # warm-up
    port=$gw_port; [ $target = nginx ] && port=$nginx_port
    taskset -c "$lc" wrk -t"$lthreads" -c"$conns" -d2s "http://127.0.0.1:$port/echo/v1/" >/dev/null 2>&1
  done
  for r in $(seq "$rounds"); do
    for target in turnpike nginx; do
      if [ $target = turnpike ]; then port=$gw_port; procs=$gw; else port=$nginx_port; procs=$nginx_workers; fi
      # shellcheck disable=SC2086
      before=$(cpu_ticks $procs)
      taskset -c "$lc" wrk -t"$lthreads" -c"$conns" -d"${duration}s" --latency \
        "http://127.0.0.1:$port/echo/v1/" >"$work/wrk.out" 2>&1 &
      wrk_pid=$!
      sleep 1; wrk_before=$(cpu_ticks $wrk_pid); t0=$(date +%s.%N)
      sleep $((duration - 2)); wrk_after=$(cpu_ticks $wrk_pid); t1=$(date +%s.%N)
      wait $wrk_pid
      # shellcheck disable=SC2086
      after=$(cpu_ticks $procs)
      reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
      rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
      p99=$(to_us "$(awk '$1=="99%" {print $2}' "$work/wrk.out")")
      tck=$(getconf CLK_TCK)
      cpu_us=$(awk -v a="$after" -v b="$before" -v t="$tck" -v q="$reqs" 'BEGIN{printf "%.1f", (a-b)/t*1e6/q}')
      wrk_pct=$(awk -v a="$wrk_after" -v b="$wrk_before" -v t="$tck" -v t0="$t0" -v t1="$t1" -v c="$lthreads" 'BEGIN{printf "%.0f", (a-b)/t/(t1-t0)/c*100}')
      echo "$n $target $rps $p99 $cpu_us $wrk_pct $pc $lc" >>"$results"
    done
    echo "workers $n: round $r done" >&2
  done
  kill "$gw" "$echo_pid" 2>/dev/null || true
  kill "$(cat "$work/nginx.$n/nginx.pid")" 2>/dev/null || true
  wait "$gw" "$echo_pid" 2>/dev/null || true
  sleep 1
done

python3 - "$results" "$ncpu" "$conns" "$duration" "$rounds" <<'PY'
import sys, statistics as st
path, ncpu, conns, duration, rounds = sys.argv[1:]
rows = {}
for line in open(path):
    n, target, rps, p99, cpu, wrk, pc, lc = line.split()
    rows.setdefault((int(n), target), []).append((float(rps), float(p99), float(cpu), float(wrk), pc, lc))
print(f"\nGET through a plain reverse proxy, {conns} connections, {duration}s x {rounds} rounds (medians); {ncpu} cores\n")
print("| proxy | workers | proxy cores | load cores | req/s | vs 1 worker | p99 | proxy CPU/req | wrk CPU (of its cores) |")
print("|---|---|---|---|---|---|---|---|---|")
base = {}
for (n, target), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    rps = st.median(x[0] for x in v); p99 = st.median(x[1] for x in v)
    cpu = st.median(x[2] for x in v); wrk = st.median(x[3] for x in v)
    pc, lc = v[0][4], v[0][5]
    if n == 1: base[target] = rps
    scale = f"{rps / base[target]:.2f}x" if target in base else "—"
    shared = " (shared)" if set(pc.split(",")) & set(lc.split(",")) else ""
    print(f"| {target} | {n} | {pc} | {lc}{shared} | {rps:,.0f} | {scale} | {p99:.0f} us | {cpu:.1f} us | {wrk:.0f} % |")
print("\nA scaling figure means something only where wrk's CPU stays well under 100 % of its")
print("cores and the load cores are not the proxy's.")
PY
