#!/usr/bin/env bash
# The REST contract (issue 29): starts `turnpike up` on free ports, fetches the OpenAPI
# document its control plane serves, and checks what a client author would do with it:
#   - spectral lint (spectral:oas) and redocly lint (recommended): 0 errors;
#   - openapi-generator's typescript-fetch client compiles (tsc), its python client imports;
#   - the UI's types (ui/src/api/schema.d.ts) regenerated from it are what is committed.
# Tools: tools/openapi (npm ci), the openapi-generator-cli jar from Maven and java
# (scripts/install-test-deps.sh installs them). Usage: scripts/openapi-check.sh [BIN]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-${TURNPIKE_BIN:-$root/target/debug/turnpike}}"
jar="${OPENAPI_GENERATOR_JAR:-$HOME/.m2/repository/org/openapitools/openapi-generator-cli/7.17.0/openapi-generator-cli-7.17.0.jar}"
tools="$root/tools/openapi/node_modules/.bin"
work="$(mktemp -d)"
cp_pid=""
cleanup() {
  [ -n "$cp_pid" ] && kill "$cp_pid" 2>/dev/null && wait "$cp_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cp_port="$(free_port)"; gw_port="$(free_port)"

TURNPIKE_ADMIN_PASSWORD=openapi-check-password TURNPIKE_LOG=warn \
  "$bin" up --data-dir "$work/data" --cp-port "$cp_port" --http-port "$gw_port" --https-port off \
  >"$work/up.log" 2>&1 &
cp_pid=$!
for _ in $(seq 1 120); do
  grep -q "Turnpike is up." "$work/up.log" && break
  kill -0 "$cp_pid" 2>/dev/null || { cat "$work/up.log" >&2; exit 1; }
  sleep 0.5
done
doc="$work/openapi.json"
curl -fsS "http://127.0.0.1:$cp_port/api/am/openapi.json" -o "$doc"

echo "-- spectral lint (spectral:oas)"
"$tools/spectral" lint --ruleset "$root/tools/openapi/.spectral.yaml" --fail-severity error "$doc"
echo "-- redocly lint"
"$tools/redocly" lint --config "$root/tools/openapi/redocly.yaml" --format=summary "$doc"

echo "-- typescript-fetch client: generate, compile"
java -jar "$jar" generate -i "$doc" -g typescript-fetch -o "$work/ts" \
  --additional-properties=npmName=turnpike-client,supportsES6=true >"$work/gen-ts.log" 2>&1 \
  || { cat "$work/gen-ts.log" >&2; exit 1; }
"$root/ui/node_modules/.bin/tsc" --noEmit -p "$work/ts"

echo "-- python client: generate, import"
java -jar "$jar" generate -i "$doc" -g python -o "$work/py" \
  --additional-properties=packageName=turnpike_client >"$work/gen-py.log" 2>&1 \
  || { cat "$work/gen-py.log" >&2; exit 1; }
(cd "$work/py" && python3 -c 'import turnpike_client; from turnpike_client.api.publisher_api import PublisherApi; print("imported", turnpike_client.__name__)')

echo "-- ui/src/api/schema.d.ts is fresh"
(cd "$root/ui" && TURNPIKE_OPENAPI="$doc" node scripts/gen-api.mjs >/dev/null)
git -C "$root" --no-pager diff --stat --exit-code -- ui/src/api/schema.d.ts \
  || { echo "ui/src/api/schema.d.ts is stale: run npm run gen:api against a running control plane and commit it" >&2; exit 1; }
echo "openapi-check: ok"
