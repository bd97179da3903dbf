#!/usr/bin/env bash
# SOAP cost (issue 14): in one run and alternating rounds, `turnpike bench run` drives
#   (a) post:     a JSON POST of the size through a plain API to the echo back end,
#   (p) soapplain: the SOAP 1.2 envelope of (b) through a plain API (no SOAP policy) to the
#                 same SOAP echo: the same bytes and back-end work as (b) without the
#                 gateway's SOAP work;
#   (b) soap:     a SOAP 1.2 envelope of the size through a SOAP pass-through API
#                 (envelope checked, operation found) to `turnpike echo --soap`,
#   (c) soaprest: the JSON POST of (a) to a SOAP-to-REST resource (JSON -> SOAP 1.2 ->
#                 echo service -> JSON),
# at 102 B and 5 KB, the gateway pinned to core 1 (one worker), load generator and echo on
# core 0, and prints medians, the gateway's CPU time per request, and the ratios against
# (a) (targets: soap >= 0.9x, soaprest >= 0.6x) and against (p), which isolates the
# gateway: the SOAP echo parses what it answers, so on a 2-core box its work on core 0
# weighs on (b) and (c) but not on (a). The echo's SOAP answer is as large as the request.
#
# Usage: bench/soap.sh [--duration 10] [--users 100] [--rounds 3]
# Needs: taskset; builds the release binary unless TURNPIKE_BIN names one.
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
taskset -c 0 "$bin" --log warn echo --soap --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
wsdl=$(python3 -c 'import json,sys; print(json.dumps(open("bench/soap/echo.wsdl").read()))')
cat >"$work/apis.yaml" <<YAML
apis:
  - name: post
    context: /post
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [POST] }
  - name: soapplain
    context: /soapplain
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port/soap"]
    resources:
      - { path: "/*", methods: [POST] }
  - name: soap
    context: /soap
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port/soap"]
    soap: { type: SOAP, port: Echo12, wsdl: $wsdl }
  - name: soaprest
    context: /soaprest
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port/soap"]
    soap: { type: SOAP_TO_REST, port: Echo12, wsdl: $wsdl }
YAML
TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/apis.yaml" \
  --http-port "$gw_port" --https-port off --data-dir "$work/data" >"$work/gw.log" 2>&1 &
gw_pid=$!; pids+=($gw_pid)
wait_port "$echo_port"; wait_port "$gw_port"; sleep 0.5

run_one() { # name size -> "rps p50ms p99ms errpct gateway-cpu-us-per-request"
  local name=$1 size=$2 url soap=()
  case "$name" in
    post) url="http://127.0.0.1:$gw_port/post/v1/bench";;
    soap) url="http://127.0.0.1:$gw_port/soap/v1"; soap=(--soap 1.2);;
    soapplain) url="http://127.0.0.1:$gw_port/soapplain/v1/x"; soap=(--soap 1.2);;
    soaprest) url="http://127.0.0.1:$gw_port/soaprest/v1/echo";;
  esac
  taskset -c 0 "$bin" --log warn bench run --url "$url" --users "$users" --size "$size" "${soap[@]}" \
    --duration "${duration}s" --warmup 2s --threads 1 --pid "$gw_pid" --json >"$work/run.json"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=j["summary"]; c=j["resources"]["cpu_seconds"]; print(r["throughput_rps"], r["p50_ms"], r["p99_ms"], r["error_pct"], 1e6*c/max(1,r["throughput_rps"]*r["duration_s"]))' "$work/run.json"
}

results="$work/results.txt"; : >"$results"
for r in $(seq "$rounds"); do
  # Alternate the order so drift on a shared box spreads over all three.
  if [ $((r % 2)) -eq 1 ]; then order="post soapplain soap soaprest"; else order="soaprest soap soapplain post"; fi
  for size in 102 5120; do
    for t in $order; do echo "$t $size $(run_one "$t" "$size")" >>"$results"; done
  done
  echo "round $r done" >&2
done

python3 - "$results" "$users" "$duration" "$rounds" <<'PY'
import sys, statistics as st
path, users, dur, rounds = sys.argv[1:]
rows = {}
for line in open(path):
    t, size, rps, p50, p99, err, cpu = line.split()
    rows.setdefault((t, int(size)), []).append((float(rps), float(p50), float(p99), float(err), float(cpu)))
print(f"\n{users} users, one gateway worker, {dur}s x {rounds} rounds, medians\n")
print("| size | target | req/s | p50 | p99 | errors | gateway CPU/req | ratio to post | ratio to soapplain |")
print("|---|---|---|---|---|---|---|---|---|")
for size in (102, 5120):
    base = st.median(x[0] for x in rows[("post", size)])
    plain = st.median(x[0] for x in rows[("soapplain", size)])
    for t in ("post", "soapplain", "soap", "soaprest"):
        v = rows[(t, size)]
        rps = st.median(x[0] for x in v)
        print(f"| {size} B | {t} | {rps:,.0f} | {st.median(x[1] for x in v):.2f} ms | {st.median(x[2] for x in v):.2f} ms | {max(x[3] for x in v):.2f}% | {st.median(x[4] for x in v):.1f} us | {rps/base:.3f} | {rps/plain:.3f} |")
PY
