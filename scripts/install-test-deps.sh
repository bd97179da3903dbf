#!/usr/bin/env bash
# The test command's install step (scripts/test.sh): what building and running need
# (install-deps.sh), then the test and benchmark tools, which the quickstart does without.
# Idempotent: skips apt when every package is already there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/install-deps.sh"
# shellcheck source=install-deps.sh
INSTALL_DEPS_LIB_ONLY=1 source "$here/install-deps.sh"

test_packages=(
  nginx wrk                    # bench/: the reference reverse proxy and load generator
  redis-server                 # throttling tests (cluster counters)
  postgresql                   # store tests against a real PostgreSQL
  haproxy                      # bench/drill.sh: gateways behind a balancer under faults
  python3 python3-cryptography # bench/security.sh mints ES256 tokens outside Turnpike
  python3-zeep                 # a real SOAP client loads a multi-file ?wsdl (turnpike-gateway tests/soap_wsdl_files.rs)
  python3-authlib python3-requests # oauth_authcode_e2e: an OAuth2 client of its own (PKCE)
  util-linux procps
  jq                           # turnpike-mediation's differential test against the jq binary
  chromium                     # the web portals' browser tests (Playwright drives it)
  systemd                      # systemd-analyze verify of packaging/systemd units
)
apt_install "${test_packages[@]}"

# Debian starts these services on install; the tests start their own on free ports.
for svc in nginx redis-server postgresql haproxy; do
  (command -v systemctl >/dev/null && systemctl stop "$svc" 2>/dev/null) || service "$svc" stop >/dev/null 2>&1 || true
done

# The REST contract's checks (scripts/openapi-check.sh) and the DevPortal's SDK downloads
# (crates/turnpike-admin/tests/sdk.rs): spectral and redocly (tools/openapi, pinned), the
# openapi-generator-cli jar and the Jackson jars its Java clients compile against, from
# Maven Central into the Maven local repository; java (17 is on the machine) and Maven;
# pydantic and friends for the generated Python client.
command -v java >/dev/null || apt_install default-jdk-headless
command -v javac >/dev/null || apt_install default-jdk-headless
command -v mvn >/dev/null || apt_install maven
(cd "$here/../tools/openapi" && npm ci --no-audit --no-fund --silent)
# The official TypeScript MCP SDK's client (crates/turnpike/tests/mcp_e2e.rs), pinned.
(cd "$here/../tools/mcp-node" && npm ci --no-audit --no-fund --silent)
# The official OpenAI Node SDK (crates/turnpike/tests/ai_node_e2e.rs), pinned.
(cd "$here/../tools/openai-node" && npm ci --no-audit --no-fund --silent)
for artifact in \
  org.openapitools:openapi-generator-cli:7.17.0 \
  com.fasterxml.jackson.core:jackson-databind:2.19.2 \
  com.fasterxml.jackson.datatype:jackson-datatype-jsr310:2.19.2 \
  org.openapitools:jackson-databind-nullable:0.2.8 \
  com.google.code.findbugs:jsr305:3.0.2 \
  jakarta.annotation:jakarta.annotation-api:1.3.5; do
  group="${artifact%%:*}"; rest="${artifact#*:}"; name="${rest%%:*}"; version="${rest#*:}"
  [ -f "$HOME/.m2/repository/${group//.//}/$name/$version/$name-$version.jar" ] \
    || mvn -B -q dependency:get -Dartifact="$artifact" >/dev/null
done
python3 -c 'import pydantic, dateutil, urllib3, typing_extensions' 2>/dev/null \
  || python3 -m pip install --quiet 'pydantic>=2' python-dateutil urllib3 typing-extensions

# The official Python SDKs the AI and MCP gateway tests use (pinned in tools/python).
python3 -m pip install --quiet --disable-pip-version-check -r "$here/../tools/python/requirements.txt"

rustup component add rustfmt clippy >/dev/null 2>&1 || true
# Every crate of Cargo.lock, all platforms' included: `cargo metadata --offline` (the
# crate-layers test) resolves them all, and a build fetches only this platform's.
(cd "$here/.." && cargo fetch --locked >/dev/null)
echo "install-test-deps: ok"
