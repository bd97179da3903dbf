#!/usr/bin/env bash
# The seeds' cluster, reproduced (issue 28 item 10; the ColdFusion 2016 paper measures a
# three-node cluster behind a load balancer). On loopback: PostgreSQL, Redis, two control
# planes on that PostgreSQL, three gateways (each given both control planes, sharing Redis
# for cluster-wide throttling), HAProxy and nginx in front of them (round robin).
#
#   1. Throughput: the coldfusion plan's GET and POST scenarios (bench/plans/coldfusion.yaml,
#      its message sizes) with --users closed-loop users, against HAProxy, against nginx
#      and against one gateway directly. scaling = balancer / one node.
#   2. Cluster-wide throttling error: an API with an advanced policy of --limit requests a
#      minute, driven through HAProxy at --quota-rate req/s (above the limit) for
#      --quota-seconds inside one minute window; admitted (200s) against the limit, the
#      over-admission against the documented bound n x b (docs/throttling.md:
#      b = min(batch 100, limit / 10), n = 3 nodes).
#
# On one machine every process shares the same cores, so the scaling factor is bounded by
# them: three gateways on 2 cores cannot do 3x one gateway (one gateway already uses most
# of a core at saturation, and the load generator, the balancer and the echo back end take
# the rest). The method holds on a bigger machine: give each gateway its own cores
# (GATEWAY_CPUS="2 3 4", taskset lists) and the load generator others, and rerun.
#
# Usage: [TURNPIKE_BIN=...] bench/cluster.sh [--users 100] [--duration 10] [--warmup 3]
#            [--limit 6000] [--quota-rate 300] [--quota-seconds 40]
# Needs: haproxy, nginx, redis-server, postgresql (scripts/install-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

users=100; duration=10; warmup=3; limit=6000; quota_rate=300; quota_seconds=40
while [ $# -gt 0 ]; do
  case "$1" in
    --users) users=$2; shift 2;;
    --duration) duration=$2; shift 2;;
    --warmup) warmup=$2; shift 2;;
    --limit) limit=$2; shift 2;;
    --quota-rate) quota_rate=$2; shift 2;;
    --quota-seconds) quota_seconds=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

if [ -n "${TURNPIKE_BIN:-}" ]; then bin=$TURNPIKE_BIN; else
  cargo build --release -p turnpike >/dev/null; bin=target/release/turnpike; fi
