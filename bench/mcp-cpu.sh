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
# Two loads:
# - closed (default): wrk, a closed loop: the gateway as fast as it goes. How busy it is
#   then depends on the mode (a slower mode is waited for more), and so does how many
#   answers one wake-up serves: CPU per request mixes the call's cost and the batching.
# - `--rate R`: an open loop at R requests/s for every mode (`turnpike bench run --rate R
#   --connections C`, the first binary's, one thread on core 0): the same arrivals for
#   REST and MCP, as a gateway in service sees them (it is rarely saturated), so the CPU
#   per request compares the calls at equal load. R must be below every mode's capacity
#   (the run fails when fewer than 95 % of R were served). Answers are checked by status
#   (any >= 400 fails the run) after the curl check of each mode's answer. The kit is
#   $TURNPIKE_KIT when set (a binary with `bench run --body-file`), else the first BIN.
# Each round's MCP run follows its REST run (or the reverse, alternating), so besides the
# ratio of the medians the script prints the median of each round's own ratio: the VM's
# slow drifts (neighbours, frequency) cancel within a round.
#
# Usage: bench/mcp-cpu.sh BIN [BIN2] [--duration 5] [--rounds 5] [--connections 50]
#        [--warmup 2] [--rate R]
# Needs: wrk, taskset, curl, python3 (scripts/install-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=5; rounds=5; conns=50; warmup=2; rate=; bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --warmup) warmup=$2; shift 2;;
    --rate) rate=$2; shift 2;;
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
# The open loop's request of MODE for gateway I: the bench kit's arguments.
kit_args() { # i mode
  local a=(-H "apikey: $MCP_KEY")
  case "$2" in
    rest-get) a+=(--url "http://127.0.0.1:${gw_port[$1]}$MCP_GET_PATH");;
    rest-post) printf '%s' "$MCP_PET" >"$work/body-$2"
      a+=(--url "http://127.0.0.1:${gw_port[$1]}$MCP_POST_PATH" --body-file "$work/body-$2" -H "content-type: application/json");;
    mcp-get|mcp-post)
      if [ "$2" = mcp-get ]; then printf '%s' "$MCP_GET_CALL" >"$work/body-$2"; else printf '%s' "$MCP_POST_CALL" >"$work/body-$2"; fi
      a+=(--url "http://127.0.0.1:${gw_port[$1]}$MCP_ENDPOINT" --body-file "$work/body-$2" -H "content-type: application/json"
        -H "accept: application/json, text/event-stream" -H "mcp-session-id: ${session[$1]}" -H "mcp-protocol-version: $MCP_VERSION");;
  esac
  printf '%s\n' "${a[@]}"
}
run_open() { # i mode seconds -> "requests seconds user-ticks sys-ticks minflt"
  local args before after
  mapfile -t args < <(kit_args "$1" "$2")
  before=$(stat_of "${gw_pid[$1]}")
  TURNPIKE_LOG=warn taskset -c "$load_cpu" "${TURNPIKE_KIT:-${bins[0]}}" bench run "${args[@]}" --rate "$rate" \
    --connections "$conns" --threads 1 --warmup 0s --duration "${3}s" --json >"$work/kit.json" 2>"$work/kit.err" \
    || { echo "${bins[$1]} $2: bench run failed: $(cat "$work/kit.err")" >&2; exit 1; }
  after=$(stat_of "${gw_pid[$1]}")
  python3 - "$work/kit.json" "$rate" "$3" "$before" "$after" "${bins[$1]} $2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["summary"]
rate, secs = float(sys.argv[2]), float(sys.argv[3])
b, a = [list(map(int, x.split())) for x in sys.argv[4:6]]
if r["errors"] or r["samples"] < 0.95 * rate * secs:
    sys.exit(f"{sys.argv[6]}: {r['samples']} answers in {secs} s at {rate}/s, {r['errors']} errors: "
             "the rate is above what this mode serves, or answers failed")
print(r["samples"], secs, a[0] - b[0], a[1] - b[1], a[2] - b[2])
PY
}
run() { # i mode seconds -> "requests seconds user-ticks sys-ticks minflt"
  if [ -n "$rate" ]; then run_open "$@"; return; fi
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

if [ -n "$rate" ]; then load="bench run --rate $rate --connections $conns (open loop)"; else load="wrk -t1 -c$conns (closed loop)"; fi
echo "mcp-cpu: gateway on core $gw_cpu (--workers 1), echo and $load on core $load_cpu, ${duration}s runs, $rounds rounds"
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
      echo "$i $m $line $r" >>"$work/runs"
      read -r rps cpu u k flt <<<"$line"
      printf '%-5s %-32s %-9s %9s %10s %9s %9s %10s\n' "$r" "${bins[$i]}" "$m" "$rps" "$cpu" "$u" "$k" "$flt"
    done
  done
done

python3 - "$work/runs" "${bins[@]}" <<'PY'
import statistics, sys
runs, bins = {}, sys.argv[2:]
for line in open(sys.argv[1]):
    i, mode, rps, cpu, user, sys_, flt, rnd = line.split()
    runs.setdefault((int(i), mode), []).append((float(rps), float(cpu), float(flt), float(user), float(sys_), int(rnd)))
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
        paired = sorted(m[1] / r[1] for m, r in zip(runs[(i, mcp)], runs[(i, rest)]) if m[5] == r[5])
        print(f"{b:32} {mcp}/{rest:9} CPU {med[mcp][1] / med[rest][1]:.3f}x  req/s {med[mcp][0] / med[rest][0]:.3f}x"
              f"  CPU, median of the rounds' own ratios {statistics.median(paired):.3f}x ({paired[0]:.3f}-{paired[-1]:.3f})")
PY
