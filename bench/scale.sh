#!/usr/bin/env bash
# Scale run (issue 3): 10,000 APIs and 1,000,000 subscriptions in a control plane (SQLite,
# one bulk transaction), one `turnpike gateway` process following it. Reports the full
# snapshot's size and build time, a follower's parse + compile time for it, the delta of a
# one-API change, subscription change -> follower swapped over --publishes changes (p50,
# p99: one subscription blocked / unblocked, the follower carrying its table over by
# changed bucket), publish -> first 200 at the gateway (p50, p99) while the bench kit drives
# steady open-loop load at one API, request latency with and without swaps, and the
# gateway's RSS before and after the publishes. See crates/turnpike-admin/examples/scale.rs.
#
# Usage: [TURNPIKE_BIN=...] bench/scale.sh [--apis 10000] [--subs 1000000] [--apps 10000]
#                                          [--seconds 20] [--rate 2000] [--publishes 20]
# The gateway is pinned to core 1 (TURNPIKE_WORKERS=1) when taskset exists; the example
# (control plane, echo, load generator) runs on core 0.
#
# TURNPIKE_PROFILE=ci-bench builds (or reuses) the test command's optimised profile instead
# of the fat-LTO release one (same code, a few % slower): what a quick check uses.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${TURNPIKE_PROFILE:-release}
dir=$profile; [ "$profile" = dev ] && dir=debug  # cargo's dev profile builds into debug/
if [ -z "${TURNPIKE_BIN:-}" ]; then
  cargo build --profile "$profile" -p turnpike --bin turnpike
  TURNPIKE_BIN=target/$dir/turnpike
fi
cargo build --profile "$profile" -p turnpike-admin --example scale
export TURNPIKE_BIN
pin=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  wrapper=$(mktemp)
  printf '#!/bin/sh\nexec taskset -c 1 env TURNPIKE_WORKERS=1 %q "$@"\n' "$(realpath "$TURNPIKE_BIN")" >"$wrapper"
  chmod +x "$wrapper"
  TURNPIKE_BIN=$wrapper
  pin=(taskset -c 0)
fi
"${pin[@]}" "target/$dir/examples/scale" "$@"
