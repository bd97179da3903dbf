#!/usr/bin/env bash
# Security overhead (issue 4): one wrk drives, in one run and alternating rounds, the same
# gateway with security off and on. Each secured case has its own baseline: the open API
# receiving exactly the same requests (same wrk script, same Authorization header, which an
# open API simply forwards), so the ratio is the cost of checking the credential, not of
# the client sending a 600-byte header.
#   jwt-1     / open-1:     ES256 JWT validated locally + subscription check, one token
#                           (the verified-token cache is hot);
#   cold-N    / open-N:     the cardinality sweep (issue 19): a pool of N distinct tokens
#                           (default sweep 10,000, 100,000, 1,000,000) cycled by a wrk Lua
#                           script, one per request, on a gateway just started (empty
#                           token cache): the first pass, every token verified once
#                           ("cold %" says which share of the run's requests were
#                           first sights);
#   warm-N    / open-N:     the same pool once every token has been seen (a pass that
#                           sends each token once runs between the phases; the gateway's
#                           /metrics then shows how many tokens its cache holds, in how
#                           many bytes, and its RSS);
#   opaque-1  / cp-open-1:  a second gateway following a real control plane
#                           (`turnpike control-plane`): an opaque token issued by its key
#                           manager, introspected once, then answered from the warm cache.
# Gateways pinned to core 1 (TURNPIKE_WORKERS=1); wrk, the echo back end and the control
# plane to core 0, as in bench/proxy-vs-nginx.sh. Prints req/s, p50, p99, gateway CPU per
# request, non-2xx and the ratios (targets: >= 0.9 one JWT, >= 0.85 opaque warm cache,
# >= 0.5 with 100,000 tokens cold, >= 0.9 once all were seen).
#
# Usage: [TURNPIKE_BIN=...] bench/security.sh [--duration 10] [--connections 100] [--rounds 3]
#          [--sweep "10000 100000 1000000"]   (--tokens N: a sweep of one)
# Needs: wrk, taskset, curl, python3 with cryptography (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=10; conns=100; rounds=3; sweep="10000 100000 1000000"
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --connections) conns=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    --tokens) sweep=$2; shift 2;;
    --sweep) sweep=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

# TURNPIKE_BIN=path skips the build (e.g. a copy of the release binary on a busy box).
if [ -n "${TURNPIKE_BIN:-}" ]; then bin=$TURNPIKE_BIN; else
  cargo build --release -p turnpike >/dev/null; bin=target/release/turnpike; fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

echo_port=$(free_port); gw_port=$(free_port); cp_port=$(free_port); gw2_port=$(free_port)
gw3_port=$(free_port); metrics_port=$(free_port)
ntokens=$(for n in $sweep; do echo "$n"; done | sort -n | tail -1)

# A P-256 key, its public JWK, and the tokens (ES256, 1 h), minted outside Turnpike.
python3 - "$work" "$ntokens" <<'PY'
import base64, json, sys, time
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives import hashes
work, n = sys.argv[1], int(sys.argv[2])
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
key = ec.generate_private_key(ec.SECP256R1())
pub = key.public_key().public_numbers()
jwk = {"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "bench-1",
       "x": b64(pub.x.to_bytes(32, "big")), "y": b64(pub.y.to_bytes(32, "big"))}
open(f"{work}/jwk.json", "w").write(json.dumps(jwk))
head = b64(json.dumps({"alg": "ES256", "kid": "bench-1", "typ": "JWT"}).encode())
now = int(time.time())
def token(i):
    claims = {"iss": "https://idp.bench", "aud": "turnpike", "sub": f"user-{i}", "iat": now,
              "exp": now + 3600, "jti": f"bench-{i}", "application": f"app-{i % 100}",
              "scope": "read"}
    inp = f"{head}.{b64(json.dumps(claims).encode())}"
    r, s = utils.decode_dss_signature(key.sign(inp.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{inp}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
open(f"{work}/one.txt", "w").write(token(0))
with open(f"{work}/pool.txt", "w") as f:
    for i in range(n):
        f.write(token(i) + "\n")
        if i % 100000 == 99999: print(f"minted {i + 1} tokens", file=sys.stderr)
PY

subs=$(for i in $(seq 0 99); do echo "    - { api: /secure/v1, application: app-$i, state: ACTIVE, tier: Unlimited }"; done)
cat >"$work/apis.yaml" <<YAML
security:
  issuers:
    - issuer: https://idp.bench
      audiences: [turnpike]
      jwks: { "keys": [$(cat "$work/jwk.json")] }
  subscriptions:
$subs
apis:
  - name: open
    context: /open
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET, POST] }
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
TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/apis.yaml" \
  --http-port "$gw_port" --https-port off --data-dir "$work/data" >"$work/gw.log" 2>&1 &
