#!/usr/bin/env bash
# The README's first command: installs what is needed, builds the release binary, and
# starts the echo back end and a gateway serving the demo API (examples/echo.yaml, with
# the back end on port 9000). Prints a curl line that works. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cargo build --release -p turnpike
bin=target/release/turnpike

"$bin" echo --port 9000 &
echo_pid=$!
trap 'kill $echo_pid $gw_pid 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
"$bin" gateway --config examples/echo.yaml --http-port 8280 --https-port 8243 --data-dir ./data &
gw_pid=$!

for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/8280) 2>/dev/null && break
  sleep 0.1
done
cat <<MSG

Turnpike is running.
  gateway   http://127.0.0.1:8280  https://127.0.0.1:8243 (self-signed, in ./data)
  echo      http://127.0.0.1:9000  (the demo API's back end)

Try:
  curl -s -X POST -H 'Content-Type: application/json' -d '{"hello":"turnpike"}' http://127.0.0.1:8280/echo/v1/anything
  curl -sk --http2 https://127.0.0.1:8243/echo/anything -d 'default version, over TLS'

Edit examples/echo.yaml while it runs: the gateway reloads it (or send SIGHUP).
MSG
wait
