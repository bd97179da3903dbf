#!/usr/bin/env bash
# Response cache (issue 27): the same open API through two gateways started from one file
# each, in front of `turnpike echo` (which serves `?size=N` bytes to a GET):
#   plain   no cache;
#   cached  `policies: [ { cache: { ttl: 60s, admission: always } } ]`: every miss stores;
#   nostore the same cache with `statuses: [404]`: the echo's 200s are never storable;
#   adaptive `cache: { ttl: 60s }`, the default admission (only when its arm is asked for).
# (`admission: always` only for binaries that have adaptive admission, docs/caching.md
# "Admission": an older one's cache stores every miss, and refuses the field.)
# Arms (alternating rounds, medians; 100 connections by default):
#   hit-50 / hit-10k      cached gateway, one warm key: every request a HIT;
#   plain-50 / plain-10k  the same requests through the plain gateway;
#   miss                  cached gateway, every request a new key (a counter in the query):
#                         every request a MISS, looked up, led, stored;
#   plain-unique          the same unique-key requests through the plain gateway;
#   nostore               the unique-key requests through the nostore gateway: every
#                         request a MISS judged unstorable from the response head.
#   plain-unique-10k / miss-10k  (only when asked for) plain-unique and miss with 10 KiB
#                         answers.
#   adaptive              (only when asked for) the unique-key requests through the
#                         adaptive gateway, after a second of them unmeasured (a burst of
#                         new keys: its store goes selective within two windows of 4096
#                         lookups): every key asked once, looked up, counted, not stored;
#                         what a user of the default meets. (An older binary: a storing miss.)
#   once                  (only when asked for: binaries that know `min_uses`) the
#                         unique-key requests through a gateway whose cache says
#                         `min_uses: 2`: every key asked once, looked up and counted,
#                         never stored.
# Ratios: hit/plain throughput (target >= 1.5x at lower CPU per request); miss/plain-unique
# (target cost <= 5 %); nostore/plain-unique (a cache configured, nothing storable); for
# CPU per request also the median of each round's own ratio (give the two arms next to
# each other in --arms: the VM's drifts, slower than a round, cancel in it).
# Gateways pinned to core 1 (TURNPIKE_WORKERS=1); wrk and the echo back end to core 0.
# Per arm the gateway's CPU per request is also split into user and system time, with its
# minor page faults per request (/proc/PID/stat over the arm's window): a storing miss
# whose wall clock costs more than its instructions shows here where (the kernel zeroing
# pages the allocator handed back and takes again shows as system time and faults).
#
# --rate R: an open loop instead of wrk's closed one: every arm at R requests/s (the bench
# kit, `turnpike bench run --rate R`, from TURNPIKE_KIT or the first binary; unique keys by
# `n={seq}` in its URL), so each arm's CPU per request is measured at the same load, as a
# gateway in service runs (rarely saturated: saturated, one wake-up serves many answers and
# the user-space share of a request's CPU grows). An arm that cannot serve R fails the run.
#
# Usage: [TURNPIKE_BIN=... | TURNPIKE_PROFILE=ci-bench] bench/cache.sh [--duration 10]
#          [--connections 100] [--rounds 3] [--arms "plain-unique miss"] [--max-size 256MiB]
#          [--rate R] [BIN...]
# BIN...: binaries to compare in one run (each its own three gateways, every round running
# each arm for each binary in turn); without them, TURNPIKE_BIN (or a build). --arms picks
# arms (default: all); --max-size bounds the cached gateway's store (a small one is full,
# and evicting on every miss, within a round).
# Needs: wrk, taskset, curl, python3 (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=10; conns=100; rounds=3; max_size=256MiB; rate=
arms=(plain-50 hit-50 plain-10k hit-10k plain-unique miss nostore)
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --arms) read -ra arms <<<"$2"; shift 2;;
    --max-size) max_size=$2; shift 2;;
    --rate) rate=$2; shift 2;;
    -*) echo "unknown option $1" >&2; exit 2;;
    *) bins+=("$1"); shift;;
  esac
