#!/usr/bin/env bash
# GraphQL end to end (issue 15): in one run and alternating rounds, the bench kit's client
# (`turnpike bench run --graphql N`, WSO2's query N with its `query-number` header) drives
#   (a) direct-q1: query 1 sent straight to the back end (`turnpike echo --graphql`),
#   (b) gw-q1:     query 1 through a gateway whose API has the seed's Star Wars schema in its
#                  `graphql:` section (parse + validation + depth/complexity under a tier
#                  limit, analysis cache hot after the warm-up),
#   (c) gw-q3:     query 3 (9 operations, the most costly) through the same gateway,
#   (d) plain-q1:  query 1 through the same gateway to the same back end by an API without
#                  a `graphql:` section (the proxying alone: what (b) costs above it is
#                  GraphQL's; on a box where other work shares the cores, (b)/(a) mostly
#                  measures the extra hop's scheduling, (b)/(d) the GraphQL step),
#   (e) direct-q3: query 3 straight to the back end: how much of (c)/(b) is the back end's
#                  and the client's (query 3's answer is 27 KB, query 1's 790 B), which
#                  (c)/(e) against (b)/(a) separates from the gateway's,
# gateway pinned to core 1 (one worker), client and back end on core 0. Prints the medians
# and the ratios b/a (target >= 0.8), c/b (target >= 0.7: WSO2 lost far more), b/d, e/a
# (the same ratio without the gateway) and c/e.
#
# Usage: bench/graphql.sh [--duration 10] [--users 100] [--rounds 3]
# TURNPIKE_BIN=path skips the build. Needs taskset, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=10; users=100; rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --users) users=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

. bench/lib.sh

echo_port=$(free_port); gw_port=$(free_port)
taskset -c 0 "$bin" echo --graphql --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)

{
  cat <<YAML
apis:
  - name: plain
    context: /plain
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port/graphql"]
    resources: [{ path: /*, methods: [GET, POST] }]
  - name: starwars
    context: /starwars
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port/graphql"]
    resources: [{ path: /*, methods: [GET, POST] }]
    graphql:
      limits: { max_depth: 15, max_complexity: 5000 }
      schema: |
YAML
  sed 's/^/        /' bench/graphql/starwars/starwars-schema.graphql
} >"$work/apis.yaml"

TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/apis.yaml" \
  --http-port "$gw_port" --https-port off --data-dir "$work/data" >"$work/gw.log" 2>&1 &
gw_pid=$!; pids+=($gw_pid)
wait_port "$echo_port"; wait_port "$gw_port"

run() { # name url query -> appends throughput to $work/name.rps
  taskset -c 0 "$bin" bench run --url "$2" --users "$users" --graphql "$3" --threads 1 \
    --duration "${duration}s" --warmup 2s --json --out "$work/$1.json" >/dev/null 2>"$work/$1.log" \
    || { cat "$work/$1.log" >&2; exit 1; }
  python3 - "$work/$1.json" >>"$work/$1.rps" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
if s["errors"]:
    sys.exit(f"{sys.argv[1]}: {s['errors']} errors of {s['samples']}")
print(s["throughput_rps"])
PY
}

direct="http://127.0.0.1:$echo_port/graphql"
gw="http://127.0.0.1:$gw_port/starwars/v1/graphql"
plain="http://127.0.0.1:$gw_port/plain/v1/graphql"
for r in $(seq "$rounds"); do
  run direct-q1 "$direct" 1; run gw-q1 "$gw" 1; run gw-q3 "$gw" 3; run plain-q1 "$plain" 1
  run direct-q3 "$direct" 3
  echo "round $r: direct-q1 $(tail -1 "$work/direct-q1.rps") gw-q1 $(tail -1 "$work/gw-q1.rps") gw-q3 $(tail -1 "$work/gw-q3.rps") plain-q1 $(tail -1 "$work/plain-q1.rps") direct-q3 $(tail -1 "$work/direct-q3.rps") req/s"
done

python3 - "$work" "$users" "$duration" "$rounds" <<'PY'
import statistics, sys
work, users, duration, rounds = sys.argv[1:]
med = {n: statistics.median(float(x) for x in open(f"{work}/{n}.rps")) for n in ("direct-q1", "gw-q1", "gw-q3", "plain-q1", "direct-q3")}
print(f"GraphQL, {users} users, {duration}s x {rounds} rounds (medians, req/s):")
for n, v in med.items():
    print(f"  {n:10} {v:10.0f}")
print(f"  gateway Q1 / direct Q1: {med['gw-q1'] / med['direct-q1']:.2f}x (target >= 0.8)")
print(f"  gateway Q3 / gateway Q1: {med['gw-q3'] / med['gw-q1']:.2f}x (target >= 0.7)")
print(f"  gateway Q1 / plain proxy Q1: {med['gw-q1'] / med['plain-q1']:.2f}x (what the GraphQL step costs)")
print(f"  direct Q3 / direct Q1: {med['direct-q3'] / med['direct-q1']:.2f}x (the same ratio without the gateway)")
print(f"  gateway Q3 / direct Q3: {med['gw-q3'] / med['direct-q3']:.2f}x (against gateway Q1 / direct Q1 above)")
PY
