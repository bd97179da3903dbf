#!/usr/bin/env bash
# Analytics cost (issue 17): the same secured API (ES256 JWT validated locally + a
# subscription check, one token: the verified-token cache is hot, as in security.sh's
# jwt-1) through three gateways started from the same file:
#   off      `--analytics off`: no observer at all;
#   rollups  analytics on as a gateway following a control plane runs it: each request's
#            record queued and summed into per-minute rollups by the background task (on
#            the same core), the rows written every second (`--analytics-format rollups`;
#            shipping POSTs the same rows);
#   events   one raw event per request, formatted and appended to a JSON-lines file.
# Alternating rounds in one run; medians; the ratios are throughput against "off"
# (target for rollups >= 0.97, i.e. <= 3 % cost). No gateway has a metrics listener, so
# "off" pays nothing for observing requests and a ratio is the whole cost of analytics.
# Gateways pinned to core 1 (TURNPIKE_WORKERS=1); wrk and the echo back end to core 0.
#
# Usage: [TURNPIKE_BIN=...] bench/analytics.sh [--duration 10] [--connections 100] [--rounds 3]
# Needs: wrk, taskset, curl, python3 with cryptography (scripts/install-test-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=10; conns=100; rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

. bench/lib.sh

echo_port=$(free_port); on_port=$(free_port); off_port=$(free_port); roll_port=$(free_port)

# A P-256 key, its public JWK and one token (ES256, 1 h), minted outside Turnpike.
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
open(f"{work}/one.txt", "w").write(f"{inp}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}")
PY

cat >"$work/apis.yaml" <<YAML
security:
  issuers:
    - issuer: https://idp.bench
      audiences: [turnpike]
      jwks: { "keys": [$(cat "$work/jwk.json")] }
  subscriptions:
    - { api: /secure/v1, application: app-0, state: ACTIVE, tier: Unlimited }
apis:
  - name: secure
    context: /secure
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    auth: { oauth2: true }
    resources:
      - { path: "/*", methods: [GET, POST] }
YAML

taskset -c 0 "$bin" echo --port "$echo_port" --threads 1 >"$work/echo.log" 2>&1 &
pids+=($!)
events="$work/events.jsonl"; rollups="$work/rollups.jsonl"
start_gw() { # name port extra-flags...
  local name=$1 port=$2; shift 2
  TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/apis.yaml" \
    --http-port "$port" --https-port off --data-dir "$work/data-$name" "$@" >"$work/gw-$name.log" 2>&1 &
  pids+=($!)
}
start_gw events "$on_port" --analytics-file "$events"; events_pid=${pids[-1]}
start_gw rollups "$roll_port" --analytics-file "$rollups" --analytics-format rollups --analytics-interval 1
rollups_pid=${pids[-1]}
start_gw off "$off_port" --analytics off; off_pid=${pids[-1]}
wait_port "$echo_port"; wait_port "$on_port"; wait_port "$off_port"; wait_port "$roll_port"

cat >"$work/one.lua" <<LUA
local f = io.open("$work/one.txt"); local t = f:read("*l"); f:close()
wrk.headers["Authorization"] = "Bearer " .. t
LUA

for p in "$on_port" "$off_port" "$roll_port"; do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/secure/v1/")
  [ "$code" = 401 ] || { echo "secured API without a token answered $code" >&2; exit 1; }
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$work/one.txt")" "http://127.0.0.1:$p/secure/v1/")
  [ "$code" = 200 ] || { echo "secured API with the token answered $code" >&2; exit 1; }
done

hz=$(getconf CLK_TCK)
run_one() { # url gateway-pid -> "rps p50us p99us cpu_us_per_req non2xx requests"
  local url=$1 pid=$2 before after reqs
  before=$(cpu_ticks "$pid")
  taskset -c 0 wrk -t1 -c"$conns" -d"${duration}s" --latency -s "$work/one.lua" "$url" >"$work/wrk.out" 2>&1
  after=$(cpu_ticks "$pid")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$work/wrk.out")
  echo "$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out") \
