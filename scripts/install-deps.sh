#!/usr/bin/env bash
# Installs what Turnpike's build, tests and benchmarks need on a fresh Debian machine of
# this kind: the Rust toolchain is expected (rustup), everything else comes from Debian.
# Idempotent: skips apt when every package is already there.
set -euo pipefail

packages=(
  build-essential pkg-config   # native deps (ring, mimalloc)
  nginx wrk                    # bench/: the reference reverse proxy and load generator
  redis-server                 # throttling tests (cluster counters)
  postgresql                   # store tests against a real PostgreSQL
  haproxy                      # bench/drill.sh: gateways behind a balancer under faults
  python3 python3-cryptography # bench/security.sh mints ES256 tokens outside Turnpike
  curl ca-certificates util-linux procps
  jq                           # turnpike-mediation's differential test against the jq binary
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian starts these services on install; the tests start their own on free ports.
for svc in nginx redis-server postgresql haproxy; do
  (command -v systemctl >/dev/null && systemctl stop "$svc" 2>/dev/null) || service "$svc" stop >/dev/null 2>&1 || true
done

if ! command -v cargo >/dev/null; then
  echo "install-deps: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
echo "install-deps: ok"
