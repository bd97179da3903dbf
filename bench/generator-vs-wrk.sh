#!/usr/bin/env bash
# Issue 32 item 4: the kit's load generator against wrk from the same core. `turnpike echo`
# (one thread) on one core, the generator on another; in alternating rounds (the order
# rotates each round) wrk, `turnpike bench run` (its epoll loop), `turnpike bench run
# --tokio-h1` (the kit's client on the tokio runtime, the loop before session 17) and
# `turnpike bench run --hyper-h1` (the generator's HTTP/1.1 client before issue 32: hyper's)
# each drive it closed loop with the same keep-alive GETs. Per run: req/s and the generator's CPU per request (its utime +
# stime from rusage / requests). Prints every run, then medians and the kit/wrk ratios.
# Then the open loop: `--rate` on the echo directly, its latency next to the closed loop's
# at one user, and the send lag (write time - due time) distribution.
#
# Usage: TURNPIKE_BIN=... bench/generator-vs-wrk.sh [--duration 5] [--users 100] [--rounds 5]
#          [--rate 1000]
# Needs: wrk, taskset, python3 (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=5; users=100; rounds=5; rate=1000
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --users) users=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --rate) rate=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
source bench/lib.sh
echo_apart

# Runs a generator as a child and prints its stdout, then "CPU <user+sys seconds>".
cpu_of() { python3 -c 'import resource,subprocess,sys
out = subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(out); print("CPU", r.ru_utime + r.ru_stime)' "$@"; }

run_one() { # generator -> "name rps cpu_seconds"
  local out rps
  case "$1" in
    wrk) out=$(cpu_of taskset -c "$gen_cpu" wrk -t1 -c"$users" -d"${duration}s" "$url")
         rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out");;
    kit) out=$(cpu_of taskset -c "$gen_cpu" "$bin" bench run --url "$url" --users "$users" --threads 1 \
           --warmup 0s --duration "${duration}s")
         rps=$(awk '/^throughput/ {print $2}' <<<"$out");;
    kit-tokio|kit-hyper) out=$(cpu_of taskset -c "$gen_cpu" "$bin" bench run --url "$url" --users "$users" \
           --threads 1 --warmup 0s --duration "${duration}s" --"${1#kit-}-h1")
         rps=$(awk '/^throughput/ {print $2}' <<<"$out");;
  esac
  echo "$1 $rps $(awk '/^CPU/ {print $2}' <<<"$out")"
}

gens=(wrk kit kit-tokio kit-hyper)
: >"$work/runs"
for r in $(seq "$rounds"); do
  for i in 0 1 2 3; do
    g=${gens[$(((i + r) % 4))]}
    line=$(run_one "$g")
    echo "round $r: $line" | awk -v d="$duration" '{printf "%s %-10s %9.0f req/s  %5.2f us CPU/request\n", $1" "$2, $3, $4, $5 * 1e6 / ($4 * d)}'
    echo "$line" >>"$work/runs"
  done
done
python3 - "$work/runs" "$duration" <<'PY'
import statistics, sys
runs, d = {}, float(sys.argv[2])
for line in open(sys.argv[1]):
    g, rps, cpu = line.split()
    runs.setdefault(g, []).append((float(rps), float(cpu) * 1e6 / (float(rps) * d)))
med = {g: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v)) for g, v in runs.items()}
print(f"medians of {len(runs['wrk'])} alternating runs each:")
for g in ("wrk", "kit", "kit-tokio", "kit-hyper"):
    rps, cpu = med[g]
    print(f"  {g:10} {rps:9.0f} req/s  {cpu:5.2f} us CPU/request")
w = med["wrk"]
for g in ("kit", "kit-tokio", "kit-hyper"):
    print(f"  {g}/wrk: throughput {med[g][0] / w[0]:.2f}x, CPU per request {med[g][1] / w[1]:.2f}x")
PY

echo "open loop: $rate req/s on 10 connections vs closed loop at 1 user, echo direct"
taskset -c "$gen_cpu" "$bin" bench run --url "$url" --users 1 --threads 1 --warmup 1s --duration "${duration}s" \
  | awk '/^percentiles|^latency/ {print "closed 1 user  " $0}'
taskset -c "$gen_cpu" "$bin" bench run --url "$url" --rate "$rate" --connections 10 --threads 1 --warmup 1s \
  --duration "${duration}s" | awk '/^throughput|^percentiles|^latency|^send lag/ {print "open " '"$rate"' "/s  " $0}'