done
[ ${#bins[@]} -eq 0 ] || TURNPIKE_BIN=${bins[0]}

. bench/lib.sh
[ ${#bins[@]} -gt 0 ] || bins=("$bin")

echo_port=$(free_port)
for b in "${!bins[@]}"; do
  always=$(admission_always "${bins[$b]}")
  cache_api "plain-$b" "$echo_port"
  cache_api "cached-$b" "$echo_port" "    policies: [ { cache: { ttl: 60s, max_size: $max_size$always } } ]"
  cache_api "nostore-$b" "$echo_port" "    policies: [ { cache: { ttl: 60s, statuses: [404]$always } } ]"
  cache_api "adaptive-$b" "$echo_port" "    policies: [ { cache: { ttl: 60s, max_size: $max_size } } ]"
  cache_api "once-$b" "$echo_port" "    policies: [ { cache: { ttl: 60s, min_uses: 2 } } ]"
done

taskset -c 0 "$bin" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"
declare -A port pid
start_gw() { # binary-index name
  local b=$1 name=$2 p; p=$(free_port)
  TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "${bins[$b]}" gateway --config "$work/$name-$b.yaml" \
    --http-port "$p" --https-port off --data-dir "$work/data-$b-$name" --analytics off >"$work/gw-$b-$name.log" 2>&1 &
  pids+=($!)
  port[$b.$name]=$p; pid[$b.$name]=$!
}
gateways=(plain cached nostore)
[[ " ${arms[*]} " == *" once "* ]] && gateways+=(once)
[[ " ${arms[*]} " == *" adaptive "* ]] && gateways+=(adaptive)
for b in "${!bins[@]}"; do
  for name in "${gateways[@]}"; do start_gw "$b" "$name"; done
done
for p in "${port[@]}"; do wait_port "$p"; done

x_cache() { curl -s -o /dev/null -D - "$1" | awk -F': ' 'tolower($1)=="x-cache" {print $2}' | tr -d '\r'; }
for b in "${!bins[@]}"; do
  for size in 50 10240; do
    url="http://127.0.0.1:${port[$b.cached]}/api/v1/x?size=$size"
    [ "$(x_cache "$url")" = MISS ] || { echo "${bins[$b]}: first request not a MISS" >&2; exit 1; }
    [ "$(x_cache "$url")" = HIT ] || { echo "${bins[$b]}: second request not a HIT" >&2; exit 1; }
  done
done

hz=$(getconf CLK_TCK)
# A process's minor faults, user and system clock ticks (/proc/PID/stat fields 10, 14, 15).
faults_ticks() { awk '{print $10, $14, $15}' "/proc/$1/stat"; }
run_one() { # url gateway-pid [lua [its argument]] -> "rps p50us p99us cpu_us user_us sys_us minflt non2xx requests" (per request)
  if [ -n "$rate" ]; then run_open "$@"; return; fi
  local url=$1 pid=$2 script=${3:-} arg=${4:-} before after reqs
  before=$(faults_ticks "$pid")
  taskset -c 0 wrk -t1 -c"$conns" -d"${duration}s" --latency ${script:+-s "$script"} "$url" ${arg:+-- "$arg"} >"$work/wrk.out" 2>&1
  after=$(faults_ticks "$pid")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$work/wrk.out")
  echo "$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out") \
$(to_us "$(awk '$1=="50%" {print $2}' "$work/wrk.out")") \
$(to_us "$(awk '$1=="99%" {print $2}' "$work/wrk.out")") \
$(awk -v a="$after" -v b="$before" -v hz="$hz" -v n="${reqs:-0}" 'BEGIN{
  split(a, x, " "); split(b, y, " ")
  if (n > 0) printf "%.1f %.1f %.1f %.2f", (x[2]+x[3]-y[2]-y[3])/hz*1e6/n, (x[2]-y[2])/hz*1e6/n, (x[3]-y[3])/hz*1e6/n, (x[1]-y[1])/n
  else print "- - - -" }') \
${non2xx:-0} ${reqs:-0}"
}

# The same line from the bench kit's open loop at $rate; a unique-key arm (a lua script
# given) asks for `?size=N&n={seq}`, every request a new key.
run_open() { # url gateway-pid [lua [size]]
  local url=$1 pid=$2 before after
  [ -z "${3:-}" ] || url="$url?size=${4:-50}&n={seq}"
  before=$(faults_ticks "$pid")
  TURNPIKE_LOG=warn taskset -c 0 "${TURNPIKE_KIT:-${bins[0]}}" bench run --url "$url" --rate "$rate" \
    --connections "$conns" --threads 1 --warmup 0s --duration "${duration}s" --json >"$work/kit.json" 2>"$work/kit.err" \
    || { echo "$url: bench run failed: $(cat "$work/kit.err")" >&2; exit 1; }
  after=$(faults_ticks "$pid")
  python3 - "$work/kit.json" "$rate" "$duration" "$before" "$after" "$hz" "$url" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["summary"]
rate, secs, hz = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[6])
b, a = [list(map(int, x.split())) for x in sys.argv[4:6]]
n = r["samples"]
if r["errors"] or n < 0.95 * rate * secs:
    sys.exit(f"{sys.argv[7]}: {n} answers in {secs} s at {rate}/s, {r['errors']} errors: "
             "the rate is above what this arm serves, or answers failed")
user, sys_ = (a[1] - b[1]) / hz * 1e6 / n, (a[2] - b[2]) / hz * 1e6 / n
print(f"{r['throughput_rps']:.0f} {r['p50_ms'] * 1000:.0f} {r['p99_ms'] * 1000:.0f} {user + sys_:.1f} {user:.1f} {sys_:.1f} {(a[0] - b[0]) / n:.2f} {r['errors']} {n}")
PY
}

# A second of unique-key requests, unmeasured: the adaptive gateway's store goes
# selective (its keys are never asked again: `{seq}` and the lua script's are new per run).
warm() { # url
  if [ -n "$rate" ]; then
    TURNPIKE_LOG=warn taskset -c 0 "${TURNPIKE_KIT:-${bins[0]}}" bench run --url "$1?size=50&n={seq}" --rate "$rate" \
      --connections "$conns" --threads 1 --warmup 0s --duration 1s --json >/dev/null 2>"$work/kit.err" \
      || { echo "$1: warm-up failed: $(cat "$work/kit.err")" >&2; exit 1; }
  else
    taskset -c 0 wrk -t1 -c"$conns" -d1s -s bench/cache-unique.lua "$1" >/dev/null 2>&1
  fi
}

results="$work/results.txt"; : >"$results"
for r in $(seq "$rounds"); do
  for which in "${arms[@]}"; do
    for b in "${!bins[@]}"; do
      plain="http://127.0.0.1:${port[$b.plain]}/api/v1/x"; cached="http://127.0.0.1:${port[$b.cached]}/api/v1/x"
      nostore="http://127.0.0.1:${port[$b.nostore]}/api/v1/x"
      case $which in
        plain-50) line=$(run_one "$plain?size=50" "${pid[$b.plain]}");;
        hit-50) line=$(run_one "$cached?size=50" "${pid[$b.cached]}");;
        plain-10k) line=$(run_one "$plain?size=10240" "${pid[$b.plain]}");;
        hit-10k) line=$(run_one "$cached?size=10240" "${pid[$b.cached]}");;
        plain-unique) line=$(run_one "$plain" "${pid[$b.plain]}" bench/cache-unique.lua);;
        miss) line=$(run_one "$cached" "${pid[$b.cached]}" bench/cache-unique.lua);;
        nostore) line=$(run_one "$nostore" "${pid[$b.nostore]}" bench/cache-unique.lua);;
        plain-unique-10k) line=$(run_one "$plain" "${pid[$b.plain]}" bench/cache-unique.lua 10240);;
        miss-10k) line=$(run_one "$cached" "${pid[$b.cached]}" bench/cache-unique.lua 10240);;
        adaptive) adaptive="http://127.0.0.1:${port[$b.adaptive]}/api/v1/x"; warm "$adaptive"
          line=$(run_one "$adaptive" "${pid[$b.adaptive]}" bench/cache-unique.lua);;
        once) line=$(run_one "http://127.0.0.1:${port[$b.once]}/api/v1/x" "${pid[$b.once]}" bench/cache-unique.lua);;
        *) echo "unknown arm $which" >&2; exit 2;;
      esac
      echo "$b $which $line $r" >>"$results"
    done
  done
  echo "round $r done" >&2
