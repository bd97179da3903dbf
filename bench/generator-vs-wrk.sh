#!/usr/bin/env bash
# Issue 32 item 4: the kit's load generator against wrk from the same core. `turnpike echo`
# (one thread) on one core, the generator on another; in alternating rounds (the order
# rotates each round) wrk, `turnpike bench run` (its epoll loop), the same with
# `--spin-us 100` (kit-spin: the loop polls 100 us without blocking after its last event
# before it sleeps, so its core does not halt between responses), `turnpike bench run
# --tokio-h1` (the kit's client on the tokio runtime, the loop before session 17) and, when
# asked (`--gens`), `--hyper-h1` (kit-hyper: the HTTP/1.1 client before issue 32, hyper's)
# each drive it closed loop with the same keep-alive GETs.
#
# Two ways each round, because they answer different questions:
# - uncapped: the generator has its whole core. The echo then runs near saturation on its
#   own core too, so the throughput says as much about how the generator's arrival pattern
#   suits the echo (how many responses each of the echo's wake-ups finds) as about the
#   generator: the echo may be the bottleneck.
# - capped: the generator (wrk and the kit alike) limited to CAP % of its core by a cgroup
#   CPU quota (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` where the cpu controller is
#   still on v1; a short period, 20 ms of 40 ms at 50 %, so a throttled generator never
#   stalls for long). The echo keeps headroom (its CPU use is printed), so the generator is
#   the bottleneck and throughput = requests per second of generator CPU: the efficiency
#   comparison the issue's ">= 1.0x wrk's throughput" means. Skipped, with the reason
#   printed, where no writable cgroup cpu controller exists.
# Per run: req/s, the generator's CPU per request (utime + stime from rusage / requests)
# and the echo's CPU use (% of its core, /proc ticks). Then per generator and mode: the
# median of the rounds, the spread (min-max) and the ratios to wrk. Then the open loop:
# `--rate` on the echo directly, its latency next to the closed loop's at one user, and the
# send lag (write time - due time) distribution.
#
# Usage: TURNPIKE_BIN=... bench/generator-vs-wrk.sh [--duration 5] [--users 100] [--rounds 5]
#          [--rate 1000] [--cap 50] [--gens "wrk kit kit-spin kit-tokio"] (kit-hyper: also)
#   --cap 0 skips the capped runs.
# Needs: wrk, taskset, python3 (scripts/install-deps.sh); root (or a delegated cgroup) for the cap.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=5; users=100; rounds=5; rate=1000; cap=50; gens="wrk kit kit-spin kit-tokio"
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --users) users=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --rate) rate=$2; shift 2;;
    --cap) cap=$2; shift 2;;
    --gens) gens=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
source bench/lib.sh
echo_apart
echo_pid=${pids[-1]}
read -r -a gens <<<"$gens"

# A cgroup with a CPU quota of $cap % of one core, or "" (and why) when none can be made.
cgroup=""
make_cgroup() {
  local period=40000 quota=$((40000 * cap / 100)) mnt dir
  [ "$cap" -gt 0 ] && [ "$cap" -lt 100 ] || { cap_note="--cap $cap: capped runs skipped"; return; }
  mnt=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
  if [ -n "$mnt" ] && grep -qw cpu "$mnt/cgroup.controllers" 2>/dev/null; then
    dir="$mnt/turnpike-gvw-$$"
    if mkdir "$dir" 2>/dev/null; then
      grep -qw cpu "$mnt/cgroup.subtree_control" || echo +cpu >"$mnt/cgroup.subtree_control" 2>/dev/null || true
      if echo "$quota $period" >"$dir/cpu.max" 2>/dev/null; then cgroup=$dir; cap_note="cgroup v2 cpu.max \"$quota $period\""; return; fi
      rmdir "$dir"
    fi
  fi
  mnt=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
  if [ -n "$mnt" ] && mkdir "$mnt/turnpike-gvw-$$" 2>/dev/null; then
    dir="$mnt/turnpike-gvw-$$"
    if echo "$period" >"$dir/cpu.cfs_period_us" && echo "$quota" >"$dir/cpu.cfs_quota_us"; then
      cgroup=$dir; cap_note="cgroup v1 cpu.cfs_quota_us $quota / cpu.cfs_period_us $period"; return
    fi
    rmdir "$dir"
  fi
  cap_note="no writable cgroup cpu controller (needs root or a delegated cgroup): capped runs skipped"
}
make_cgroup
if [ -n "$cgroup" ]; then
  # Runs after lib.sh's cleanup has killed and waited for the children: the group is empty.
  trap 'cleanup; rmdir "$cgroup" 2>/dev/null || true' EXIT
fi
echo "generator cap: $cap % of core $gen_cpu ($cap_note); echo on core $echo_cpu, generator on core $gen_cpu, $users users, ${duration}s runs"

