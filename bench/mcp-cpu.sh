#!/usr/bin/env bash
# Issue 31's benchmark as the issue states it: the CPU a tool call through an API's MCP
# endpoint costs the gateway process against the same operation called as REST (target
# <= 1.2x). bench/mcp-callgrind.sh counts user-space instructions; this counts what the
# process is charged, user and kernel time (the syscalls, the copies in and out of
# sockets), under load.
#
# One gateway per binary (`--workers 1`), pinned to core 1; the echo (`turnpike echo
# --size 50 --threads 1`) and the load generator (wrk, one thread) on core 0. The calls
# are bench/mcp-cases.sh's, on examples/mcp.yaml, in four modes:
#   rest-get  GET /pets/v1/pets/7?fields=name         mcp-get   tools/call getPet
#   rest-post POST /pets/v1/pets (a 29-byte JSON pet)  mcp-post  tools/call addPet
# A tool call goes over one MCP session per gateway (its `initialize` first; every
# connection sends its Mcp-Session-Id and MCP-Protocol-Version). Each mode is first
# called once with curl, its answer checked (a 200; a tool's result with isError false);
# then warmed up (one wrk run of --warmup seconds, not counted). Each round runs every
# mode of every binary as a closed loop: wrk with --connections keep-alive connections
# for --duration seconds; the order rotates from round to round (REST first, then MCP
# first; the binaries swap). Per run: requests/s (wrk's count / its time), the gateway
# process's CPU per request (utime + stime of all its threads from /proc/PID/stat over
# the run, divided by the requests; user and system time also apart) and its minor page
# faults per request. A run with a
# non-2xx answer, a socket error, or (MCP) an answer that is not a successful tool result
# fails the script (wrk's Lua checks every body). Then per binary and mode the median of
# the rounds, min-max, and the ratios: mcp-get / rest-get (the same operation as REST:
# a GET, its arguments in path and query), mcp-post / rest-post (the like-for-like wire
# comparison: both POST a JSON body), mcp-get / rest-post.
#
# Usage: bench/mcp-cpu.sh BIN [BIN2] [--duration 5] [--rounds 5] [--connections 50]
#        [--warmup 2]
# Needs: wrk, taskset, curl, python3 (scripts/install-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=5; rounds=5; conns=50; warmup=2; bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --warmup) warmup=$2; shift 2;;
    -*) echo "unknown option $1" >&2; exit 2;;
    *) bins+=("$1"); shift;;
  esac