gw_pid=$!; pids+=($gw_pid)
wait_port "$echo_port"; wait_port "$gw_port"

# The opaque-token case: a real control plane (its key manager issues and introspects the
# tokens) and a second gateway following it.
gw_token=bench-gateway-token-0123456789; admin_pw=bench-admin-pw-0123456789
TURNPIKE_LOG=warn TURNPIKE_ADMIN_PASSWORD=$admin_pw taskset -c 0 "$bin" control-plane \
  --database "sqlite://$work/cp.db" --port "$cp_port" --gateway-token "$gw_token" >"$work/cp.log" 2>&1 &
pids+=($!)
wait_port "$cp_port"
TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --control-plane "http://127.0.0.1:$cp_port" \
  --gateway-token "$gw_token" --gateway-id bench --http-port "$gw2_port" --https-port off \
  --data-dir "$work/data2" >"$work/gw2.log" 2>&1 &
gw2_pid=$!; pids+=($gw2_pid)
wait_port "$gw2_port"
python3 - "$cp_port" "$admin_pw" "$echo_port" "$work" <<'PY2'
import base64, json, sys, urllib.request, urllib.parse
cp, pw, echo, work = sys.argv[1:]
auth = "Basic " + base64.b64encode(f"admin:{pw}".encode()).decode()
def call(method, path, body=None, form=None, basic=auth):
    data, ctype = None, "application/json"
    if body is not None: data = json.dumps(body).encode()
    if form is not None: data, ctype = urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"
    req = urllib.request.Request(f"http://127.0.0.1:{cp}{path}", data=data, method=method,
                                 headers={"Authorization": basic, "Content-Type": ctype})
    with urllib.request.urlopen(req) as r:
        text = r.read()
        return json.loads(text) if text else None
def api(name, context, secured):
    a = call("POST", "/api/am/publisher/v1/apis", {"name": name, "context": context, "version": "v1",
             "endpoints": [f"http://127.0.0.1:{echo}"], "resources": [{"path": "/*", "methods": ["GET", "POST"]}]})
    if not secured:
        call("PUT", f"/api/am/publisher/v1/apis/{a['id']}/security", "none")
    call("POST", f"/api/am/publisher/v1/apis/change-lifecycle?apiId={a['id']}&action=Publish")
    return a["id"]
api("cp-open", "/cpopen", False)
secure = api("opaque", "/opaque", True)
app = call("POST", "/api/am/devportal/v1/applications", {"name": "bench"})
call("POST", "/api/am/devportal/v1/subscriptions",
     {"applicationId": app["id"], "apiId": secure, "throttlingPolicy": "Unlimited"})
keys = call("POST", f"/api/am/devportal/v1/applications/{app['id']}/generate-keys",
            {"tokenType": "OPAQUE", "grantTypes": ["client_credentials"]})
client = "Basic " + base64.b64encode(f"{keys['consumerKey']}:{keys['consumerSecret']}".encode()).decode()
tok = call("POST", "/oauth2/token", form={"grant_type": "client_credentials"}, basic=client)
assert tok["access_token"].count(".") != 2, "expected an opaque token"
open(f"{work}/opaque.txt", "w").write(tok["access_token"])
PY2
sleep 0.5

