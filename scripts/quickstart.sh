#!/usr/bin/env bash
# The README's first command: installs what building and running need (no test tools),
# builds the web portals and the binary (the fast-compiling `quickstart` profile, not the
# fat-LTO `release` one packages use), and runs `turnpike up`: control plane (REST on
# :9400), gateway (:8280) and the echo demo back end in one process, SQLite in ./data, a
# published demo API, the web portals at http://127.0.0.1:9400/. Prints curl lines ready
# to paste (with the real admin password) and, last, the URL to open. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
(cd ui && npm run --silent build)
cargo build --profile quickstart -p turnpike

# The admin password: chosen here on the first start and kept beside the database, so
# that every start (not only the first) prints curl lines that work as pasted.
data=./data
mkdir -p "$data"
if [ -z "${TURNPIKE_ADMIN_PASSWORD:-}" ]; then
  if [ ! -s "$data/admin-password" ]; then
    (umask 077 && head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$data/admin-password")
  fi
  TURNPIKE_ADMIN_PASSWORD="$(cat "$data/admin-password")"
  export TURNPIKE_ADMIN_PASSWORD
fi
exec target/quickstart/turnpike up --data-dir "$data" "$@"
