#!/usr/bin/env bash
# Fault drill (issue 11): processes on loopback, three `turnpike gateway --control-plane`
# behind HAProxy (health check GET /ready on each gateway's management port, `retries 0`:
# the balancer does not hide a failed request), a control plane on PostgreSQL, Redis for
# the gateways' shared quotas, the echo back end. Under a steady open-loop load through
# HAProxy, each phase breaks and restores one component and prints `failed/total`:
#
#   baseline              nothing broken
#   gateway SIGTERM       gw1 drains (readiness fails, still serving for --drain-delay),
#                         exits, is started again
#   gateway kill -9       gw1 killed outright, started again (for comparison: HAProxy
#                         without retries loses what was in flight on it)
#   control plane lost    control plane kill -9; gw2 restarted while it is lost (must come
#                         back from the snapshot it saved on disk); control plane started
#   redis lost            redis-server kill -9, then started again (fail-open: the API is
#                         throttled, its quota shared through Redis)
#   postgres lost         PostgreSQL stopped (immediate), then started again; meanwhile one
#                         REST call, JWKS and the control plane's /ready are timed (a fast
#                         503 store_unavailable, JWKS 200), and again once it is back
#   reload storm          20 publishes (an API added and removed) during the load
#   full disk             (root only, not under load) a second control plane on SQLite in
#                         a 4 MiB tmpfs: the disk filled, API writes (503 store_full), its
#                         /ready, the space freed, writes again (201 without a restart)
#
# Usage: bench/drill.sh [--rate 400] [--phase 12]
# Needs: haproxy, redis-server, postgresql, python3, curl (scripts/install-test-deps.sh);
# builds the release binary unless TURNPIKE_BIN names one.
set -euo pipefail
cd "$(dirname "$0")/.."

rate=400; phase=12
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2;;
    --phase) phase=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

if [ -n "${TURNPIKE_BIN:-}" ]; then bin=$TURNPIKE_BIN; else
  cargo build --release -p turnpike >/dev/null; bin=target/release/turnpike; fi