done
[ ${#bins[@]} -ge 1 ] && [ ${#bins[@]} -le 2 ] || { echo "usage: bench/mcp-cpu.sh BIN [BIN2] [options]" >&2; exit 2; }
command -v wrk >/dev/null || { echo "bench/mcp-cpu.sh needs wrk (scripts/install-test-deps.sh)" >&2; exit 2; }

TURNPIKE_BIN=${bins[0]}
. bench/lib.sh
. bench/mcp-cases.sh
if [ "$(nproc)" -ge 2 ]; then load_cpu=0; gw_cpu=1; else load_cpu=0; gw_cpu=0; fi

echo_port=$(free_port)
taskset -c "$load_cpu" "${bins[0]}" echo --port "$echo_port" --threads 1 --size 50 >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"
mcp_config "$echo_port"

# The gateways (gw_port[i], gw_pid[i]) and each one's MCP session.
gw_port=(); gw_pid=(); session=()
for i in "${!bins[@]}"; do
  port=$(free_port)
  TURNPIKE_LOG=warn taskset -c "$gw_cpu" "${bins[$i]}" gateway --config "$work/apis.yaml" \
    --workers 1 --http-port "$port" --https-port off --data-dir "$work/data$i" \
    >"$work/gw$i.log" 2>&1 &
  pids+=($!); gw_pid+=($!); gw_port+=("$port")
done
for i in "${!bins[@]}"; do
  wait_port "${gw_port[$i]}"
  id=$(curl -s -D - -o /dev/null -H "apikey: $MCP_KEY" -H "content-type: application/json" \
      -H "accept: application/json, text/event-stream" -d "$MCP_INITIALIZE" \
      "http://127.0.0.1:${gw_port[$i]}$MCP_ENDPOINT" | tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" {print $2}')
  [ -n "$id" ] || { echo "${bins[$i]}: initialize gave no Mcp-Session-Id" >&2; cat "$work/gw$i.log" >&2; exit 1; }
  session+=("$id")
done

# wrk's script for MODE (and a session id): the request, and a check of every answer.
lua() { # mode session
  local method=GET path=$MCP_GET_PATH body= want=
  case "$1" in
    rest-post) method=POST; path=$MCP_POST_PATH; body=$MCP_PET;;
    mcp-get) method=POST; path=$MCP_ENDPOINT; body=$MCP_GET_CALL; want='"isError":false';;
    mcp-post) method=POST; path=$MCP_ENDPOINT; body=$MCP_POST_CALL; want='"isError":false';;
  esac
  cat <<LUA
wrk.method = "$method"
wrk.path = "$path"
wrk.headers["apikey"] = "$MCP_KEY"
LUA
  [ -n "$body" ] && printf 'wrk.body = [[%s]]\nwrk.headers["Content-Type"] = "application/json"\n' "$body"
  [ -n "$want" ] && printf 'wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Session-Id"] = "%s"
wrk.headers["MCP-Protocol-Version"] = "%s"\n' "$2" "$MCP_VERSION"
  cat <<LUA
local want = [[$want]]
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function response(status, headers, body)
  if status ~= 200 or (want ~= "" and not string.find(body, want, 1, true)) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + t:get("bad") end
  io.write(string.format("BAD %d\n", n))
end
LUA
}

# One call of each mode with curl, its answer shown when it is not what the run counts.
check_once() { # i mode
  local url="http://127.0.0.1:${gw_port[$1]}" args=(-s -o "$work/answer" -w '%{http_code}' -H "apikey: $MCP_KEY")
  local mcp=(-H "content-type: application/json" -H "accept: application/json, text/event-stream"
    -H "mcp-session-id: ${session[$1]}" -H "mcp-protocol-version: $MCP_VERSION")
  local code
  case "$2" in
    rest-get) code=$(curl "${args[@]}" "$url$MCP_GET_PATH");;
    rest-post) code=$(curl "${args[@]}" -H "content-type: application/json" -d "$MCP_PET" "$url$MCP_POST_PATH");;
    mcp-get) code=$(curl "${args[@]}" "${mcp[@]}" -d "$MCP_GET_CALL" "$url$MCP_ENDPOINT");;
    mcp-post) code=$(curl "${args[@]}" "${mcp[@]}" -d "$MCP_POST_CALL" "$url$MCP_ENDPOINT");;
  esac
  if [ "$code" != 200 ] || { [[ $2 == mcp-* ]] && ! grep -q '"isError":false' "$work/answer"; }; then
    echo "${bins[$1]} $2: HTTP $code: $(head -c 300 "$work/answer")" >&2; exit 1
  fi
}

stat_of() { awk '{print $14, $15, $10}' "/proc/$1/stat"; } # utime stime minflt (ticks, faults)
hz=$(getconf CLK_TCK)
run() { # i mode seconds -> "requests seconds user-ticks sys-ticks minflt"
  lua "$2" "${session[$1]}" >"$work/$2.lua"
  local before after out
  before=$(stat_of "${gw_pid[$1]}")
  out=$(taskset -c "$load_cpu" wrk -t1 -c"$conns" -d"${3}s" -s "$work/$2.lua" "http://127.0.0.1:${gw_port[$1]}")
  after=$(stat_of "${gw_pid[$1]}")
  local bad errs
  bad=$(awk '/^BAD/ {print $2}' <<<"$out")
  errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" || true)
  if [ "${bad:-x}" != 0 ] || [ -n "$errs" ]; then
    echo "${bins[$1]} $2: $bad answers not counted; $errs" >&2; echo "$out" >&2; exit 1
  fi
  # "N requests in 5.00s, ..."
  awk -v b="$before" -v a="$after" '/ requests in / {
      split(b, x, " "); split(a, y, " "); t = $4; sub(/s,$/, "", t)
      print $1, t, y[1] - x[1], y[2] - x[2], y[3] - x[3] }' <<<"$out"
}

