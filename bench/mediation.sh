#!/usr/bin/env bash
# Mediation cost (issue 13): the seed-3.0 layout's two secured APIs side by side, in one run:
#   secured-passthrough  an API key + subscription, the body proxied as is;
#   transformation       the same secured API, the request body rewritten by a jq program
#                        (`turnpike bench matrix`'s TRANSFORMATION_JQ, the seeds' Mediation API).
# Each round is one `turnpike bench matrix` run of both scenarios (the order alternates
# between rounds so drift on a shared box spreads over both); prints every round's
# transformation / secured-passthrough ratio per cell and their medians
# (targets: >= 0.8x at 50 B, >= 0.6x at 10 KiB).
#
# Usage: bench/mediation.sh [--users 300] [--duration 20] [--rounds 3] [--sizes "50 10240"]
# Builds the release binary unless TURNPIKE_BIN names one.
set -euo pipefail
cd "$(dirname "$0")/.."

users=300; duration=20; rounds=3; sizes="50 10240"
while [ $# -gt 0 ]; do
  case "$1" in
    --users) users=$2; shift 2;;
    --duration) duration=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --sizes) sizes=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

. bench/lib.sh

size_list=$(echo "$sizes" | tr ' ' ',')
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="secured-passthrough, transformation"; else order="transformation, secured-passthrough"; fi
  cat >"$work/plan.yaml" <<YAML
name: mediation
description: issue 13, round $r
scenarios: [$order]
users: [$users]
sizes: [$size_list]
delays_ms: [0]
warmup: 5s
duration: ${duration}s
YAML
  "$bin" --log warn bench matrix --plan "$work/plan.yaml" --out "$work/round$r" --turnpike "$bin" \
    >"$work/round$r.log" 2>&1 || { cat "$work/round$r.log" >&2; exit 1; }
  grep "transformation / secured-passthrough" "$work/round$r.log" | sed "s/^/round $r: /"
done | tee "$work/ratios.txt"

python3 - "$work/ratios.txt" <<'PY'
import re, sys, statistics as st
cells = {}
for line in open(sys.argv[1]):
    m = re.search(r"users=(\d+) size=(\d+) .*: ([\d.]+) / ([\d.]+) req/s", line)
    if m:
        cells.setdefault((int(m[1]), int(m[2])), []).append((float(m[3]), float(m[4])))
print("\n| users | size | transformation req/s | secured-passthrough req/s | ratio (median of rounds) |")
print("|---|---|---|---|---|")
for (u, s), v in sorted(cells.items()):
    ratios = [t / p for t, p in v]
    print(f"| {u} | {s} B | {st.median(t for t, _ in v):,.0f} | {st.median(p for _, p in v):,.0f} | {st.median(ratios):.2f}x ({', '.join(f'{x:.2f}' for x in ratios)}) |")
if not cells:
    sys.exit("no transformation ratio found in the matrix output")
PY