bin=$(realpath "$bin")
work=$(mktemp -d); chmod 755 "$work"
pids=()
cleanup() {
  status=$?
  if [ "$status" -ne 0 ]; then
    for f in "$work"/*.log "$work"/pg/log; do [ -f "$f" ] && { echo "== $f"; tail -n 15 "$f"; } >&2; done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pg_ctl_ stop -m immediate >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
wait_status() { # url code
  for _ in $(seq 300); do [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = "$2" ] && return 0; sleep 0.1; done
  echo "$1 never answered $2" >&2; return 1
}
pin() { # cpu-list command...: taskset when a list is given; exec, so that $! (the pid the
  # cleanup kills) is the process itself, not a shell left waiting on it
  local cpus=$1; shift
  if [ -n "$cpus" ] && command -v taskset >/dev/null; then exec taskset -c "$cpus" "$@"; else exec "$@"; fi
}
read -r -a gw_cpus <<<"${GATEWAY_CPUS:-}"

# PostgreSQL in the scratch dir (as the postgres user when run as root, as its tools ask).
pgbin=$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$work/pg"; [ "$(id -u)" -eq 0 ] && chown postgres "$work/pg"
pg_port=$(free_port)
as_pg "$pgbin/initdb" -D "$work/pg/data" -U postgres --auth=trust -E UTF8 --locale=C --no-sync >/dev/null
pg_ctl_() { as_pg "$pgbin/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" \
  -o "-p $pg_port -k $work/pg -c listen_addresses=127.0.0.1 -c fsync=off" -w "$@"; }
pg_ctl_ start >/dev/null

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  >"$work/redis.log" 2>&1 & pids+=($!)
wait_port "$redis_port"

echo_port=$(free_port)
"$bin" echo --port "$echo_port" >"$work/echo.log" 2>&1 & pids+=($!)
wait_port "$echo_port"

token=cluster-gateway-token; password=cluster-admin-password
cps=()
for c in cp1 cp2; do
  port=$(free_port)
  TURNPIKE_ADMIN_PASSWORD=$password TURNPIKE_LOG=warn "$bin" control-plane \
    --database "postgres://postgres@127.0.0.1:$pg_port/postgres" --port "$port" \
    --gateway-token "$token" >"$work/$c.log" 2>&1 & pids+=($!)
  wait_port "$port"
  cps+=("http://127.0.0.1:$port")
done

# Each gateway is given both control planes, in a different order (gw2 follows cp2).
gw_ports=(); mgmt_ports=()
for i in 0 1 2; do
  gw_ports+=("$(free_port)"); mgmt_ports+=("$(free_port)")
  list="${cps[0]},${cps[1]}"; [ "$i" = 1 ] && list="${cps[1]},${cps[0]}"
  TURNPIKE_LOG=warn pin "${gw_cpus[$i]:-}" "$bin" gateway --control-plane "$list" \
    --gateway-token "$token" --gateway-id "gw$((i + 1))" --http-port "${gw_ports[$i]}" \
    --https-port off --metrics-addr "127.0.0.1:${mgmt_ports[$i]}" --data-dir "$work/gw$i" \
    --redis "redis://127.0.0.1:$redis_port/" \
    --max-connections-per-ip 0 >"$work/gw$i.log" 2>&1 & pids+=($!)  # behind a balancer: one address
  wait_port "${gw_ports[$i]}"
done

cat >"$work/apis.yaml" <<YAML
throttling:
  subscription_tiers: [ { name: Unauthenticated, quota: { requests: 100000000, per: minute } } ]
  advanced_policies: [ { name: ClusterQuota, default_limit: { requests: $limit, per: minute } } ]
apis:
  - { name: cf, context: /cf, version: v1, endpoints: ["http://127.0.0.1:$echo_port"], resources: [{ path: "/*", methods: [GET, POST] }] }
  - { name: quota, context: /quota, version: v1, throttling: ClusterQuota, endpoints: ["http://127.0.0.1:$echo_port"], resources: [{ path: "/*", methods: [GET] }] }
YAML
TURNPIKE_PASSWORD=$password TURNPIKE_LOG=warn "$bin" apply -f "$work/apis.yaml" \
  --control-plane "${cps[0]}" --user admin >/dev/null
for i in 0 1 2; do
  wait_status "http://127.0.0.1:${gw_ports[$i]}/cf/v1/x" 200
  wait_status "http://127.0.0.1:${mgmt_ports[$i]}/ready" 200
done

# Connection caps within the open-file limit: HAProxy refuses to start when maxconn needs
# more descriptors than it may raise the limit to (about two per connection).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
maxconn=$(( ($(ulimit -n) - 200) / 2 )); (( maxconn > 20000 )) && maxconn=20000
(( maxconn >= users + 64 )) || { echo "open-file limit $(ulimit -n) too low for $users users" >&2; exit 2; }
haproxy_port=$(free_port)
{
  printf 'global\n  maxconn %s\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n' "$maxconn"
  printf 'frontend cluster\n  bind 127.0.0.1:%s\n  default_backend gateways\n' "$haproxy_port"
  printf 'backend gateways\n  balance roundrobin\n  option httpchk GET /ready\n  http-reuse always\n'
  for i in 0 1 2; do
    printf '  server gw%s 127.0.0.1:%s check port %s inter 1s\n' "$i" "${gw_ports[$i]}" "${mgmt_ports[$i]}"
  done
} >"$work/haproxy.cfg"
haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 & pids+=($!)

nginx_port=$(free_port)
mkdir -p "$work/nginx"
{
  printf 'worker_processes 1;\npid %s/nginx/pid;\nerror_log %s/nginx/error.log;\n' "$work" "$work"
  printf 'events { worker_connections %s; }\nhttp {\n  access_log off;\n' "$maxconn"
  printf '  client_body_temp_path %s/nginx;\n  proxy_temp_path %s/nginx;\n' "$work" "$work"
  printf '  upstream gateways {\n'
  for i in 0 1 2; do printf '    server 127.0.0.1:%s;\n' "${gw_ports[$i]}"; done
  printf '    keepalive 256;\n  }\n'
  printf '  server {\n    listen 127.0.0.1:%s;\n    location / {\n' "$nginx_port"
  printf '      proxy_pass http://gateways;\n      proxy_http_version 1.1;\n      proxy_set_header Connection "";\n    }\n  }\n}\n'
} >"$work/nginx.conf"
nginx -c "$work/nginx.conf" -g 'daemon off;' >"$work/nginx.log" 2>&1 & pids+=($!)
wait_status "http://127.0.0.1:$haproxy_port/cf/v1/x" 200
wait_status "http://127.0.0.1:$nginx_port/cf/v1/x" 200

# The coldfusion plan's GET / POST message sizes.
sizes=$(sed -n 's/^sizes: *\[\(.*\)\]/\1/p' bench/plans/coldfusion.yaml | tr -d ' ' | tr ',' ' ')
run() { # out url method size
  "$bin" bench run --url "$2" --method "$3" --size "$4" --users "$users" \
    --duration "${duration}s" --warmup "${warmup}s" --timeout 10s --json --out "$1" \
    >/dev/null 2>"$1.log"
}
rps() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; print("%.0f %.1f %d" % (s["throughput_rps"], s["p99_ms"], s["errors"]))' "$1"; }

echo "cluster: 2 control planes (PostgreSQL), 3 gateways (Redis), $(nproc) cores, $users users, ${duration} s per run"
printf '%-5s %6s  %-22s %-22s %-22s %8s %8s\n' scen bytes "one node rps/p99/err" "haproxy rps/p99/err" "nginx rps/p99/err" "x haprx" "x nginx"
for method in GET POST; do
  for size in $sizes; do
    declare -A r=()
    for target in one haproxy nginx; do
      case $target in
        one) port=${gw_ports[0]};; haproxy) port=$haproxy_port;; nginx) port=$nginx_port;;
      esac
      run "$work/$method-$size-$target.json" "http://127.0.0.1:$port/cf/v1/x" "$method" "$size"
      r[$target]=$(rps "$work/$method-$size-$target.json")
    done
    one=${r[one]%% *}; ha=${r[haproxy]%% *}; ng=${r[nginx]%% *}
    printf '%-5s %6s  %-22s %-22s %-22s %8s %8s\n' "$method" "$size" "${r[one]}" "${r[haproxy]}" "${r[nginx]}" \
      "$(python3 -c "print(f'{$ha/max($one,1):.2f}')")" "$(python3 -c "print(f'{$ng/max($one,1):.2f}')")"
  done
done

# Throttling: start just after a minute boundary so the run stays inside one window.
(( quota_seconds <= 55 )) || { echo "--quota-seconds must fit in one minute window" >&2; exit 2; }
while [ "$(date +%S | sed 's/^0//')" -ne 1 ]; do sleep 0.2; done
"$bin" bench run --url "http://127.0.0.1:$haproxy_port/quota/v1/x" --rate "$quota_rate" \
  --duration "${quota_seconds}s" --warmup 0s --connections 64 --timeout 10s --json \
  --out "$work/quota.json" >/dev/null 2>"$work/quota.log"
python3 - "$work/quota.json" "$limit" "$quota_rate" "$quota_seconds" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
limit, rate, secs = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
admitted = s["samples"] - s["errors"]
b = min(100, max(1, limit // 10)); n = 3
over = admitted - limit
print(f"throttling: limit {limit}/min, {rate:.0f} req/s for {secs} s through HAProxy "
      f"(sent {s['samples']}): admitted {admitted}, refused {s['errors']}; "
      f"over-admission {over:+d} ({100.0 * over / limit:+.2f} %), documented bound n x b = {n} x {b} = {n * b} "
      f"({'within' if over <= n * b else 'OUTSIDE'} the bound)")
if rate * secs <= limit:
    print("  (the load did not exceed the limit: raise --quota-rate or --quota-seconds)")
PY