$(to_us "$(awk '$1=="50%" {print $2}' "$work/wrk.out")") \
$(to_us "$(awk '$1=="99%" {print $2}' "$work/wrk.out")") \
$(awk -v a="$after" -v b="$before" -v hz="$hz" -v n="${reqs:-0}" 'BEGIN{ if (n > 0) printf "%.1f", (a-b)/hz*1e6/n; else print "-" }') \
${non2xx:-0} ${reqs:-0}"
}

results="$work/results.txt"; : >"$results"
arms=(off rollups events)
for r in $(seq "$rounds"); do
  # Rotate which goes first, so none always runs on a warmer machine.
  order=("${arms[@]:$(( (r - 1) % 3 ))}" "${arms[@]:0:$(( (r - 1) % 3 ))}")
  for which in "${order[@]}"; do
    case $which in
      off) echo "off $(run_one "http://127.0.0.1:$off_port/secure/v1/" "$off_pid")" >>"$results";;
      rollups) echo "rollups $(run_one "http://127.0.0.1:$roll_port/secure/v1/" "$rollups_pid")" >>"$results";;
      events) echo "events $(run_one "http://127.0.0.1:$on_port/secure/v1/" "$events_pid")" >>"$results";;
    esac
  done
  sleep 2 # the last second's events and rows reach their files
  echo "written-events $(wc -l <"$events")" >>"$results"
  echo "written-rollups $(python3 -c 'import json,sys; print(sum(json.loads(l)["requests"] for l in open(sys.argv[1])))' "$rollups") $(wc -l <"$rollups")" >>"$results"
  echo "round $r done" >&2
  : >"$events"; : >"$rollups"
done

python3 - "$results" "$conns" "$duration" "$rounds" <<'PY'
import sys, statistics as st
path, conns, dur, rounds = sys.argv[1:]
rows = {}
written = {"written-events": [], "written-rollups": []}
for line in open(path):
    parts = line.split()
    if parts[0] in written:
        written[parts[0]].append(parts[1:]); continue
    name, rps, p50, p99, cpu, non2xx, reqs = parts
    rows.setdefault(name, []).append((float(rps), float(p50), float(p99), None if cpu == '-' else float(cpu), int(non2xx), int(reqs)))
med = lambda i, name: st.median([r[i] for r in rows[name] if r[i] is not None])
print(f"\nsecured API (ES256 JWT + subscription), one gateway worker, {conns} connections, {dur}s x {rounds} rotating rounds, medians\n")
print("| analytics | req/s | p50 | p99 | gateway CPU/req | non-2xx | vs off |")
print("|---|---|---|---|---|---|---|")
for name in ("off", "rollups", "events"):
    print(f"| {name} | {med(0, name):,.0f} | {med(1, name):.0f} us | {med(2, name):.0f} us | {med(3, name):.1f} us | {sum(r[4] for r in rows[name])} | {med(0, name) / med(0, 'off'):.3f} |")
for name in ("rollups", "events"):
    ratio = med(0, name) / med(0, "off")
    per = [a[0] / b[0] for a, b in zip(rows[name], rows["off"])]
    target = "; target >= 0.970" if name == "rollups" else ""
    print(f"\n{name}/off throughput: {ratio:.3f} (cost {100 * (1 - ratio):.1f} %{target}); per round: {', '.join(f'{x:.3f}' for x in per)}; CPU per request {med(3, name) / med(3, 'off'):.3f}x")
# Each round's files hold that round's requests (and the 2 sanity requests once).
print("\nevents written / requests sent, per round:", ", ".join(f"{w[0]}/{r[5]}" for w, r in zip(written["written-events"], rows["events"])))
print("requests in rollup rows (rows) / requests sent, per round:", ", ".join(f"{w[0]} ({w[1]})/{r[5]}" for w, r in zip(written["written-rollups"], rows["rollups"])))
PY
