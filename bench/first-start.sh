#!/usr/bin/env bash
# Times the README's first command from a fresh clone (issue 28 item 1): clones REPO (default:
# this checkout) into a new directory with an empty cargo target, runs
# scripts/quickstart.sh on free ports and polls its output once a second until the first
# printed `curl` line answers; prints the build time and the time to that answer.
# Usage: bench/first-start.sh [REPO] [WORKDIR]   (WORKDIR default: a new mktemp -d)
set -euo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
work="${2:-$(mktemp -d)}"
git clone -q "$repo" "$work/turnpike"
cd "$work/turnpike"
log="$work/quickstart.log"
start=$(date +%s.%N)
CARGO_TARGET_DIR="$work/turnpike/target" setsid scripts/quickstart.sh \
  --cp-port 0 --http-port 0 --https-port off >"$log" 2>&1 &
qpid=$!
trap 'kill -- -"$qpid" 2>/dev/null || true' EXIT
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[1]) - float(sys.argv[2]):.1f}')" "$(date +%s.%N)" "$start"; }
built=""
while sleep 1; do
  if [ -z "$built" ] && grep -q "Finished .quickstart" "$log"; then
    built=1; echo "binary built at +$(elapsed) s ($(grep -o 'Finished .*' "$log"))"
  fi
  line=$(grep -m1 -E '^\s*curl ' "$log" || true)
  if [ -n "$line" ] && out=$(sh -c "$line" 2>&1); then
    echo "first curl answered at +$(elapsed) s: $line -> $out"
    exit 0
  fi
  kill -0 "$qpid" 2>/dev/null || { echo "quickstart exited; see $log" >&2; exit 1; }
done