modes=(rest-get mcp-get rest-post mcp-post)
for i in "${!bins[@]}"; do
  for m in "${modes[@]}"; do check_once "$i" "$m"; run "$i" "$m" "$warmup" >/dev/null; done
done

echo "mcp-cpu: gateway on core $gw_cpu (--workers 1), echo and wrk -t1 -c$conns on core $load_cpu, ${duration}s runs, $rounds rounds"
printf '%-5s %-32s %-9s %9s %10s %9s %9s %10s\n' round binary mode "req/s" "CPU_us/req" user sys "minflt/req"
: >"$work/runs"
for r in $(seq "$rounds"); do
  order=("${!bins[@]}"); [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${order[@]}" | tac))
  round_modes=("${modes[@]}"); [ $((r % 2)) = 0 ] && round_modes=(mcp-get rest-get mcp-post rest-post)
  for i in "${order[@]}"; do
    for m in "${round_modes[@]}"; do
      run "$i" "$m" "$duration" >"$work/one" # exits the script on a bad answer
      read -r n secs user sys faults <"$work/one"
      line=$(awk -v n="$n" -v s="$secs" -v u="$user" -v k="$sys" -v f="$faults" -v hz="$hz" \
        'BEGIN { us = 1e6 / hz / n; printf "%.0f %.2f %.2f %.2f %.3f", n / s, (u + k) * us, u * us, k * us, f / n }')
      echo "$i $m $line" >>"$work/runs"
      read -r rps cpu u k flt <<<"$line"
      printf '%-5s %-32s %-9s %9s %10s %9s %9s %10s\n' "$r" "${bins[$i]}" "$m" "$rps" "$cpu" "$u" "$k" "$flt"
    done
  done
done

python3 - "$work/runs" "${bins[@]}" <<'PY'
import statistics, sys
runs, bins = {}, sys.argv[2:]
for line in open(sys.argv[1]):
    i, mode, rps, cpu, user, sys_, flt = line.split()
    runs.setdefault((int(i), mode), []).append((float(rps), float(cpu), float(flt), float(user), float(sys_)))
def span(v, k, fmt):
    xs = [x[k] for x in v]
    return f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}-{max(xs):{fmt}})"
print("\nmedians (min-max) per binary and mode:")
print(f"{'binary':32} {'mode':9} {'req/s':>22} {'CPU us/request':>22} {'minflt/request':>22} {'user us':>8} {'sys us':>8}")
for i, b in enumerate(bins):
    for mode in ("rest-get", "mcp-get", "rest-post", "mcp-post"):
        v = runs[(i, mode)]
        user, sys_ = (statistics.median(x[k] for x in v) for k in (3, 4))
        print(f"{b:32} {mode:9} {span(v, 0, '.0f'):>22} {span(v, 1, '.2f'):>22} {span(v, 2, '.3f'):>22} {user:8.2f} {sys_:8.2f}")
print("\nratios of the medians (CPU per request; req/s):")
for i, b in enumerate(bins):
    med = {m: [statistics.median(x[k] for x in runs[(i, m)]) for k in range(5)] for m in ("rest-get", "mcp-get", "rest-post", "mcp-post")}
    for mcp, rest in (("mcp-get", "rest-get"), ("mcp-post", "rest-post"), ("mcp-get", "rest-post")):
        print(f"{b:32} {mcp}/{rest:9} CPU {med[mcp][1] / med[rest][1]:.3f}x  req/s {med[mcp][0] / med[rest][0]:.3f}x")
PY