done
# The cached gateways' memory after every round's misses, beside their store's bound (the
# store's weight charges what an entry holds: bench/cache-memory.sh measures the growth).
for b in "${!bins[@]}"; do
  rss_mib=$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/${pid[$b.cached]}/status")
  echo "${bins[$b]}: cached gateway VmRSS after the rounds: ${rss_mib} MiB (max_size $max_size)" >&2
done
RATE=$rate python3 - "$results" "$conns" "$duration" "$rounds" "${bins[@]}" <<'PY'
import os, sys, statistics as st
path, conns, dur, rounds, *bins = sys.argv[1:]
rows = {}
for line in open(path):
    b, name, rps, p50, p99, cpu, user, sys_, flt, non2xx, reqs, rnd = line.split()
    num = lambda v: None if v == '-' else float(v)
    rows.setdefault((int(b), name), []).append((float(rps), float(p50), float(p99), num(cpu), num(user), num(sys_), num(flt), int(non2xx), int(reqs), int(rnd)))
def med(i, key):
    vals = [r[i] for r in rows[key] if r[i] is not None]
    return st.median(vals) if vals else float('nan')
load = f"the bench kit's open loop at {os.environ['RATE']} requests/s" if os.environ.get("RATE") else "wrk's closed loop"
print(f"\nopen API, one gateway worker, {conns} connections, {load}, {dur}s x {rounds} rounds, medians")
for b, binary in enumerate(bins):
    print(f"\n{binary}\n")
    print("| arm | req/s | p50 | p99 | gateway CPU/req | user | system | minor faults/req | non-2xx |")
    print("|---|---|---|---|---|---|---|---|---|")
    names = [n for n in ("plain-50", "hit-50", "plain-10k", "hit-10k", "plain-unique", "miss", "adaptive", "nostore", "once", "plain-unique-10k", "miss-10k") if (b, n) in rows]
    for name in names:
        k = (b, name)
        print(f"| {name} | {med(0, k):,.0f} | {med(1, k):.0f} us | {med(2, k):.0f} us | {med(3, k):.1f} us | {med(4, k):.1f} us | {med(5, k):.1f} us | {med(6, k):.2f} | {sum(r[7] for r in rows[k])} |")
    for a, c, target in (("hit-50", "plain-50", ">= 1.5"), ("hit-10k", "plain-10k", ">= 1.5"), ("miss", "plain-unique", ">= 0.95"), ("adaptive", "plain-unique", ">= 0.95"), ("nostore", "plain-unique", ">= 0.95"), ("once", "plain-unique", ">= 0.95"), ("miss-10k", "plain-unique-10k", ">= 0.95")):
        if (b, a) in rows and (b, c) in rows:
            # Each round's own ratio: the arms of one round ran minutes apart at most, so
            # the VM's slow drifts cancel in it.
            paired = sorted(x[3] / y[3] for x in rows[(b, a)] for y in rows[(b, c)]
                            if x[9] == y[9] and x[3] and y[3])
            own = f", the rounds' own CPU ratios: median {st.median(paired):.3f}x ({paired[0]:.3f}-{paired[-1]:.3f})" if paired else ""
            # An open loop serves every arm at the same rate: only the CPU compares.
            tput = "" if os.environ.get("RATE") else f"throughput {med(0, (b, a)) / med(0, (b, c)):.3f} (target {target}), "
            print(f"\n{a}/{c}: {tput}CPU per request {med(3, (b, a)) / med(3, (b, c)):.3f}x{own}")
PY
