#!/usr/bin/env bash
# The Developer Portal's first-page budget (issue 18): builds the portals (ui/dist) unless
# built, starts `turnpike up` on free ports with a fresh data directory (its demo API is
# published, anonymous browsing is on by default), and runs bench/ui-load.mjs: the time
# from navigation to the catalogue showing its first API, with an empty cache, median of
# N runs, and the JavaScript it loaded (gzipped). Budget: under 1 s and under 500 KiB.
#
# Usage: bench/ui-load.sh [--runs 5]    (TURNPIKE_BIN=path skips the build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
. bench/lib.sh
[ -f ui/dist/index.html ] || (cd ui && npx vite build >/dev/null)
cp_port=$(free_port); gw_port=$(free_port)
TURNPIKE_ADMIN_PASSWORD=bench-ui-password TURNPIKE_UI_DIR="$PWD/ui/dist" TURNPIKE_LOG=warn \
  "$bin" up --data-dir "$work/data" --cp-port "$cp_port" --http-port "$gw_port" --https-port off \
  >"$work/up.log" 2>&1 &
pids+=($!)
wait_port "$cp_port"
for _ in $(seq 100); do grep -q "Turnpike is up." "$work/up.log" && break; sleep 0.1; done
TP_BASE="http://127.0.0.1:$cp_port" node bench/ui-load.mjs "$runs"
