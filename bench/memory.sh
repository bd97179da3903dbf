#!/usr/bin/env bash
# Gateway memory per connection (issue 19): RSS of one gateway worker idle, then holding
# N idle keep-alive connections (HTTP/1.1 over TCP; HTTP/2 over TLS), then M requests in
# flight (HTTP/1.1, the back end answering after 60 s). Each phase's growth over the idle
# RSS, per connection, is printed with the target (10,000 idle connections <= 64 MiB
# above idle). Connections are opened by bench/idle_conns.py (one request each, then
# held); every figure is resident memory read from /proc after the phase settles
# (two park periods and a second: idle HTTP/1.1 connections are parked, holding no
# buffers, after --park-idle-after; the gateway's turnpike_connections_parked gauge is
# printed with each phase; --park-idle-after 0 measures without parking).
#
# Each phase runs on a gateway of its own (started and warmed alike), so memory one phase
# freed and the allocator kept cannot hide what the next one takes. In flight, every
# request holds an upstream connection too (no per-endpoint cap in this bench; the
# default --in-flight 4000 keeps the gateway's client and upstream sockets within a
# 20,000 open-file limit).
#
# Usage: [TURNPIKE_BIN=...] bench/memory.sh [--connections 10000] [--park-idle-after 2]
#          [--in-flight 4000]
# Needs: python3, curl (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

n=10000; park=2; flying=4000
while [ $# -gt 0 ]; do
  case "$1" in
    --connections) n=$2; shift 2;;
    --park-idle-after) park=$2; shift 2;;
    --in-flight) flying=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true  # each side holds N sockets

if [ -n "${TURNPIKE_BIN:-}" ]; then bin=$TURNPIKE_BIN; else
  cargo build --release -p turnpike >/dev/null; bin=target/release/turnpike; fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

echo_port=$(free_port); http_port=$(free_port); https_port=$(free_port); metrics_port=$(free_port)
settle=$(awk -v p="$park" 'BEGIN{print 2*p+1}')
cat >"$work/apis.yaml" <<YAML
apis:
  - name: open
    context: /open
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
YAML

"$bin" echo --port "$echo_port" >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"

# Each phase gets a gateway of its own, started and warmed the same way: what one phase
# freed (and the allocator kept) cannot hide what the next one takes.
start_gateway() { # -> sets gw
  # Timeouts long enough that no idle connection is closed while we count.
  TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 "$bin" gateway --config "$work/apis.yaml" \
    --http-port "$http_port" --https-port "$https_port" --data-dir "$work/data" \
    --header-read-timeout 600 --idle-timeout 600 --park-idle-after "$park" \
    --metrics-addr "127.0.0.1:$metrics_port" --max-upstream-connections 0 \
    --max-connections-per-ip 0 \
    >>"$work/gw.log" 2>&1 &
  gw=$!; pids+=($gw)
  wait_port "$http_port"; wait_port "$https_port"
  for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$http_port/open/v1/"; done
  curl -sk -o /dev/null --http2 "https://127.0.0.1:$https_port/open/v1/"
  sleep 1
}
stop_gateway() {
  kill "$gw" 2>/dev/null || true
  wait "$gw" 2>/dev/null || true
}

phase() { # name, count, idle_conns.py args... -> "name conns rss_kib growth_kib per_conn_bytes"
  local name=$1 n=$2; shift 2
  start_gateway
  local base; base=$(rss_kib "$gw")
  local fifo="$work/fifo.$name"; mkfifo "$fifo"
  python3 bench/idle_conns.py --count "$n" --hold 600 "$@" <"$fifo" >"$work/$name.out" 2>&1 &
  local py=$!
  exec 4>"$fifo"
  for _ in $(seq 600); do grep -q '^open' "$work/$name.out" 2>/dev/null && break; sleep 0.5; done
  grep -q '^open' "$work/$name.out" || { echo "$name: connections never opened" >&2; cat "$work/$name.out" >&2; exit 1; }
  sleep "$settle"
  local held; held=$(rss_kib "$gw")
  local parked; parked=$(curl -s "http://127.0.0.1:$metrics_port/metrics" | awk '$1=="turnpike_connections_parked"{print $2}')
  exec 4>&-   # EOF: the client closes everything
  wait "$py" || true
  stop_gateway
  echo "$name $n $base $held $(( held - base )) $(( (held - base) * 1024 / n )) ${parked:-?}"
}

{
  phase h1-idle "$n" --port "$http_port"
  phase h2-idle "$n" --port "$https_port" --h2
  phase h1-in-flight "$flying" --port "$http_port" --in-flight --path "/open/v1/?delay_ms=60000"
} >"$work/results.txt"

echo
echo "one gateway worker (mimalloc), a fresh gateway per phase; parking after ${park} s"
echo
echo "| phase | connections | parked | RSS before | RSS holding them | growth | per connection | target |"
echo "|---|---|---|---|---|---|---|---|"
while read -r name conns base held grow per parked; do
  target="—"
  case $name in *idle) target="10,000 idle <= 64 MiB: $(awk -v g="$grow" -v c="$conns" 'BEGIN{ print (g/1024*10000/c <= 64) ? "met" : "NOT met" }')";; esac
  printf "| %s | %s | %s | %.1f MiB | %.1f MiB | %.1f MiB | %s B | %s |\n" "$name" "$conns" "$parked" \
    "$(awk -v v="$base" 'BEGIN{print v/1024}')" "$(awk -v v="$held" 'BEGIN{print v/1024}')" \
    "$(awk -v v="$grow" 'BEGIN{print v/1024}')" "$per" "$target"
done <"$work/results.txt"
awk '$1=="h1-idle"{i=$6} $1=="h1-in-flight"{f=$6} END{ printf "\nper in-flight request beyond an idle HTTP/1.1 connection (hyper'"'"'s connection, the request, the upstream call and its connection): %.0f B\n", f-i }' "$work/results.txt"
