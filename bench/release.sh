#!/usr/bin/env bash
# Issue 32 item 6: the numbers published with each release. One fixed plan through
# `turnpike bench matrix` (passthrough, JWT-secured passthrough, JWT + rate limit,
# transformation, GraphQL Q1 and Q3, SOAP proxy; 1 KiB bodies, no back-end delay), the same
# passthrough through nginx (a plain reverse proxy, 1 worker, upstream keep-alive) when
# nginx is installed, and the echo called directly (the matrix's baselines). Writes a dated
# Markdown table with the machine (CPU model, cores, RAM, kernel), the commit and the ratios
# to the direct echo and to nginx, to stdout and to --out FILE. --publish also puts it at
# the top of docs/performance.md (or --page FILE) and moves the table it replaces to the
# page's "Earlier releases", newest first.
#
# Two rows outside the matrix, each against one gateway (`turnpike gateway`) started here:
# - Cache hit: GET of 50 B (`?size=50`) through an open API with `cache: { ttl: 60s }`, one
#   warm key (every request a HIT, checked by `X-Cache` before the run), beside the same
#   GET through the same API without the cache, through nginx and straight to the echo
#   (`turnpike bench run`, the matrix's users, warm-up and duration).
# - LLM: STREAMS streamed chat completions at once (`turnpike bench llm`) against
#   `turnpike echo --llm` directly and through an AI API (examples/ai.yaml, its budget
#   raised so nothing is refused), their starts spread over the first second as
#   independent clients' are (`--ramp`): calls/s, tokens/s, time to first token p50/p99
#   and what the gateway adds to it; one round each way, direct first.
#
# Core sets: the matrix's `pin: auto` (the gateway on the upper half of the cores, the echo
# and the generator on the lower half; one core: nothing pinned); nginx and the gateway of
# the cache and LLM rows get the gateway's half, their back ends and generator the lower half.
#
# Usage: TURNPIKE_BIN=... bench/release.sh [--users 100] [--duration 30s] [--warmup 5s]
#          [--tokens 1000] [--out FILE] [--publish [--page docs/performance.md]] [--quick]
#          [--streams 100] [--llm-tokens 100]
#   --quick: 10 users, 0.5 s cells, 200 ms warm-up, 4 streams of 5 tokens (the table's
#   shape, for tests; not numbers).
# Needs: python3, curl; nginx for the nginx column (scripts/install-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
users=100; duration=30s; warmup=5s; tokens=1000; out=""; publish=""; page=docs/performance.md
streams=100; llm_tokens=100; ramp=1s
while [ $# -gt 0 ]; do
  case "$1" in
    --users) users=$2; shift 2;;
    --duration) duration=$2; shift 2;;
    --warmup) warmup=$2; shift 2;;
    --tokens) tokens=$2; shift 2;;
    --out) out=$2; shift 2;;
    --publish) publish=1; shift;;
    --page) page=$2; shift 2;;
    --streams) streams=$2; shift 2;;
    --llm-tokens) llm_tokens=$2; shift 2;;
    --quick) users=10; duration=500ms; warmup=200ms; tokens=10; streams=4; llm_tokens=5; ramp=100ms; shift;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
# Checked before the run: a page without the markers would waste a 10-minute run.
if [ -n "$publish" ]; then
  for marker in '<!-- latest release table' '<!-- end of latest release table -->' '<!-- earlier release tables'; do
    grep -qF -- "$marker" "$page" || { echo "$page has no \"$marker\" line: cannot publish" >&2; exit 2; }
  done
fi
source bench/lib.sh

cpus=$(nproc)
# The pinning as a command prefix: a background process is started as
# `"${gw_pin[@]}" cmd &` (taskset execs cmd, so `$!` is the process `cleanup` kills; a
# shell function run with `&` is a subshell, and killing it left nginx and the gateway
# running after the script).
gw_pin=(); low_pin=()
if [ "$cpus" -ge 2 ]; then
  half=$((cpus / 2))
  gw_pin=(taskset -c "$half-$((cpus - 1))")
  low_pin=(taskset -c "0-$((half - 1))")
fi
on_low() { "${low_pin[@]}" "$@"; }

common() { # the cells every table row shares
  cat <<YAML
users: [$users]
sizes: [1024]
delays_ms: [0]
warmup: $warmup
duration: $duration
pin: auto
YAML
}

