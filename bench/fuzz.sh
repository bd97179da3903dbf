#!/usr/bin/env bash
# The long fuzz run (the test command runs each target briefly): the same stable-Rust
# targets, with many more cases and a fresh seed per round, until the time is up.
#   - config parser and router: crates/turnpike-config/tests/fuzz.rs (proptest; each
#     round draws new cases),
#   - the in-house HTTP/1.1 client's response parser, over sockets:
#     crates/turnpike-gateway/tests/fuzz_upstream.rs,
#   - the JWT path: crates/turnpike-auth/tests/fuzz_jwt.rs,
#   - the SOAP pass-through's one-pass envelope scan against roxmltree:
#     crates/turnpike-soap/tests/scan_vs_dom.rs,
#   - the one XML reader (check, tree and DOM agree; caps monotone; duplicate attributes
#     found exactly): crates/turnpike-xml/tests/fuzz.rs,
#   - the analytics histogram text read back from the store (`Hist::decode`):
#     crates/turnpike-analytics/src/hist.rs, and the event writer against serde_json:
#     crates/turnpike-analytics/tests/json_line.rs,
#   - the SOAP-to-REST JSON writer against serde_json: crates/turnpike-soap/tests/json_out.rs,
#   - the capped zip reader of archive imports (WSDL, OpenAPI): crates/turnpike-soap/tests/fuzz_zip.rs,
#   - the W3C traceparent reader against the grammar: crates/turnpike-policy/tests/traceparent_fuzz.rs,
#   - the GraphQL-over-WebSocket message reader (`ws::decode`):
#     crates/turnpike-gateway/tests/fuzz_ws_message.rs,
#   - the GraphQL fast parser against apollo-compiler's parser (same AST and spans, never
#     accepts what apollo-compiler rejects): crates/turnpike-graphql/src/fastparse_fuzz.rs,
#   - the MCP message readers (the `tools/call` scanner held to serde_json on random and
#     damaged messages, the envelope, arguments, session ids, proxied answers never
#     panicking): crates/turnpike-mcp/src/fuzz.rs and scan.rs's tests,
#   - raw-socket hostile HTTP/1.1 and HTTP/2: crates/turnpike-gateway/tests/hostile.rs
#     and timeouts.rs (slow heads and bodies, hyper's own refusals, chunked over limit).
# A failure prints the seed (TURNPIKE_FUZZ_SEED=... replays it) and stops the run.
#
# Usage: bench/fuzz.sh [--minutes 10]
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=10
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

# The ci-bench profile (optimised, no fat LTO): what CI builds the binary with.
prof=(--profile ci-bench)
cargo test "${prof[@]}" -p turnpike-config -p turnpike-gateway -p turnpike-auth -p turnpike-soap -p turnpike-xml -p turnpike-analytics -p turnpike-policy -p turnpike-graphql -p turnpike-mcp --no-run >/dev/null 2>&1
end=$(( $(date +%s) + minutes * 60 ))
rounds=0
run() { # log-name command...
  local log=$1; shift
  if ! "$@" >"$log" 2>&1; then
    grep -E "TURNPIKE_FUZZ_SEED|panicked|minimal failing" "$log" >&2 || tail -20 "$log" >&2
    echo "fuzz: failure in round $rounds ($*)" >&2
    exit 1
  fi
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
while [ "$(date +%s)" -lt "$end" ]; do
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_UPSTREAM_CASES:-3000}" cargo test "${prof[@]}" -q \
    -p turnpike-gateway --test fuzz_upstream --test hostile --test timeouts -- --nocapture
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_JWT_CASES:-200000}" cargo test "${prof[@]}" -q \
    -p turnpike-auth --test fuzz_jwt -- --nocapture
  run "$log" cargo test "${prof[@]}" -q -p turnpike-config --test fuzz
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_SCAN_CASES:-100000}" cargo test "${prof[@]}" -q \
    -p turnpike-soap --test scan_vs_dom
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_XML_CASES:-100000}" cargo test "${prof[@]}" -q \
    -p turnpike-xml --test fuzz
  run "$log" env PROPTEST_CASES="${FUZZ_HIST_CASES:-100000}" cargo test "${prof[@]}" -q \
    -p turnpike-analytics --lib hist
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_JSON_CASES:-50000}" cargo test "${prof[@]}" -q \
    -p turnpike-analytics --test json_line
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_JSON_CASES:-50000}" cargo test "${prof[@]}" -q \
    -p turnpike-soap --test json_out
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_ZIP_CASES:-100000}" cargo test "${prof[@]}" -q \
    -p turnpike-soap --test fuzz_zip
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_TRACE_CASES:-200000}" cargo test "${prof[@]}" -q \
    -p turnpike-policy --test traceparent_fuzz
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_WS_CASES:-100000}" cargo test "${prof[@]}" -q \
    -p turnpike-gateway --test fuzz_ws_message
  run "$log" env TURNPIKE_FUZZ_CASES="${FUZZ_GRAPHQL_CASES:-20000}" cargo test "${prof[@]}" -q \
    -p turnpike-graphql --lib fastparse
  run "$log" env PROPTEST_CASES="${FUZZ_MCP_CASES:-20000}" cargo test "${prof[@]}" -q \
    -p turnpike-mcp --lib -- fuzz:: scan::
  rounds=$((rounds + 1))
done
echo "fuzz: $rounds rounds in $minutes min, no failure"
