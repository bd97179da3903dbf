#!/usr/bin/env bash
# User-space instructions per request of the gateway (valgrind callgrind), the
# load-independent measure for small differences (other processes on the box do not
# change it). For each binary given and each API:
#   open     an API without policies;
#   limited  the open API with an API-level advanced policy and the Unauthenticated tier
#            (per client IP), both far from their limits: two counters taken and the
#            RateLimit headers written on every request (bench/throttle.sh's "limited");
#   secured  ES256 JWT (one token, the verified-token cache hot) + subscription, whose
#            tier has a quota far beyond the run (the counters and RateLimit headers work
#            on every request) and an API-level advanced policy (a second counter).
# Each count is (instructions after N2 keep-alive GETs - after N1) / (N2 - N1), each run
# in its own gateway process under callgrind (startup and warm-up cancel out).
#
# Usage: bench/callgrind.sh BIN [BIN...]    e.g. a build of an older commit and this one
#        [--n1 500] [--n2 3000] [--keep DIR]
# --keep DIR keeps each run's callgrind.out (named BINNAME.API.N) for callgrind_annotate.
# Needs: valgrind, python3 with cryptography (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/callgrind-args.sh
callgrind_args 500 3000 "$@"

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

echo_port=$(free_port)
"${bins[0]}" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"

# A P-256 key, its JWK and one ES256 token (1 h), minted outside Turnpike.
python3 - "$work" <<'PY'
import base64, json, sys, time
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives import hashes
work = sys.argv[1]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
key = ec.generate_private_key(ec.SECP256R1())
pub = key.public_key().public_numbers()
jwk = {"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "bench-1",
       "x": b64(pub.x.to_bytes(32, "big")), "y": b64(pub.y.to_bytes(32, "big"))}
open(f"{work}/jwk.json", "w").write(json.dumps(jwk))
head = b64(json.dumps({"alg": "ES256", "kid": "bench-1", "typ": "JWT"}).encode())
now = int(time.time())
claims = {"iss": "https://idp.bench", "aud": "turnpike", "sub": "user-0", "iat": now,
          "exp": now + 3600, "jti": "bench-0", "application": "app-0", "scope": "read"}
inp = f"{head}.{b64(json.dumps(claims).encode())}"
r, s = utils.decode_dss_signature(key.sign(inp.encode(), ec.ECDSA(hashes.SHA256())))
open(f"{work}/token.txt", "w").write(f"{inp}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}")
PY

cat >"$work/apis.yaml" <<YAML
security:
  issuers:
    - issuer: https://idp.bench
      audiences: [turnpike]
      jwks: { "keys": [$(cat "$work/jwk.json")] }
  subscriptions:
    - { api: /secure/v1, application: app-0, state: ACTIVE, tier: Huge }
throttling:
  subscription_tiers:
    - name: Huge
      quota: { requests: 1000000000000, per: minute }
    - name: Unauthenticated
      quota: { requests: 1000000000000, per: minute }
  advanced_policies:
    - name: High
      default_limit: { requests: 1000000000000, per: minute }
apis:
  - name: open
    context: /open
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
  - name: limited
    context: /limited
    version: v1
    throttling: High
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
  - name: secure
    context: /secure
    version: v1
    throttling: High
    endpoints: ["http://127.0.0.1:$echo_port"]
    auth: { oauth2: true }
    resources:
      - { path: "/*", methods: [GET] }
YAML

# Sends N keep-alive GETs on one connection; every answer must be 200.
cat >"$work/client.py" <<'PY'
import http.client, sys
port, path, n, token = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
headers = {"authorization": f"Bearer {token}"} if path.startswith("/secure") else {}
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
for i in range(n):
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"request {i}: {r.status}")
PY

# Instructions (Ir) of one gateway process that served N requests to PATH.
count() { # bin path n -> Ir
  local bin=$1 path=$2 n=$3 port out
  port=$(free_port); out="$work/cg.$port"
  TURNPIKE_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$bin" gateway --config "$work/apis.yaml" --workers 1 --http-port "$port" \
    --https-port off --data-dir "$work/data" >"$work/gw-$port.log" 2>&1 &
  local pid=$!
  wait_port "$port"
  python3 "$work/client.py" "$port" "$path" "$n" "$(cat "$work/token.txt")"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  grep -m1 '^summary:' "$out" | awk '{print $2}'
  if [ -n "$keep" ]; then
    mkdir -p "$keep"; cp "$out" "$keep/$(basename "$bin").${path//\//_}.$n"
  fi
}

printf '%-40s %-8s %s\n' binary api instructions/request
for bin in "${bins[@]}"; do
  for api in open limited secure; do
    a=$(count "$bin" "/$api/v1/x" "$n1")
    b=$(count "$bin" "/$api/v1/x" "$n2")
    printf '%-40s %-8s %s\n' "$bin" "$api" $(( (b - a) / (n2 - n1) ))
  done
done
