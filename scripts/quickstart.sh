#!/usr/bin/env bash
# The README's first command: installs what is needed, builds the release binary, and
# runs `turnpike up`: control plane (REST on :9400), gateway (:8280) and the echo demo back
# end in one process, SQLite in ./data, a published demo API, the web portals at
# http://127.0.0.1:9400/. Prints the admin password (first start), curl lines that work
# and, last, the URL to open. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
(cd ui && npm run --silent build)
cargo build --release -p turnpike
exec target/release/turnpike up --data-dir ./data "$@"