{ cat <<YAML
name: release
description: per-release numbers (bench/release.sh)
scenarios: [passthrough, secured-passthrough, secured-rate-limited, transformation, graphql, soap-proxy]
graphql_queries: [1, 3]
auth: jwt
tokens: $tokens
YAML
  common; } >"$work/release.yaml"
"$bin" --log warn bench matrix --plan "$work/release.yaml" --out "$work/turnpike" >"$work/turnpike.log" 2>&1 \
  || { cat "$work/turnpike.log" >&2; exit 1; }

# One echo for nginx and the cache rows.
echo_port=$(free_port)
"${low_pin[@]}" "$bin" echo --port "$echo_port" --threads 1 >/dev/null 2>&1 &
pids+=($!)
nginx_results=""; nginx_port=""
if command -v nginx >/dev/null; then
  nginx_port=$(free_port)
  mkdir -p "$work/nginx"
  cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
error_log $work/nginx/error.log;
pid $work/nginx/nginx.pid;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  upstream echo { server 127.0.0.1:$echo_port; keepalive 64; }
  server {
    listen 127.0.0.1:$nginx_port;
    location /echo/v1/ { proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://echo/; }
  }
}
CONF
  # Its own output file: an inherited stdout would keep a caller's pipe open.
  "${gw_pin[@]}" nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" >"$work/nginx/out.log" 2>&1 &
  pids+=($!)
  wait_port "$echo_port"; wait_port "$nginx_port"
  { cat <<YAML
name: release-nginx
description: nginx as a plain reverse proxy, the release plan's passthrough
scenarios: [passthrough]
target:
  url: http://127.0.0.1:$nginx_port
  backend: http://127.0.0.1:$echo_port
YAML
    common; } >"$work/nginx.yaml"
  "$bin" --log warn bench matrix --plan "$work/nginx.yaml" --out "$work/nginx-out" >"$work/nginx.log" 2>&1 \
    || { cat "$work/nginx.log" >&2; exit 1; }
  nginx_results="$work/nginx-out/results.json"
fi

# The cache and LLM rows' gateway: examples/ai.yaml (its budget raised so nothing is
# refused) plus two open APIs in front of the echo, one with the cache and one without.
llm_port=$(free_port); gw_port=$(free_port)
"${low_pin[@]}" "$bin" echo --llm --llm-tokens-per-second 100 --port "$llm_port" >"$work/llm-echo.log" 2>&1 &
pids+=($!)
{ sed -e "s/127.0.0.1:9000/127.0.0.1:$llm_port/" \
      -e 's/total: 3000, per: minute/total: 1000000000, per: minute/' \
      -e 's/requests: 3000, per: minute/requests: 100000000, per: minute/' examples/ai.yaml
  for api in cached plain; do
    cat <<YAML
  - name: $api
    context: /$api
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
YAML
    [ "$api" = cached ] && echo "    policies: [ { cache: { ttl: 60s } } ]"
  done; } >"$work/extra.yaml"
"${gw_pin[@]}" "$bin" --log warn gateway --config "$work/extra.yaml" --http-port "$gw_port" --https-port off \
  --data-dir "$work/extra-data" >"$work/extra-gateway.log" 2>&1 &
pids+=($!)
wait_port "$llm_port"; wait_port "$gw_port"

get_run() { # NAME URL: a closed-loop GET of 50 B, its result in $work/get-NAME.json
  on_low "$bin" --log warn bench run --url "$2" --users "$users" --warmup "$warmup" --duration "$duration" \
    --json >"$work/get-$1.json"
}
cached_url="http://127.0.0.1:$gw_port/cached/v1/bench?size=50"
curl -s -o /dev/null "$cached_url"
curl -s -D - -o /dev/null "$cached_url" | grep -qi '^x-cache: HIT' \
  || { echo "the cache row's API does not answer from its cache" >&2; exit 1; }
get_run cached "$cached_url"
get_run plain "http://127.0.0.1:$gw_port/plain/v1/bench?size=50"
get_run direct "http://127.0.0.1:$echo_port/bench?size=50"
if [ -n "$nginx_port" ]; then get_run nginx "http://127.0.0.1:$nginx_port/echo/v1/bench?size=50"; fi