cat >"$work/one.lua" <<LUA
local f = io.open("$work/one.txt"); local t = f:read("*l"); f:close()
wrk.headers["Authorization"] = "Bearer " .. t
LUA
cat >"$work/opaque.lua" <<LUA
local f = io.open("$work/opaque.txt"); local t = f:read("*l"); f:close()
wrk.headers["Authorization"] = "Bearer " .. t
LUA
pool_lua() { # N -> a wrk script cycling over the first N tokens
  cat >"$work/pool-$1.lua" <<LUA
local tokens = {}
for line in io.lines("$work/pool.txt") do
  tokens[#tokens + 1] = "Bearer " .. line
  if #tokens == $1 then break end
end
local i = 0
request = function()
  i = i % #tokens + 1
  wrk.headers["Authorization"] = tokens[i]
  return wrk.format()
end
LUA
}
once_lua() { # N -> a wrk script sending each of the first N tokens once, then the open API
  cat >"$work/once-$1.lua" <<LUA
local tokens = {}
for line in io.lines("$work/pool.txt") do
  tokens[#tokens + 1] = "Bearer " .. line
  if #tokens == $1 then break end
end
local i = 0
request = function()
  i = i + 1
  if i <= #tokens then
    wrk.headers["Authorization"] = tokens[i]
    return wrk.format()
  end
  return wrk.format("GET", "/open/v1/")
end
LUA
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
to_us() { awk -v v="$1" 'BEGIN{ if (v ~ /us$/) {sub(/us/,"",v); print v+0} else if (v ~ /ms$/) {sub(/ms/,"",v); print v*1000} else if (v ~ /s$/) {sub(/s/,"",v); print v*1000000} else print v }'; }

run_one() { # url script gateway-pid -> "rps p50us p99us cpu_us_per_req non2xx requests"
  local url=$1 script=$2 pid=$3 before after reqs rps p50 p99 non2xx cpu
  before=$(cpu_ticks "$pid")
  taskset -c 0 wrk -t1 -c"$conns" -d"${duration}s" --latency -s "$script" "$url" >"$work/wrk.out" 2>&1
  after=$(cpu_ticks "$pid")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
  p50=$(to_us "$(awk '$1=="50%" {print $2}' "$work/wrk.out")")
  p99=$(to_us "$(awk '$1=="99%" {print $2}' "$work/wrk.out")")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$work/wrk.out"); non2xx=${non2xx:-0}
  cpu=$(awk -v a="$after" -v b="$before" -v hz="$hz" -v n="${reqs:-0}" 'BEGIN{ if (n > 0) printf "%.1f", (a-b)/hz*1e6/n; else print "-" }')
  echo "$rps $p50 $p99 $cpu $non2xx ${reqs:-0}"
}

start_gw3() { # a fresh gateway (empty token cache) for one sweep step, metrics on
  TURNPIKE_LOG=warn TURNPIKE_WORKERS=1 taskset -c 1 "$bin" gateway --config "$work/apis.yaml" \
    --http-port "$gw3_port" --https-port off --data-dir "$work/data3" \
    --metrics-addr "127.0.0.1:$metrics_port" >"$work/gw3.log" 2>&1 &
  gw3_pid=$!; pids+=($gw3_pid)
  wait_port "$gw3_port"; wait_port "$metrics_port"
}
stop_gw3() { kill "$gw3_pid" 2>/dev/null || true; wait "$gw3_pid" 2>/dev/null || true; }
metric() { curl -s "http://127.0.0.1:$metrics_port/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# Sanity: the secured API refuses no token and accepts the bench token.
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$gw_port/secure/v1/")
[ "$code" = 401 ] || { echo "secured API without a token answered $code" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$work/one.txt")" "http://127.0.0.1:$gw_port/secure/v1/")
[ "$code" = 200 ] || { echo "secured API with the token answered $code" >&2; exit 1; }
# The follower serves both control-plane APIs once the snapshot arrives.
for _ in $(seq 100); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$work/opaque.txt")" "http://127.0.0.1:$gw2_port/opaque/v1/")
  [ "$code" = 200 ] && break; sleep 0.1
done
[ "$code" = 200 ] || { echo "opaque-secured API with the token answered $code" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$gw2_port/opaque/v1/")
[ "$code" = 401 ] || { echo "opaque-secured API without a token answered $code" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$gw2_port/cpopen/v1/")
[ "$code" = 200 ] || { echo "control-plane open API answered $code" >&2; exit 1; }

results="$work/results.txt"; : >"$results"
caches="$work/caches.txt"; : >"$caches"
for r in $(seq "$rounds"); do
  g="http://127.0.0.1:$gw_port"; g2="http://127.0.0.1:$gw2_port"
  echo "open-1 $(run_one "$g/open/v1/" "$work/one.lua" "$gw_pid")" >>"$results"
  echo "jwt-1 $(run_one "$g/secure/v1/" "$work/one.lua" "$gw_pid")" >>"$results"
  echo "cp-open-1 $(run_one "$g2/cpopen/v1/" "$work/opaque.lua" "$gw2_pid")" >>"$results"
  echo "opaque-1 $(run_one "$g2/opaque/v1/" "$work/opaque.lua" "$gw2_pid")" >>"$results"
  echo "round $r done" >&2
done

g3="http://127.0.0.1:$gw3_port"
for n in $sweep; do
  pool_lua "$n"; once_lua "$n"
  for r in $(seq "$rounds"); do
    start_gw3
    echo "open-$n $(run_one "$g3/open/v1/" "$work/pool-$n.lua" "$gw3_pid")" >>"$results"
    line=$(run_one "$g3/secure/v1/" "$work/pool-$n.lua" "$gw3_pid")
    echo "cold-$n $line" >>"$results"
    [ "$r" -lt "$rounds" ] && stop_gw3
  done
  # Complete the first pass: each token once (at the cold rate, plus a margin).
  cold_rps=$(echo "$line" | awk '{print $1}')
  secs=$(awk -v n="$n" -v r="$cold_rps" 'BEGIN{ s = int(n / (r > 0 ? r : 1000) * 1.3) + 3; print s }')
  taskset -c 0 wrk -t1 -c"$conns" -d"${secs}s" -s "$work/once-$n.lua" "$g3/secure/v1/" >/dev/null 2>&1
  echo "$n $(metric 'turnpike_token_cache_entries{cache="jwt"}') $(metric 'turnpike_token_cache_bytes{cache="jwt"}') $(metric 'turnpike_token_cache_budget_bytes{cache="jwt"}') $(awk '/^VmRSS/ {print $2}' "/proc/$gw3_pid/status")" >>"$caches"
  for r in $(seq "$rounds"); do
    echo "open-$n $(run_one "$g3/open/v1/" "$work/pool-$n.lua" "$gw3_pid")" >>"$results"
    echo "warm-$n $(run_one "$g3/secure/v1/" "$work/pool-$n.lua" "$gw3_pid")" >>"$results"
  done
  stop_gw3
  echo "sweep $n done" >&2
done

python3 - "$results" "$conns" "$duration" "$rounds" "$caches" <<'PY'
import sys, statistics as st
path, conns, dur, rounds, caches = sys.argv[1:]
rows = {}
order = []
for line in open(path):
    name, rps, p50, p99, cpu, non2xx, reqs = line.split()
    if name not in rows: order.append(name)
    rows.setdefault(name, []).append((float(rps), float(p50), float(p99), None if cpu == '-' else float(cpu), int(non2xx), int(reqs)))
med = lambda xs: st.median(xs) if xs else float('nan')
print(f"\nGET through one gateway worker, {conns} connections, {dur}s x {rounds} rounds, medians\n")
print("| API | req/s | p50 | p99 | gateway CPU/req | non-2xx | secured/open (req/s) | CPU/req vs open | cold % |")
print("|---|---|---|---|---|---|---|---|---|")
baseline = lambda name: {"jwt": "open", "opaque": "cp-open", "cold": "open", "warm": "open"}.get(name.split("-")[0])
for name in order:
    v = rows[name]
    rps = med([x[0] for x in v]); cpus = [x[3] for x in v if x[3] is not None]
    cpu = f"{med(cpus):.1f} µs" if cpus else "—"
    bad = sum(x[4] for x in v)
    if bad: print(f"WARNING: {name} had {bad} non-2xx answers: its throughput is not comparable", file=sys.stderr)
    b = baseline(name)
    ratio = cpu_ratio = "—"
    if b:
        bv = rows[b + name[name.index("-"):]]
        ratio = f"{rps / med([x[0] for x in bv]):.2f}"
        bc = [x[3] for x in bv if x[3] is not None]
        if cpus and bc: cpu_ratio = f"{med(cpus) / med(bc):.2f}"
    cold = "—"
    if name.startswith("cold-"):
        n = int(name.split("-")[1])
        cold = f"{100 * min(1, n / med([x[5] for x in v])):.0f} %"
    print(f"| {name} | {rps:,.0f} | {med([x[1] for x in v])/1000:.2f} ms | {med([x[2] for x in v])/1000:.2f} ms | {cpu} | {bad} | {ratio} | {cpu_ratio} | {cold} |")
print("\nVerified-token cache after each token of the pool was seen once (gateway /metrics):\n")
print("| distinct tokens | cached | cache bytes | per token | budget | gateway RSS |")
print("|---|---|---|---|---|---|")
for line in open(caches):
    n, entries, b, budget, rss = (line.split() + ["0"] * 5)[:5]
    entries, b, budget = float(entries or 0), float(b or 0), float(budget or 0)
    per = f"{b / entries:.0f} B" if entries else "—"
    print(f"| {int(n):,} | {entries:,.0f} | {b / 2**20:.1f} MiB | {per} | {budget / 2**20:.0f} MiB | {int(rss) / 1024:.0f} MiB |")
PY
