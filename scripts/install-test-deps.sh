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

rustup component add rustfmt clippy >/dev/null 2>&1 || true
# Every crate of Cargo.lock, all platforms' included: `cargo metadata --offline` (the
# crate-layers test) resolves them all, and a build fetches only this platform's.
(cd "$here/.." && cargo fetch --locked >/dev/null)
echo "install-test-deps: ok"
