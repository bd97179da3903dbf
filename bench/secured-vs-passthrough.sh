#!/usr/bin/env bash
# Issue 32, item 4: the kit measured `secured-passthrough` at 0.71x of `passthrough` (300
# users) while wrk saw about 1.0x. Generator or gateway? One gateway, the matrix's own
# config (written by a short `bench matrix` run first, whose ratio is the kit's as the
# issue saw it), pinned to core 1; the echo back end and the generator on core 0. Then, in
# alternating rounds, wrk and `turnpike bench run` each drive the open API (/echo/v1) and
# the API-key-secured one (/secured/v1) with the same requests (POST, 50 B JSON, the
# secured one with `apikey`). Per run: req/s, the gateway's CPU per request (utime+stime
# from /proc) and the generator's CPU per request (its rusage). Same gateway CPU per
# request under both generators and a ratio that moves with the generator: the
# generator. Different gateway CPU per request: the gateway.
#
# Usage: TURNPIKE_BIN=... bench/secured-vs-passthrough.sh [--duration 5] [--users 300] [--rounds 3]
# Needs: wrk, taskset, python3 (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=5; users=300; rounds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2;;
    --users) users=$2; shift 2;;
    --rounds) rounds=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
source bench/lib.sh

# 1. The kit as the matrix runs it: passthrough, then secured-passthrough, same gateway,
#    nothing pinned.
cat >"$work/plan.yaml" <<YAML
name: secured-vs-passthrough
scenarios: [passthrough, secured-passthrough]
users: [$users]
sizes: [50]
delays_ms: [0]
warmup: 2s
duration: ${duration}s
pin: off
YAML
# A kit of issue 32 or later defaults to JWTs: ask for the API key the second part sends.
if "$bin" bench run --help | grep -q -- --token-header; then echo "auth: api-key" >>"$work/plan.yaml"
else sed -i '/^pin:/d' "$work/plan.yaml"; fi
# Unpinned, as the matrix ran in the issue (everything on the shared cores).
"$bin" --log warn bench matrix --plan "$work/plan.yaml" --out "$work/matrix" \
  --threads 1 2>&1 | grep -E 'gateway (passthrough|secured)' || true
python3 - "$work/matrix/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
g = {c["scenario"]: c["result"] for c in r["cells"] if c["via"] == "gateway" and c.get("result")}
p, s = g.get("passthrough"), g.get("secured-passthrough")
if p and s:
    def cpu_us(x):
        res = x.get("resources") or {}
        rps = x["summary"]["throughput_rps"]
        return res.get("cpu_pct", 0) / 100 * 1e6 / rps if rps else 0
    print(f"kit matrix: passthrough {p['summary']['throughput_rps']:.0f} req/s, secured {s['summary']['throughput_rps']:.0f} req/s,"
          f" ratio {s['summary']['throughput_rps'] / p['summary']['throughput_rps']:.2f};"
          f" gateway CPU/request {cpu_us(p):.1f} us vs {cpu_us(s):.1f} us")
PY

# 2. One gateway with that config; wrk and the kit alternate on the two APIs.
echo_port=$(free_port); gw_port=$(free_port)
sed "s#http://127.0.0.1:[0-9]*\"#http://127.0.0.1:$echo_port\"#" "$work/matrix/gateway-delay-0.yaml" >"$work/gw.yaml"
taskset -c 0 "$bin" echo --port "$echo_port" --threads 1 >/dev/null 2>&1 &
pids+=($!)
TURNPIKE_LOG=warn taskset -c 1 "$bin" gateway --config "$work/gw.yaml" --http-port "$gw_port" \
  --https-port off --data-dir "$work/data" >"$work/gw.log" 2>&1 &
gw=$!; pids+=($gw)
wait_port "$echo_port"; wait_port "$gw_port"
body=$(python3 -c 'print("{\"p\":\"" + "a" * 42 + "\"}", end="")')
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
LUA
# rusage of the generator (its children's CPU seconds) printed on stderr's last line.
cpu_of() { python3 -c 'import resource,subprocess,sys
out = subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(out); print("CPU", r.ru_utime + r.ru_stime)' "$@"; }
run_one() { # generator api
  local url="http://127.0.0.1:$gw_port/$2/v1/bench" hdr=() out t0 t1
  [ "$2" = secured ] && hdr=(-H "apikey: turnpike-bench-key")
  t0=$(cpu_ticks "$gw")
  if [ "$1" = wrk ]; then
    out=$(cpu_of taskset -c 0 wrk -t1 -c"$users" -d"${duration}s" -s "$work/post.lua" "${hdr[@]}" "$url")
    rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  else
    # kit-hyper: the generator's HTTP/1.1 client before issue 32 (hyper's), to compare.
    local extra=(); [ "$1" = kit-hyper ] && extra=(--hyper-h1)
    out=$(cpu_of taskset -c 0 "$bin" bench run --url "$url" --users "$users" --size 50 --threads 1 \
      --warmup 0s --duration "${duration}s" "${hdr[@]}" "${extra[@]}")
    rps=$(awk '/^throughput/ {print $2}' <<<"$out")
  fi
  t1=$(cpu_ticks "$gw")
  gen=$(awk '/^CPU/ {print $2}' <<<"$out")
  python3 -c "import sys; g,a,rps,t,gen=sys.argv[1:]; rps=float(rps); n=rps*$duration
print(f'{g:8} {a:8} {rps:8.0f} req/s  gateway {(int(t)/100)*1e6/n:6.1f} us/req  generator {float(gen)*1e6/n:6.1f} us/req')" \
    "$1" "$2" "$rps" "$((t1 - t0))" "$gen"
}
gens=(wrk kit kit-hyper)
"$bin" bench run --help | grep -q -- --hyper-h1 || gens=(wrk kit)
for r in $(seq "$rounds"); do
  echo "round $r"
  for i in "${!gens[@]}"; do
    g=${gens[$(((i + r) % ${#gens[@]}))]}
    for a in echo secured; do run_one "$g" "$a" | tee -a "$work/runs"; done
  done
done
python3 - "$work/runs" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault((f[0], f[1]), []).append((float(f[2]), float(f[5]), float(f[8])))
print("medians (req/s, gateway us/request, generator us/request):")
for (g, a), v in sorted(runs.items()):
    print(f"  {g:9} {a:8} {statistics.median(x[0] for x in v):8.0f} {statistics.median(x[1] for x in v):6.1f} {statistics.median(x[2] for x in v):6.1f}")
for g in sorted({g for g, _ in runs}):
    e, s = runs.get((g, "echo")), runs.get((g, "secured"))
    if e and s:
        me = [statistics.median(x[i] for x in e) for i in range(3)]
        ms = [statistics.median(x[i] for x in s) for i in range(3)]
        print(f"  {g}: secured/passthrough throughput {ms[0] / me[0]:.2f}x, gateway CPU/request {ms[1] / me[1]:.2f}x, generator CPU/request {ms[2] / me[2]:.2f}x")
PY
