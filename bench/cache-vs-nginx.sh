#!/usr/bin/env bash
# What a storing cache miss costs, Turnpike against nginx's proxy_cache in the same run
# (issue 27's "a cache configured but missing" measured beside a reference). Each proxy
# serves one path twice: without a cache, and with a cache that stores every 200 for 60 s
# (Turnpike `policies: [ { cache: { ttl: 60s } } ]`; nginx `proxy_cache` with
# `proxy_cache_valid 200 60s`, its zone's files on /dev/shm, so no disk is involved).
# Every request asks for a new key (bench/cache-unique.lua): through the cache each one is
# a MISS that is looked up, fetched and stored. Arms, rounds alternating, medians:
#   tp-plain, tp-miss        Turnpike, no cache / the cache;
#   nginx-plain, nginx-miss  nginx (1 worker, upstream keep-alive), no cache / proxy_cache;
# and, when --once is given, tp-once / nginx-once: stores only from a key's second request
# (`min_uses: 2` / `proxy_cache_min_uses 2`), so every request is looked up and counted,
# never stored. Both proxies pinned to core 1; wrk and the echo (`turnpike echo`, a 50-byte
# answer) to core 0. Per arm: requests/s, the proxy process's CPU per request (utime+stime
# from /proc/PID/stat; nginx's worker), and the cost of the cache: miss/plain CPU per
# request, as the ratio of the medians and as the median of each round's own ratio.
#
# Usage: [TURNPIKE_BIN=...] bench/cache-vs-nginx.sh [--duration 5] [--rounds 5]
#          [--connections 100] [--once]
# Needs: wrk, nginx, taskset, python3 (scripts/install-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=5; rounds=5; conns=100; once=
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --once) once=1; shift;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
for tool in wrk nginx taskset; do
  command -v "$tool" >/dev/null || { echo "bench/cache-vs-nginx.sh needs $tool (scripts/install-test-deps.sh)" >&2; exit 2; }
done
. bench/lib.sh

echo_port=$(free_port)
taskset -c 0 "$bin" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)

# Turnpike: one gateway per configuration (plain, cached, once), one worker each.
declare -A port pid
tp_gateway() { # name policies-line
  cache_api "$1" "$echo_port" "${2:-}"
  local p; p=$(free_port)
  TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/$1.yaml" \
    --http-port "$p" --https-port off --data-dir "$work/data-$1" --analytics off >"$work/gw-$1.log" 2>&1 &
  pids+=($!); port[tp-$1]=$p; pid[tp-$1]=$!
}
tp_gateway plain ""
tp_gateway miss "    policies: [ { cache: { ttl: 60s, max_size: 256MiB$(admission_always "$bin") } } ]"
[ -n "$once" ] && tp_gateway once "    policies: [ { cache: { ttl: 60s, max_size: 256MiB, min_uses: 2 } } ]"

