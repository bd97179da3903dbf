#!/usr/bin/env bash
# Installs what building and running Turnpike need on a fresh Debian machine of this kind
# (the quickstart's first step): a C toolchain for the native crates and curl; the Rust
# toolchain is expected (rustup) and Node.js 20.19+ for the web portals (ui/). Test and
# benchmark tools (nginx, HAProxy, PostgreSQL, Redis, Chromium, ...) are not here:
# scripts/install-test-deps.sh adds them for scripts/test.sh.
# Idempotent: skips apt when every package is already there.
set -euo pipefail

# apt_install PKG...: installs the ones missing (one apt-get run), as root or with sudo.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Sourced by install-test-deps.sh for apt_install alone.
[ "${INSTALL_DEPS_LIB_ONLY:-}" = 1 ] && return 0

packages=(
  build-essential pkg-config   # native deps (ring, mimalloc)
  curl ca-certificates         # the quickstart's curl lines
)
apt_install "${packages[@]}"

if ! command -v cargo >/dev/null; then
  echo "install-deps: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2
  exit 1
fi

# The web portals (ui/): Node 20.19+ and the npm packages of ui/package-lock.json.
# Reinstalled only when the lock file changed since the last install.
if ! command -v node >/dev/null || ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)'; then
  echo "install-deps: Node.js 20.19 or newer is needed for ui/ (node --version: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
ui="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/ui"
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