bin=$(realpath "$bin")
work=$(mktemp -d); chmod 755 "$work"
declare -A pid
cleanup() {
  status=$?
  if [ "$status" -ne 0 ]; then # show what went wrong before the scratch dir goes
    for f in "$work"/*.log "$work"/*/log; do
      [ -f "$f" ] && { echo "== $f"; tail -n 15 "$f"; } >&2
    done
  fi
  for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  pg_ctl_ stop -m immediate >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  umount "$work/tiny" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
wait_status() { # url code
  for _ in $(seq 300); do [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = "$2" ] && return 0; sleep 0.1; done
  echo "$1 never answered $2" >&2; return 1
}

# PostgreSQL in the scratch dir (as the postgres user when run as root, as its tools ask).
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$work/pg"; [ "$(id -u)" -eq 0 ] && chown postgres "$work/pg"
pg_port=$(free_port)
as_pg "$pgbin/initdb" -D "$work/pg/data" -U postgres --auth=trust -E UTF8 --locale=C --no-sync >/dev/null
pg_ctl_() { as_pg "$pgbin/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" \
  -o "-p $pg_port -k $work/pg -c listen_addresses=127.0.0.1 -c fsync=off" -w "$@"; }
pg_ctl_ start >/dev/null

redis_port=$(free_port)
start_redis() {
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    >"$work/redis.log" 2>&1 &
  pid[redis]=$!; wait_port "$redis_port"
}
start_redis

echo_port=$(free_port)
"$bin" echo --port "$echo_port" >"$work/echo.log" 2>&1 & pid[echo]=$!
wait_port "$echo_port"

token=drill-gateway-token; password=drill-admin-password
cp_port=$(free_port)
start_cp() {
  TURNPIKE_ADMIN_PASSWORD=$password TURNPIKE_LOG=warn "$bin" control-plane \
    --database "postgres://postgres@127.0.0.1:$pg_port/postgres" --port "$cp_port" \
    --gateway-token "$token" >"$work/cp.log" 2>&1 &
  pid[cp]=$!; wait_port "$cp_port"
}
start_cp

declare -A gw_port mgmt_port
for g in gw1 gw2 gw3; do gw_port[$g]=$(free_port); mgmt_port[$g]=$(free_port); done
start_gw() { # name
  TURNPIKE_LOG=warn "$bin" gateway --control-plane "http://127.0.0.1:$cp_port" \
    --gateway-token "$token" --gateway-id "$1" --http-port "${gw_port[$1]}" --https-port off \
    --metrics-addr "127.0.0.1:${mgmt_port[$1]}" --data-dir "$work/$1" \
    --redis "redis://127.0.0.1:$redis_port/" --drain-delay 3 \
    --max-connections-per-ip 0 >>"$work/$1.log" 2>&1 &  # behind HAProxy: one address
  pid[$1]=$!; wait_port "${gw_port[$1]}"
}
for g in gw1 gw2 gw3; do start_gw "$g"; done

apply() { # extra-api(0|1)
  {
    # The anonymous callers' tier (per API x client IP: here HAProxy's one address),
    # far above the load, so a refusal can only come from a fault.
    echo "throttling: { subscription_tiers: [ { name: Unauthenticated, quota: { requests: 10000000, per: minute } } ] }"
    echo "apis:"
    # Throttled (WSO2's 50KPerMin, far above the load) so that every request takes the
    # Redis-shared quota path, and losing Redis tests fail-open.
    echo "  - { name: drill, context: /drill, version: v1, throttling: 50KPerMin, endpoints: [\"http://127.0.0.1:$echo_port\"], resources: [{ path: \"/*\", methods: [GET, POST] }] }"
    [ "$1" = 1 ] && echo "  - { name: storm, context: /storm, version: v1, endpoints: [\"http://127.0.0.1:$echo_port\"], resources: [{ path: \"/*\", methods: [GET] }] }"
  } >"$work/apis.yaml"
  TURNPIKE_PASSWORD=$password TURNPIKE_LOG=warn "$bin" apply -f "$work/apis.yaml" \
    --control-plane "http://127.0.0.1:$cp_port" --user admin >/dev/null
}
apply 0
for g in gw1 gw2 gw3; do
  wait_status "http://127.0.0.1:${gw_port[$g]}/drill/v1/x" 200
  wait_status "http://127.0.0.1:${mgmt_port[$g]}/ready" 200
done

lb_port=$(free_port)
cat >"$work/haproxy.cfg" <<CFG
global
  maxconn 4096
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 0
frontend drill
  bind 127.0.0.1:$lb_port
  default_backend gateways
backend gateways
  balance roundrobin
  option httpchk GET /ready
  http-check expect status 200
  default-server inter 300ms fall 1 rise 2
  server gw1 127.0.0.1:${gw_port[gw1]} check port ${mgmt_port[gw1]}
  server gw2 127.0.0.1:${gw_port[gw2]} check port ${mgmt_port[gw2]}
  server gw3 127.0.0.1:${gw_port[gw3]} check port ${mgmt_port[gw3]}
CFG
haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 & pid[haproxy]=$!
wait_status "http://127.0.0.1:$lb_port/drill/v1/x" 200
sleep 1

load_start() { # name
  "$bin" bench run --url "http://127.0.0.1:$lb_port/drill/v1/x" --rate "$rate" \
    --duration "${phase}s" --warmup 0s --connections 64 --timeout 10s --json \
    --out "$work/$1.json" >/dev/null 2>"$work/$1.load.log" &
  load_pid=$!
}
load_end() { # name
  wait "$load_pid"
  python3 - "$work/$1.json" "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(f"{sys.argv[2]:<22} {s['errors']:>6} / {s['samples']:<7} failed/total  ({s['throughput_rps']:.0f} req/s, p99 {s['p99_ms']:.1f} ms)")
PY
}
stop_gw() { # name signal
  kill -"$2" "${pid[$1]}" 2>/dev/null || true
  wait "${pid[$1]}" 2>/dev/null || true
}

echo "drill: 3 gateways behind HAProxy (retries 0), rate $rate req/s, ${phase} s per phase"

load_start baseline; load_end baseline

load_start "gateway SIGTERM"; sleep 3
stop_gw gw1 TERM; start_gw gw1
wait_status "http://127.0.0.1:${mgmt_port[gw1]}/ready" 200
load_end "gateway SIGTERM"

load_start "gateway kill -9"; sleep 3
stop_gw gw1 9; start_gw gw1
wait_status "http://127.0.0.1:${mgmt_port[gw1]}/ready" 200
load_end "gateway kill -9"
sleep 2

load_start "control plane lost"; sleep 2
kill -9 "${pid[cp]}"; wait "${pid[cp]}" 2>/dev/null || true; sleep 1
stop_gw gw2 TERM; start_gw gw2
wait_status "http://127.0.0.1:${mgmt_port[gw2]}/ready" 200
sleep 2; start_cp
load_end "control plane lost"

load_start "redis lost"; sleep 2
kill -9 "${pid[redis]}"; wait "${pid[redis]}" 2>/dev/null || true
sleep 4; start_redis
load_end "redis lost"

cp_probe() { # label: what the control plane answers now
  local rest jwks ready
  rest=$(curl -s -o /dev/null -w '%{http_code} in %{time_total} s' -u "admin:$password" \
    "http://127.0.0.1:$cp_port/api/am/publisher/v1/apis")
  jwks=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$cp_port/oauth2/jwks")
  ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$cp_port/ready")
  echo "  control plane, $1: REST $rest, JWKS $jwks, /ready $ready"
}
load_start "postgres lost"; sleep 2
pg_ctl_ stop -m immediate >/dev/null
cp_probe "postgres down"  # about 3 s: the pool's acquire timeout
pg_ctl_ start >/dev/null
load_end "postgres lost"
cp_probe "postgres back"

load_start "reload storm"
for i in $(seq 20); do apply $((i % 2)); sleep 0.3; done
load_end "reload storm"

# Full disk: needs root to mount a tmpfs; skipped otherwise.
mkdir -p "$work/tiny"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=4m tmpfs "$work/tiny" 2>/dev/null; then
  tiny_port=$(free_port)
  TURNPIKE_ADMIN_PASSWORD=$password TURNPIKE_LOG=error "$bin" control-plane \
    --database "sqlite://$work/tiny/cp.db" --port "$tiny_port" --gateway-token "$token" \
    >"$work/tiny-cp.log" 2>&1 &
  pid[tiny]=$!; wait_port "$tiny_port"
  wait_status "http://127.0.0.1:$tiny_port/ready" 200  # its first key written before the disk fills
  filler=$(head -c 9000 /dev/zero | tr '\0' x)
  post_api() { # n
    curl -s -o /dev/null -w '%{http_code}' -u "admin:$password" -H 'content-type: application/json' \
      -d "{\"name\":\"f$1\",\"context\":\"/f$1\",\"version\":\"v1\",\"endpoints\":[\"http://127.0.0.1:9\"],\"description\":\"$filler\"}" \
      "http://127.0.0.1:$tiny_port/api/am/publisher/v1/apis" || true
  }
  tiny_ready() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$tiny_port/ready" || true; }
  dd if=/dev/zero of="$work/tiny/fill" bs=64k >/dev/null 2>&1 || true
  full=""; for i in $(seq 1 8); do full="$full $(post_api "$i")"; done
  ready_full=$(tiny_ready)
  rm -f "$work/tiny/fill"
  back=""; for i in $(seq 9 16); do back="$back $(post_api "$i")"; done
  echo "full disk (SQLite)     writes while full:$full; /ready $ready_full; after freeing:$back; /ready $(tiny_ready)"
else
  echo "full disk (SQLite)     skipped: needs root to mount a tmpfs"
fi
