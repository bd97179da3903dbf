#!/usr/bin/env bash
# Schema-driven fuzzing of the control plane's REST APIs (issue 16): schemathesis reads the
# OpenAPI document the control plane serves (/api/am/openapi.json) and sends generated
# requests to every operation, as an admin, checking: no 5xx, every status documented,
# content types and response bodies as documented. Prints schemathesis' summary; exits
# non-zero on any failure.
#
# Usage: bench/api-fuzz.sh [--examples 20] [--seed N]
# Installs schemathesis into target/api-fuzz-venv (PyPI) on first use. TURNPIKE_BIN=path
# skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."

examples=20; seed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --examples) examples=$2; shift 2;;
    --seed) seed=(--seed "$2"); shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

venv=target/api-fuzz-venv
if [ ! -x "$venv/bin/schemathesis" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q schemathesis
fi
if [ -n "${TURNPIKE_BIN:-}" ]; then bin=$TURNPIKE_BIN; else
  cargo build -p turnpike >/dev/null; bin=target/debug/turnpike; fi

work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TURNPIKE_LOG=warn "$bin" control-plane --database "sqlite://$work/cp.db" --port "$port" \
  --admin-password fuzz-admin-1 --gateway-token fuzz-gw >"$work/cp.log" 2>&1 &
pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done

status=0
"$venv/bin/schemathesis" run "http://127.0.0.1:$port/api/am/openapi.json" \
  --url "http://127.0.0.1:$port" \
  -H "Authorization: Basic $(printf admin:fuzz-admin-1 | base64)" \
  --max-examples "$examples" --workers 1 "${seed[@]}" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --phases examples,coverage,fuzzing || status=$?
if grep -q panicked "$work/cp.log"; then
  echo "the control plane panicked:" >&2; grep -A2 panicked "$work/cp.log" | head -20 >&2; status=1
fi
exit $status