llm_run() { # NAME URL [ARGS...]: streamed chat calls, the result in $work/llm-NAME.json
  local name=$1 url=$2; shift 2
  on_low "$bin" --log warn bench llm --url "$url" --streams "$streams" --duration "$duration" --warmup "$warmup" --ramp "$ramp" \
    --prompt "lorem $llm_tokens" --max-tokens $((llm_tokens * 2)) --json "$@" >"$work/llm-$name.json"
}
llm_run direct "http://127.0.0.1:$llm_port/v1/chat/completions"
llm_run gateway "http://127.0.0.1:$gw_port/ai/v1/chat/completions" --api-key "$(sed -n 's/^# example key: //p' examples/ai.yaml)"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
table=$(python3 - "$work/turnpike/results.json" "$nginx_results" "$commit" "$("$bin" --version 2>/dev/null || echo turnpike)" \
  "$(uname -r)" "$(nginx -v 2>&1 | sed 's/.*nginx\///' || true)" "$work" "$streams" "$llm_tokens" "$ramp" <<'PY'
import datetime, json, os, sys
tp_path, nginx_path, commit, version, kernel, nginx_version, work, streams, llm_tokens, ramp = sys.argv[1:11]
tp = json.load(open(tp_path))
m = tp["machine"]
plan = tp["plan"]

def cells(results, via):
    return [c for c in results["cells"] if c["via"] == via and c.get("result")]

def key(c):
    return (c["method"], c.get("graphql_query"))

direct = {key(c): c["result"]["summary"] for c in cells(tp, "direct")}
nginx = None
if nginx_path:
    ng = cells(json.load(open(nginx_path)), "gateway")
    nginx = ng[0]["result"]["summary"] if ng else None

names = {
    "passthrough": "Passthrough (no auth)",
    "secured-passthrough": "JWT-secured passthrough",
    "secured-rate-limited": "JWT + rate limit",
    "transformation": "JWT + JSON transformation",
    "graphql": "GraphQL (JWT)",
    "soap-proxy": "SOAP 1.2 proxy",
}
order = list(names)
rows = []
gw = sorted(cells(tp, "gateway"), key=lambda c: (order.index(c["scenario"]) if c["scenario"] in order else 99, c.get("graphql_query") or 0))
def ratio(a, b):
    return f"{a['throughput_rps'] / b['throughput_rps']:.2f}" if b and b["throughput_rps"] else "—"
def line(name, s, base, ref=None):
    rps = s["throughput_rps"]
    vs_direct = ratio(s, base)
    vs_nginx = ratio(s, ref or nginx)
    added = f"{s['avg_ms'] - base['avg_ms']:.2f}" if base else "—"
    return (f"| {name} | {rps:,.0f} | {s['avg_ms']:.2f} | {s['p99_ms']:.2f} | {added} | {s['error_pct']:.2f} | "
            f"{vs_direct} | {vs_nginx} |")
for c in gw:
    name = names.get(c["scenario"], c["scenario"])
    if c.get("graphql_query"):
        name += f" Q{c['graphql_query']}"
    rows.append(line(name, c["result"]["summary"], direct.get(key(c))))
# The cache rows: the same GET of 50 B through the cached API, the API without it,
# nginx, and to the echo directly.
get = {n: json.load(open(f"{work}/get-{n}.json"))["summary"] for n in ("cached", "plain", "direct", "nginx")
       if os.path.exists(f"{work}/get-{n}.json")}
get_nginx = get.get("nginx")
if nginx:
    rows.append(line(f"nginx {nginx_version or ''} passthrough (reference)".replace("  ", " "), nginx, direct.get(("POST", None))))
rows.append(line("Cache hit, GET 50 B (`cache: { ttl: 60s }`)", get["cached"], get["direct"], get_nginx))
rows.append(line("The same API uncached, GET 50 B", get["plain"], get["direct"], get_nginx))
if get_nginx:
    rows.append(line(f"nginx {nginx_version or ''} passthrough, GET 50 B (reference)".replace("  ", " "), get_nginx, get["direct"], get_nginx))
direct[("GET 50 B", None)] = get["direct"]
for k, s in sorted(direct.items(), key=lambda kv: str(kv[0])):
    what = {"POST": "Echo called directly (POST)", "SOAP": "SOAP echo called directly",
            "GRAPHQL": f"GraphQL echo called directly Q{k[1]}", "GET 50 B": "Echo called directly (GET 50 B)"}.get(k[0], f"direct {k[0]}")
    ref = get_nginx if k[0] == "GET 50 B" else nginx
    rows.append(f"| {what} | {s['throughput_rps']:,.0f} | {s['avg_ms']:.2f} | {s['p99_ms']:.2f} | — | {s['error_pct']:.2f} | 1.00 | "
                + ratio(s, ref) + " |")
pinning = tp.get("setup", {}).get("pinning", {})
today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
print(f"## Turnpike {version.replace('turnpike ', '')}, commit {commit}, {today}\n")
print(f"Machine: {m['cpu_model']}, {os.cpu_count()} cores, {m['memory_mb'] / 1024:.1f} GiB RAM, Linux {kernel}.  ")
print(f"Load: `turnpike bench` closed loop, {plan['users'][0]} users, 1 KiB JSON POST (GraphQL: WSO2's queries; SOAP: a 1 KiB envelope), "
      f"no back-end delay, {plan['warmup']} warm-up + {plan['duration']} measured per cell; "
      f"{tp.get('setup', {}).get('protocol', 'HTTP/1.1')}; credential: {tp.get('setup', {}).get('credential', 'JWT')}.  ")
print(f"Cores: {json.dumps(pinning) if pinning else 'not recorded'}; nginx (1 worker, upstream keep-alive) on the gateway's cores.\n")
print("| API | req/s | avg ms | p99 ms | added avg ms | errors % | vs echo direct | vs nginx passthrough |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
print("\n".join(rows))
print(f"\nCache hit: {ratio(get['cached'], get['plain'])}x the same API uncached"
      + (f", {ratio(get['cached'], get_nginx)}x nginx proxying the same GET." if get_nginx else "."))
llm = {n: json.load(open(f"{work}/llm-{n}.json")) for n in ("direct", "gateway")}
print(f"\nLLM: {streams} streamed chat completions at once (`turnpike bench llm`), each {llm_tokens} tokens paced at "
      f"100 tokens/s by `turnpike echo --llm`, starts spread over {ramp}; through an AI API (examples/ai.yaml: API key, token budget, routing) "
      f"and to the echo directly; TTFT: time to first token.\n")
print("| LLM | calls/s | tokens/s | TTFT p50 ms | TTFT p99 ms | added TTFT p50 ms | added TTFT p99 ms | errors | tokens/s vs direct |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
d = llm["direct"]
for name, r in (("Streamed chat through an AI API", llm["gateway"]), ("LLM echo called directly", d)):
    through = r is not d
    added50 = f"{r['ttft_p50_ms'] - d['ttft_p50_ms']:.2f}" if through else "—"
    added99 = f"{r['ttft_p99_ms'] - d['ttft_p99_ms']:.2f}" if through else "—"
    vs = r["tokens_per_second"] / d["tokens_per_second"] if d["tokens_per_second"] else 0
    print(f"| {name} | {r['calls_per_second']:,.1f} | {r['tokens_per_second']:,.0f} | {r['ttft_p50_ms']:.2f} | "
          f"{r['ttft_p99_ms']:.2f} | {added50} | {added99} | {r['errors']} | {vs:.2f} |")
PY
)
echo "$table"
if [ -n "$out" ]; then printf '%s\n' "$table" >"$out"; fi
if [ -n "$publish" ]; then
  printf '%s\n' "$table" >"$work/table.md"
  python3 - "$page" "$work/table.md" <<'PY'
import sys
page, table = sys.argv[1], open(sys.argv[2]).read().strip()
text = open(page).read()
head = text.index("\n", text.index("<!-- latest release table")) + 1
tail = text.index("<!-- end of latest release table -->")
replaced = text[head:tail].strip()
text = text[:head] + table + "\n" + text[tail:]
if replaced.startswith("## Turnpike"):
    # One level down under "Earlier releases".
    replaced = "\n".join("#" + l if l.startswith("## ") else l for l in replaced.splitlines())
    at = text.index("\n", text.index("<!-- earlier release tables")) + 1
    text = text[:at] + "\n" + replaced + "\n" + text[at:]
open(page, "w").write(text)
PY
  echo "published at the top of $page" >&2
fi
