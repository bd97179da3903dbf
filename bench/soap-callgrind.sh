#!/usr/bin/env bash
# SOAP cost in the gateway's own user-space instructions per request (valgrind
# callgrind): the load-independent companion of bench/soap.sh, whose throughput ratios
# also carry the echo back end's and the load generator's share of a 2-core box. For each
# size (102 B, 5 KB) and each API, on one keep-alive connection:
#   post       a JSON POST through a plain API to the echo back end;
#   soapplain  the SOAP 1.2 envelope of the size through a plain API (no SOAP policy) to
#              the SOAP echo: the same bytes both ways as `soap`, without the SOAP work;
#   soap       the envelope through the SOAP pass-through API (envelope checked);
#   soaprest   the JSON POST of `post` to a SOAP-to-REST resource (JSON -> SOAP -> JSON).
# Each count is (Ir after N2 requests - Ir after N1) / (N2 - N1), each run its own gateway
# process under callgrind, so start-up and warm-up cancel out.
#
# Usage: bench/soap-callgrind.sh [BIN] [--n1 300] [--n2 1500] [--keep DIR]
# --keep DIR keeps each callgrind.out (API.SIZE.N) for callgrind_annotate.
# Needs: valgrind; BIN, else TURNPIKE_BIN, else the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/callgrind-args.sh
callgrind_opts 300 1500 "$@"
[ ${#bins[@]} -le 1 ] || { echo "usage: $0 [BIN] [--n1 N] [--n2 N] [--keep DIR]" >&2; exit 2; }
[ ${#bins[@]} -eq 0 ] || export TURNPIKE_BIN=${bins[0]}

. bench/lib.sh

echo_port=$(free_port)
"$bin" --log warn echo --soap --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"
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

# N keep-alive POSTs of the bench kit's bodies on one connection; every answer is 200.
cat >"$work/client.py" <<'PY'
import http.client, sys
port, api, size, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
NS = "http://www.w3.org/2003/05/soap-envelope"
if api in ("soap", "soapplain"):
    head = f'<s:Envelope xmlns:s="{NS}"><s:Body><echo xmlns="urn:tp:echo"><p>'
    tail = "</p></echo></s:Body></s:Envelope>"
    fill = max(0, size - len(head) - len(tail))
    body = (head + "".join(chr(97 + i % 26) for i in range(fill)) + tail).encode()
    headers = {"content-type": 'application/soap+xml; charset=utf-8; action="urn:tp:echo#echo"'}
    path = "/soap/v1" if api == "soap" else "/soapplain/v1/x"
else:
    body = b'{"p":"' + b"a" * max(0, size - 8) + b'"}'
    headers = {"content-type": "application/json"}
    path = "/post/v1/bench" if api == "post" else "/soaprest/v1/echo"
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
for i in range(n):
    c.request("POST", path, body=body, headers=headers)
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"{api} request {i}: {r.status}")
PY

count() { # api size n -> Ir
  local port out pid
  port=$(free_port); out="$work/cg.$port"
  TURNPIKE_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$bin" gateway --config "$work/apis.yaml" --workers 1 --http-port "$port" \
    --https-port off --data-dir "$work/data" >"$work/gw-$port.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
  python3 "$work/client.py" "$port" "$1" "$2" "$3"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  grep -m1 '^summary:' "$out" | awk '{print $2}'
  if [ -n "$keep" ]; then mkdir -p "$keep"; cp "$out" "$keep/$1.$2.$3"; fi
}

printf '%-8s %-10s %12s %14s %14s\n' size api instr/req "/ post" "/ soapplain"
for size in 102 5120; do
  declare -A ir=()
  for api in post soapplain soap soaprest; do
    a=$(count "$api" "$size" "$n1"); b=$(count "$api" "$size" "$n2")
    ir[$api]=$(( (b - a) / (n2 - n1) ))
  done
  for api in post soapplain soap soaprest; do
    python3 -c 'import sys; v,p,s=map(int,sys.argv[4:7]); print(f"{sys.argv[1]:<8} {sys.argv[2]:<10} {v:>12,} {v/p:>14.3f} {v/s:>14.3f}")' \
      "$size" "$api" x "${ir[$api]}" "${ir[post]}" "${ir[soapplain]}"
  done
  unset ir
done