# Runs a generator as a child (in $2's cgroup unless "") and prints its stdout, then
# "CPU <user+sys seconds>".
cpu_of() { python3 -c 'import os,resource,subprocess,sys
cg = sys.argv[1]
def enter():
    if cg:
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
out = subprocess.run(sys.argv[2:], capture_output=True, text=True, preexec_fn=enter).stdout
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(out); print("CPU", r.ru_utime + r.ru_stime)' "$@"; }

run_one() { # generator cgroup -> "name rps cpu_seconds"
  local out rps kit=(taskset -c "$gen_cpu" "$bin" bench run --url "$url" --users "$users" --threads 1
    --warmup 0s --duration "${duration}s")
  case "$1" in
    wrk) out=$(cpu_of "$2" taskset -c "$gen_cpu" wrk -t1 -c"$users" -d"${duration}s" "$url")
         rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out");;
    kit) out=$(cpu_of "$2" "${kit[@]}")
         rps=$(awk '/^throughput/ {print $2}' <<<"$out");;
    kit-spin) out=$(cpu_of "$2" "${kit[@]}" --spin-us 100)
         rps=$(awk '/^throughput/ {print $2}' <<<"$out");;
    kit-tokio|kit-hyper) out=$(cpu_of "$2" "${kit[@]}" --"${1#kit-}-h1")
         rps=$(awk '/^throughput/ {print $2}' <<<"$out");;
    *) echo "unknown generator $1" >&2; exit 2;;
  esac
  echo "$1 $rps $(awk '/^CPU/ {print $2}' <<<"$out")"
}

modes=(uncapped); [ -n "$cgroup" ] && modes+=(capped)
hz=$(getconf CLK_TCK)
: >"$work/runs"
n=${#gens[@]}
for r in $(seq "$rounds"); do
  for mode in "${modes[@]}"; do
    cg=""; [ "$mode" = capped ] && cg=$cgroup
    for i in $(seq 0 $((n - 1))); do
      g=${gens[$(((i + r) % n))]}
      t0=$(cpu_ticks "$echo_pid")
      line=$(run_one "$g" "$cg")
      echo_pct=$(( ($(cpu_ticks "$echo_pid") - t0) * 100 / (hz * duration) ))
      echo "$mode $line $echo_pct" >>"$work/runs"
      awk -v d="$duration" -v r="$r" '{printf "round %s %-8s %-10s %9.0f req/s  %5.2f us CPU/request  echo %3d %% of its core\n",
        r, $1, $2, $3, $4 * 1e6 / ($3 * d), $5}' <<<"$mode $line $echo_pct"
    done
  done
done
python3 - "$work/runs" "$duration" "$cap" <<'PY'
import statistics, sys
runs, d, cap = {}, float(sys.argv[2]), sys.argv[3]
for line in open(sys.argv[1]):
    mode, g, rps, cpu, echo = line.split()
    runs.setdefault((mode, g), []).append((float(rps), float(cpu) * 1e6 / (float(rps) * d), float(echo)))
gens = list(dict.fromkeys(g for _, g in runs))
for mode in ("uncapped", "capped"):
    if (mode, "wrk") not in runs:
        continue
    what = "whole core" if mode == "uncapped" else f"{cap} % of its core: throughput = generator efficiency"
    print(f"{mode} ({what}), medians of {len(runs[(mode, 'wrk')])} alternating runs [min-max]:")
    med = {}
    for g in gens:
        v = runs[(mode, g)]
        col = lambda i: sorted(x[i] for x in v)
        med[g] = tuple(statistics.median(col(i)) for i in range(3))
        rps, cpu, echo = col(0), col(1), col(2)
        print(f"  {g:10} {med[g][0]:9.0f} req/s [{rps[0]:.0f}-{rps[-1]:.0f}]  {med[g][1]:5.2f} us CPU/request "
              f"[{cpu[0]:.2f}-{cpu[-1]:.2f}]  echo {med[g][2]:.0f} % [{echo[0]:.0f}-{echo[-1]:.0f}]")
    w = med["wrk"]
    for g in gens:
        if g != "wrk":
            print(f"  {mode} {g}/wrk: throughput {med[g][0] / w[0]:.2f}x, CPU per request {med[g][1] / w[1]:.2f}x")
PY

echo "open loop: $rate req/s on 10 connections vs closed loop at 1 user, echo direct"
taskset -c "$gen_cpu" "$bin" bench run --url "$url" --users 1 --threads 1 --warmup 1s --duration "${duration}s" \
  | awk '/^percentiles|^latency/ {print "closed 1 user  " $0}'
taskset -c "$gen_cpu" "$bin" bench run --url "$url" --rate "$rate" --connections 10 --threads 1 --warmup 1s \
  --duration "${duration}s" | awk '/^throughput|^percentiles|^latency|^send lag/ {print "open " '"$rate"' "/s  " $0}'
