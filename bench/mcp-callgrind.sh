#!/usr/bin/env bash
# User-space instructions per request of the gateway (valgrind callgrind) for a tool call
# through an API's MCP endpoint against the same operation called as REST (issue 31's
# benchmark: a tool call costs <= 1.2x the REST call's CPU). One API, as
# examples/mcp.yaml has it (API key + subscription, Unlimited tier, the OpenAPI's two
# operations as tools), `turnpike echo --size 50` behind it:
#   get   REST  GET /pets/v1/pets/7?fields=name                      (50-byte answer)
#         MCP   tools/call getPet {"petId": "7", "fields": "name"}   (one session)
#   post  REST  POST /pets/v1/pets {"name": "Rex", "tag": "dog"}     (JSON echoed back)
#         MCP   tools/call addPet {"body": {"name": "Rex", "tag": "dog"}}
#               (the answer also parsed into structuredContent)
# Each count is (instructions after N2 requests - after N1) / (N2 - N1), each run in its
# own gateway process under callgrind (startup, warm-up and the MCP `initialize` cancel
# out), on one keep-alive connection.
#
# Usage: bench/mcp-callgrind.sh BIN [BIN...] [--n1 300] [--n2 1500] [--keep DIR]
# GATEWAY_ARGS="--metrics-addr 127.0.0.1:0" adds flags to each gateway (a build before
# the MCP endpoint kept its resource unobserved needs an observer, such as metrics).
# --keep DIR keeps each run's callgrind.out (BINNAME.CASE-MODE.N) for callgrind_annotate;
# CASES="get" measures only those.
# Needs: valgrind, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

n1=300; n2=1500; bins=(); keep=
while [ $# -gt 0 ]; do
  case "$1" in
    --n1) n1=$2; shift 2;;
    --n2) n2=$2; shift 2;;
    --keep) keep=$2; shift 2;;
    *) bins+=("$1"); shift;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { echo "usage: bench/mcp-callgrind.sh BIN [BIN...]" >&2; exit 2; }

# work, pids, cleanup, free_port, wait_port (a gateway under callgrind starts slowly: 60 s).
TURNPIKE_BIN=${bins[0]} WAIT_PORT_TRIES=600
. bench/lib.sh

echo_port=$(free_port)
"${bins[0]}" echo --port "$echo_port" --threads 1 --size 50 >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"

# examples/mcp.yaml (agent-key-1), its endpoint the echo; its session bounds kept.
sed "s#http://127.0.0.1:8080#http://127.0.0.1:$echo_port#" examples/mcp.yaml >"$work/apis.yaml"
grep -q "127.0.0.1:$echo_port" "$work/apis.yaml" || { echo "examples/mcp.yaml names no endpoint" >&2; exit 1; }

# N keep-alive requests on one connection (MCP: after one initialize, in its session);
# every answer must be a 200, and a tool's result not an error.
cat >"$work/client.py" <<'PY'
import http.client, json, sys
port, case, mode, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
key = {"apikey": "agent-key-1"}
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def send(method, path, headers, body=None):
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    if r.status != 200:
        sys.exit(f"{method} {path}: {r.status} {data[:200]!r}")
    return r, data
pet = {"name": "Rex", "tag": "dog"}
if mode == "rest":
    if case == "get":
        req = ("GET", "/pets/v1/pets/7?fields=name", key, None)
    else:
        req = ("POST", "/pets/v1/pets", dict(key, **{"content-type": "application/json"}), json.dumps(pet))
    for _ in range(n):
        send(*req)
    sys.exit(0)
mcp = dict(key, **{"content-type": "application/json", "accept": "application/json, text/event-stream"})
init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
r, _ = send("POST", "/mcp/pets/v1", mcp, json.dumps(init))
mcp["mcp-session-id"] = r.getheader("mcp-session-id")
mcp["mcp-protocol-version"] = "2025-06-18"
if case == "get":
    call = {"name": "getPet", "arguments": {"petId": "7", "fields": "name"}}
else:
    call = {"name": "addPet", "arguments": {"body": pet}}
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
for _ in range(n):
    _, data = send("POST", "/mcp/pets/v1", mcp, body)
    if json.loads(data).get("result", {}).get("isError") is not False:
        sys.exit(f"tool call: {data[:300]!r}")
PY

count() { # bin case mode n -> Ir
  local bin=$1 case=$2 mode=$3 n=$4 port out
  port=$(free_port); out="$work/cg.$port"
  TURNPIKE_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$bin" gateway --config "$work/apis.yaml" --workers 1 --http-port "$port" \
    --https-port off --data-dir "$work/data" ${GATEWAY_ARGS:-} >"$work/gw-$port.log" 2>&1 &
  local pid=$!
  wait_port "$port"
  python3 "$work/client.py" "$port" "$case" "$mode" "$n"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  grep -m1 '^summary:' "$out" | awk '{print $2}'
  if [ -n "$keep" ]; then
    mkdir -p "$keep"; cp "$out" "$keep/$(basename "$bin").$case-$mode.$n"
  fi
}

printf '%-40s %-6s %-14s %-14s %s\n' binary case rest/request mcp/request ratio
for bin in "${bins[@]}"; do
  for case in ${CASES:-get post}; do
    ra=$(count "$bin" "$case" rest "$n1"); rb=$(count "$bin" "$case" rest "$n2")
    ma=$(count "$bin" "$case" mcp "$n1"); mb=$(count "$bin" "$case" mcp "$n2")
    rest=$(( (rb - ra) / (n2 - n1) )); mcp=$(( (mb - ma) / (n2 - n1) ))
    printf '%-40s %-6s %-14s %-14s %s\n' "$bin" "$case" "$rest" "$mcp" \
      "$(awk -v m="$mcp" -v r="$rest" 'BEGIN{printf "%.3f", m / r}')"
  done
done
