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
  chromium                     # the web portals' browser tests (Playwright drives it)
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
# Every crate of Cargo.lock, all platforms' included: `cargo metadata --offline` (the
# crate-layers test) resolves them all, and a build fetches only this platform's.
(cd "$(dirname "$0")/.." && cargo fetch --locked >/dev/null)

# The web portals (ui/): Node 20.19+ and the npm packages of ui/package-lock.json.
# Reinstalled only when the lock file changed since the last install.
if ! command -v node >/dev/null || ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)'; then
  echo "install-deps: Node.js 20.19 or newer is needed for ui/ (node --version: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
ui="$(cd "$(dirname "$0")/.." && pwd)/ui"
if ! cmp -s "$ui/package-lock.json" "$ui/node_modules/.installed-lock.json" 2>/dev/null; then
  # `npm install --no-save` rather than `npm ci`: registry mirrors that serve only this
  # platform's optional packages (rollup, esbuild) make npm write a lock file without the
  # other platforms' entries, which `npm ci` then refuses as out of sync. The versions
  # still come from the lock file.
  echo "install-deps: npm install --no-save in ui/"
  (cd "$ui" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-save --no-audit --no-fund --loglevel=error)
  cp "$ui/package-lock.json" "$ui/node_modules/.installed-lock.json"
fi
echo "install-deps: ok"
