#!/usr/bin/env bash
# User-space instructions per request of the gateway (valgrind callgrind) for a tool call
# through an API's MCP endpoint against the same operation called as REST (issue 31's
# benchmark: a tool call costs <= 1.2x the REST call's CPU). One API, as
# examples/mcp.yaml has it, `turnpike echo --size 50` behind it; the cases `get` and
# `post` (bench/mcp-cases.sh says what each sends; bench/mcp-cpu.sh measures the same
# calls' process CPU under load).
#
# What is counted, and why this way. One gateway process per binary and case serves
# both modes on two keep-alive connections (REST; MCP after one `initialize`). After a
# warm-up of W calls of each mode the counters are zeroed (`callgrind_control -z`), then
# R rounds each run a window of K REST calls and a window of K tool calls (which goes
# first alternates), each window ended by a dump (`callgrind_control -d`). Everything
# the process executes in user space during a window counts: the connection task, the
# upstream exchange, the runtime's scheduling and I/O driver, and any task the calls
# feed (analytics, audit rows); startup, warm-up and `initialize` do not. A count is the
# median over the R windows of (window's instructions / K), the ratio the MCP median
# over the REST median; min-max is printed beside each.
# Why not (run of N2 calls - run of N1 calls) in two processes, as this script did
# before 2026-11-27: two runs of the same binaries gave 1.16x-1.68x. Each process adds
# its own startup (~5M instructions, varying with hash seeds and the allocator) and, more,
# the number of times the single worker finds a socket not yet readable (a poll that
# returns Pending, a park in epoll, a wake-up and a second poll: ~1-3k instructions per
# request) depends on how fast the echo and the client answer the gateway slowed ~50x by
# valgrind, i.e. on the box's load, which changed between the four processes. Windows of
# both modes interleaved in one process see the same load and the same process state,
# and the median drops a window that met a burst. The timers that run while idle (the
# throttle sweep, health and reload watchers: ~40k instructions per second of wall time,
# measured with the gateway idle) add < 1 % to a window; they are not subtracted.
#
# Usage: bench/mcp-callgrind.sh BIN [BIN...] [--calls 500] [--rounds 5] [--warm 200]
#        [--keep DIR]
# GATEWAY_ARGS="--metrics-addr 127.0.0.1:0" adds flags to each gateway (a build before
# the MCP endpoint kept its resource unobserved needs an observer, such as metrics).
# --keep DIR keeps each window's profile (BINNAME.CASE.ROUND-MODE) for
# callgrind_annotate (a tool call's cost above REST: the two windows of one round).
# CASES="get" measures only those.
# Needs: valgrind (callgrind_control), python3.
set -euo pipefail
cd "$(dirname "$0")/.."

calls=500; rounds=5; warm=200; bins=(); keep=
while [ $# -gt 0 ]; do
  case "$1" in
    --calls) calls=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --warm) warm=$2; shift 2;;
    --keep) keep=$2; shift 2;;
    --n1|--n2) echo "$1: this script now counts windows in one process: --calls K --rounds R" >&2; exit 2;;
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

. bench/mcp-cases.sh
mcp_config "$echo_port"

# Warm-up, zero, then rounds of a REST window and a tool-call window, each dumped with
# its name; every answer must be a 200, and a tool's result not an error.
cat >"$work/client.py" <<'PY'
import http.client, json, os, subprocess, sys
port, pid, case = int(sys.argv[1]), sys.argv[2], sys.argv[3]
calls, rounds, warm = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
env = os.environ
key = {"apikey": env["MCP_KEY"]}
def conn():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=120)
def send(c, method, path, headers, body=None):
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    if r.status != 200:
        sys.exit(f"{method} {path}: {r.status} {data[:200]!r}")
    return r, data
rest = conn()
if case == "get":
    rest_req = ("GET", env["MCP_GET_PATH"], key, None)
else:
    rest_req = ("POST", env["MCP_POST_PATH"], dict(key, **{"content-type": "application/json"}), env["MCP_PET"])
mcp = conn()
hdrs = dict(key, **{"content-type": "application/json", "accept": "application/json, text/event-stream"})
r, _ = send(mcp, "POST", env["MCP_ENDPOINT"], hdrs, env["MCP_INITIALIZE"])
hdrs["mcp-session-id"] = r.getheader("mcp-session-id")
hdrs["mcp-protocol-version"] = env["MCP_VERSION"]
call = env["MCP_GET_CALL"] if case == "get" else env["MCP_POST_CALL"]
mcp_req = ("POST", env["MCP_ENDPOINT"], hdrs, call)
def window(mode, n):
    for _ in range(n):
        if mode == "rest":
            send(rest, *rest_req)
        else:
            _, data = send(mcp, *mcp_req)
            if json.loads(data).get("result", {}).get("isError") is not False:
                sys.exit(f"tool call: {data[:300]!r}")
def control(*args):
    subprocess.run(["callgrind_control", *args, pid], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
window("rest", warm); window("mcp", warm)
control("-z")
for r in range(rounds):
    for mode in (("rest", "mcp") if r % 2 == 0 else ("mcp", "rest")):
        window(mode, calls)
        control(f"--dump={r}-{mode}")
PY

# Reads the dumps: "MODE median min max" per call for each mode.
cat >"$work/windows.py" <<'PY'
import glob, re, statistics, sys
prefix, calls = sys.argv[1], int(sys.argv[2])
per = {"rest": [], "mcp": []}
for f in glob.glob(prefix + ".*"):
    text = open(f).read()
    m = re.search(r"^desc: Trigger: dump (\d+)-(rest|mcp)$", text, re.M)
    if m:
        per[m.group(2)].append(int(re.search(r"^totals: (\d+)", text, re.M).group(1)) / calls)
for mode, v in per.items():
    print(mode, round(statistics.median(v)), round(min(v)), round(max(v)))
PY

count() { # bin case -> lines "MODE median min max"
  local bin=$1 case=$2 port out
  port=$(free_port); out="$work/cg.$port"
  TURNPIKE_LOG=warn valgrind --tool=callgrind --compress-strings=no --callgrind-out-file="$out" \
    "$bin" gateway --config "$work/apis.yaml" --workers 1 --http-port "$port" \
    --https-port off --data-dir "$work/data" ${GATEWAY_ARGS:-} >"$work/gw-$port.log" 2>&1 &
  local pid=$!
  wait_port "$port"
  python3 "$work/client.py" "$port" "$pid" "$case" "$calls" "$rounds" "$warm"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  python3 "$work/windows.py" "$out" "$calls"
  if [ -n "$keep" ]; then
    mkdir -p "$keep"
    local f name
    for f in "$out".*; do
      name=$(sed -n 's/^desc: Trigger: dump //p' "$f")
      [ -n "$name" ] && cp "$f" "$keep/$(basename "$bin").$case.$name"
    done
  fi
}

printf '%-32s %-5s %-24s %-24s %s\n' binary case "rest/request (min-max)" "mcp/request (min-max)" ratio
for bin in "${bins[@]}"; do
  for case in ${CASES:-get post}; do
    declare -A med=() span=()
    res=$(count "$bin" "$case")
    while read -r mode m lo hi; do med[$mode]=$m; span[$mode]="$m ($lo-$hi)"; done <<<"$res"
    printf '%-32s %-5s %-24s %-24s %s\n' "$bin" "$case" "${span[rest]}" "${span[mcp]}" \
      "$(awk -v m="${med[mcp]}" -v r="${med[rest]}" 'BEGIN{printf "%.3f", m / r}')"
  done
done
