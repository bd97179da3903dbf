#!/usr/bin/env bash
# User-space instructions per call of the gateway (valgrind callgrind) for an AI API's
# chat call against the same bytes proxied by a plain API (issue 30's added time to
# first token: under 100 synchronised streams every call's own CPU queues the next
# one's first token, so the per-call cost is what to cut). One `turnpike echo --llm`
# behind both APIs:
#   plain   an API without policies: POST /plain/v1/chat/completions relayed as is;
#   ai      examples/ai.yaml's API (API key, subscription, a token budget far from its
#           limit): the body parsed, routed, re-keyed, the answer's usage read.
# Each with `lorem 1` and `lorem 100` answers, whole (`stream: false`) and streamed:
# the difference of the two lengths over 99 is the cost per streamed event, the rest
# the cost per call. Each count is (instructions after N2 calls - after N1) / (N2 - N1),
# each run in its own gateway process under callgrind (startup and warm-up cancel out),
# on one keep-alive connection.
#
# Usage: bench/llm-callgrind.sh BIN [BIN...] [--n1 100] [--n2 400] [--keep DIR]
# --keep DIR keeps each run's callgrind.out (BINNAME.CASE.N) for callgrind_annotate;
# CASES="ai-stream-1" measures only those (names as printed).
# Needs: valgrind, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/callgrind-args.sh
callgrind_args 100 400 "$@"
TURNPIKE_BIN=${bins[0]}
. bench/lib.sh

echo_port=$(free_port)
"${bins[0]}" echo --llm --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"
{
  sed -e "s/127.0.0.1:9000/127.0.0.1:$echo_port/" \
      -e 's/total: 3000, per: minute/total: 1000000000000, per: minute/' \
      -e 's/requests: 3000, per: minute/requests: 1000000000000, per: minute/' \
      examples/ai.yaml
  cat <<YAML
  - name: plain
    context: /plain
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port/v1"]
    resources:
      - { path: "/*", methods: [POST] }
YAML
} >"$work/apis.yaml"
key=$(sed -n 's/^# example key: //p' examples/ai.yaml)

# Sends N keep-alive chat calls on one connection; every answer must be 200 and end
# with its usage (a whole answer's `usage`, a stream's usage chunk).
cat >"$work/client.py" <<'PY'
import http.client, json, sys
port, path, n, key, tokens, stream = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6] == "stream"
body = {"model": "gpt-4o-mini", "max_tokens": 512, "messages": [{"role": "user", "content": f"lorem {tokens}"}]}
if stream:
    body |= {"stream": True, "stream_options": {"include_usage": True}}
body = json.dumps(body)
headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
for i in range(n):
    c.request("POST", path, body=body, headers=headers)
    r = c.getresponse()
    text = r.read()
    if r.status != 200 or b'"completion_tokens"' not in text:
        sys.exit(f"call {i}: {r.status} {text[:300]!r}")
PY

# Instructions (Ir) of one gateway process that served N calls.
count() { # bin case path tokens mode n -> Ir
  local bin=$1 name=$2 path=$3 tokens=$4 mode=$5 n=$6 port out
  port=$(free_port); out="$work/cg.$port"
  TURNPIKE_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$bin" gateway --config "$work/apis.yaml" --workers 1 --http-port "$port" \
    --https-port off --data-dir "$work/data" >"$work/gw-$port.log" 2>&1 &
  local pid=$!
  WAIT_PORT_TRIES=600 wait_port "$port"
  python3 "$work/client.py" "$port" "$path" "$n" "$key" "$tokens" "$mode"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  grep -m1 '^summary:' "$out" | awk '{print $2}'
  if [ -n "$keep" ]; then
    mkdir -p "$keep"; cp "$out" "$keep/$(basename "$bin").$name.$n"
  fi
}

printf '%-40s %-16s %s\n' binary case instructions/call
for bin in "${bins[@]}"; do
  for api in plain ai; do
    for mode in whole stream; do
      for tokens in 1 100; do
        name="$api-$mode-$tokens"
        if [ -n "${CASES:-}" ] && [[ " $CASES " != *" $name "* ]]; then continue; fi
        a=$(count "$bin" "$name" "/$api/v1/chat/completions" "$tokens" "$mode" "$n1")
        b=$(count "$bin" "$name" "/$api/v1/chat/completions" "$tokens" "$mode" "$n2")
        printf '%-40s %-16s %s\n' "$bin" "$name" $(( (b - a) / (n2 - n1) ))
      done
    done
  done
done