# nginx: one worker serving three ports (plain, miss, once); its cache on /dev/shm.
cache_dir=$(mktemp -d /dev/shm/tp-cache-vs-nginx.XXXXXX)
chmod 777 "$cache_dir" # nginx's worker runs as an unprivileged user when started by root
trap 'cleanup; rm -rf "$cache_dir"' EXIT
for name in plain miss once; do port[nginx-$name]=$(free_port); done
nginx_start <<NGINX
  proxy_temp_path $cache_dir/tmp;
  proxy_cache_path $cache_dir/store levels=1:2 keys_zone=tp:64m max_size=256m inactive=60s use_temp_path=off;
  upstream echo { server 127.0.0.1:$echo_port; keepalive 256; }
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  server {
    listen 127.0.0.1:${port[nginx-plain]} backlog=4096;
    location /api/v1/ { proxy_pass http://echo/; }
  }
  server {
    listen 127.0.0.1:${port[nginx-miss]} backlog=4096;
    location /api/v1/ { proxy_pass http://echo/; proxy_cache tp; proxy_cache_valid 200 60s;
      add_header X-Cache \$upstream_cache_status; }
  }
  server {
    listen 127.0.0.1:${port[nginx-once]} backlog=4096;
    location /api/v1/ { proxy_pass http://echo/; proxy_cache tp; proxy_cache_valid 200 60s;
      proxy_cache_min_uses 2; add_header X-Cache \$upstream_cache_status; }
  }
NGINX
for p in "${port[@]}"; do wait_port "$p"; done
wait_port "$echo_port"
nginx_worker=$(nginx_worker_pid)
for name in plain miss once; do pid[nginx-$name]=$nginx_worker; done

# Each cache answers a new key with a MISS and the same key again with a HIT.
x_cache() { curl -s -o /dev/null -D - "$1" | awk -F': ' 'tolower($1)=="x-cache" {print $2}' | tr -d '\r'; }
for proxy in tp nginx; do
  url="http://127.0.0.1:${port[$proxy-miss]}/api/v1/x?size=50&check=$$"
  [ "$(x_cache "$url")" = MISS ] && [ "$(x_cache "$url")" = HIT ] \
    || { echo "$proxy: the cache does not answer MISS then HIT" >&2; exit 1; }
done

hz=$(getconf CLK_TCK)
run_one() { # url pid -> "rps cpu_us_per_request requests"
  local before after
  before=$(cpu_ticks "$2")
  taskset -c 0 wrk -t1 -c"$conns" -d"${duration}s" -s bench/cache-unique.lua "$1" >"$work/wrk.out" 2>&1
  after=$(cpu_ticks "$2")
  if grep -qE 'Non-2xx|Socket errors' "$work/wrk.out"; then echo "$1: errors" >&2; cat "$work/wrk.out" >&2; exit 1; fi
  awk -v a="$after" -v b="$before" -v hz="$hz" '/requests in/ {n = $1} /Requests\/sec/ {r = $2}
    END { printf "%s %.2f %d\n", r, (a - b) / hz * 1e6 / n, n }' "$work/wrk.out"
}

arms=(tp-plain tp-miss nginx-plain nginx-miss)
[ -n "$once" ] && arms+=(tp-once nginx-once)
: >"$work/results"
for r in $(seq "$rounds"); do
  order=("${arms[@]}"); [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${arms[@]}" | tac))
  for arm in "${order[@]}"; do
    echo "$r $arm $(run_one "http://127.0.0.1:${port[$arm]}/api/v1/x" "${pid[$arm]}")" >>"$work/results"
  done
  echo "round $r done" >&2
done

python3 - "$work/results" "$conns" "$duration" "$rounds" <<'PY'
import statistics as st, sys
path, conns, dur, rounds = sys.argv[1:]
rows = {}
for line in open(path):
    r, arm, rps, cpu, n = line.split()
    rows.setdefault(arm, {})[int(r)] = (float(rps), float(cpu))
print(f"\nevery request a new key, {conns} connections, {dur}s x {rounds} rounds, medians (min-max)\n")
print(f"{'arm':12} {'req/s':>22} {'CPU us/request':>22}")
for arm, v in rows.items():
    rps = [x[0] for x in v.values()]; cpu = [x[1] for x in v.values()]
    print(f"{arm:12} {st.median(rps):>8.0f} ({min(rps):.0f}-{max(rps):.0f}) {st.median(cpu):>9.2f} ({min(cpu):.2f}-{max(cpu):.2f})")
print("\nthe cache's cost, CPU per request against the same proxy without one:")
for proxy in ("tp", "nginx"):
    for kind in ("miss", "once"):
        a, b = rows.get(f"{proxy}-{kind}"), rows.get(f"{proxy}-plain")
        if not a or not b:
            continue
        med = st.median(x[1] for x in a.values()) / st.median(x[1] for x in b.values())
        own = sorted(a[r][1] / b[r][1] for r in a if r in b)
        thr = st.median(x[0] for x in a.values()) / st.median(x[0] for x in b.values())
        print(f"{proxy + '-' + kind:12} / {proxy}-plain: CPU {med:.3f}x (rounds' own ratios: median "
              f"{st.median(own):.3f}x, {own[0]:.3f}-{own[-1]:.3f}); throughput {thr:.3f}x")
PY
