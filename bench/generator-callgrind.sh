#!/usr/bin/env bash
# Issue 32 item 4: user-space instructions per request of the load generator itself
# (valgrind callgrind), wrk against the kit, the load-independent measure of what each does
# per request beyond the socket calls (a busy machine changes wall-clock numbers, not
# these). The echo (`turnpike echo --threads 1`, not under valgrind) on one core; each
# generator under callgrind on the other, closed loop, 100 users, keep-alive GETs: wrk,
# `turnpike bench run` (the epoll loop), with `--tokio-h1` (the kit's client on tokio) and
# with `--hyper-h1` (hyper's client, as before issue 32). Each count is (instructions of a
# D2-second run - of a D1-second run) / (requests of the one - of the other), so start-up
# cancels out.
#
# Usage: TURNPIKE_BIN=... bench/generator-callgrind.sh [--d1 3] [--d2 8] [--users 100]
#          [--keep DIR] [--gens "wrk kit kit-tokio kit-hyper"]
#   --keep: keep each callgrind.out for callgrind_annotate; --gens: which generators.
# Needs: valgrind, wrk, taskset, python3 (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
d1=3; d2=8; users=100; keep=; gens="wrk kit kit-tokio kit-hyper"
while [ $# -gt 0 ]; do
  case "$1" in
    --d1) d1=$2; shift 2;;
    --d2) d2=$2; shift 2;;
    --users) users=$2; shift 2;;
    --keep) keep=$2; mkdir -p "$keep"; shift 2;;
    --gens) gens=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
source bench/lib.sh
echo_apart

# One generator for $2 seconds under callgrind -> "instructions requests".
measure() {
  local name=$1 d=$2 out=$work/cg.$1.$2 requests
  local grind=(taskset -c "$gen_cpu" valgrind --tool=callgrind --callgrind-out-file="$out")
  case "$name" in
    wrk) "${grind[@]}" wrk -t1 -c"$users" -d"${d}s" "$url" >"$work/out" 2>/dev/null
         requests=$(awk '/requests in/ {print $1}' "$work/out");;
    *) local flag=(); [ "$name" = kit ] || flag=(--"${name#kit-}-h1")
       "${grind[@]}" "$bin" bench run --url "$url" --users "$users" --threads 1 --warmup 0s \
         --duration "${d}s" "${flag[@]}" >"$work/out" 2>/dev/null
       requests=$(awk '/^samples/ {print $2}' "$work/out");;
  esac
  [ -n "$keep" ] && cp "$out" "$keep/"
  echo "$(awk '/^summary:/ {print $2}' "$out") $requests"
}

echo "user-space instructions per request (callgrind), ${d2}s - ${d1}s runs, $users users:"
for g in $gens; do
  read -r i1 r1 <<<"$(measure "$g" "$d1")"
  read -r i2 r2 <<<"$(measure "$g" "$d2")"
  if [ "${r2:-0}" -gt "${r1:-0}" ] 2>/dev/null; then
    awk -v g="$g" -v i1="$i1" -v i2="$i2" -v r1="$r1" -v r2="$r2" \
      'BEGIN { printf "  %-10s %7.0f  (%d and %d requests)\n", g, (i2 - i1) / (r2 - r1), r1, r2 }'
  else
    echo "  $g: no more requests in the longer run (did it start? an older binary lacks --tokio-h1)"
  fi
done
