#!/usr/bin/env bash
# Hostile XML against an unrelated API (issue 25 item 2): one gateway with a SOAP
# pass-through API, an XML->JSON mediation API and an open API, all to `turnpike echo
# --soap`. A prober sends one GET to the open API every 20 ms and records how long each
# waits, first with nothing else running, then while attackers (each a curl loop, several
# at once) post
#   bomb:   one element with 64,000 attributes (693 KB; issue 25: 7-9 s of gateway CPU
#           each, 9-19 s of delay to the open API with two at once) to the SOAP API and
#           to the mediation API, alternately;
#   capped: the most work the caps let through: 1 MB of elements with 256 attributes
#           each, to the mediation API (accepted and converted, off the workers).
# Prints the open API's p50 / p99 / max wait in each phase, how the attacks were answered
# and how fast, and PASS/FAIL: the wait an attack adds to the open API's p99 (attack p99
# minus quiet p99, so a busy box's own noise is not counted) < 50 ms.
#
# Usage: [TURNPIKE_BIN=...] bench/xml-hostile.sh [--seconds 10] [--attackers 4] [--workers 1]
# Needs: curl, python3; builds the release binary unless TURNPIKE_BIN names one.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=10; attackers=4; workers=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2;;
    --attackers) attackers=$2; shift 2;;
    --workers) workers=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

. bench/lib.sh

echo_port=$(free_port); gw_port=$(free_port)
"$bin" --log warn echo --soap --port "$echo_port" >"$work/echo.log" 2>&1 &
pids+=($!)
wsdl=$(python3 -c 'import json; print(json.dumps(open("bench/soap/echo.wsdl").read()))')
cat >"$work/apis.yaml" <<YAML
apis:
  - name: open
    context: /open
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
  - name: soap
    context: /soap
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port/soap"]
    max_body_size: 2MiB
    soap: { type: SOAP, port: Echo12, wsdl: $wsdl }
  - name: xml
    context: /xml
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    max_body_size: 2MiB
    resources:
      - { path: "/*", methods: [POST] }
    mediation:
      request:
        body: { input: xml, output: json }
YAML
"$bin" --log warn gateway --config "$work/apis.yaml" --workers "$workers" \
  --http-port "$gw_port" --https-port off --data-dir "$work/data" >"$work/gw.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"; wait_port "$gw_port" || { cat "$work/gw.log" >&2; exit 1; }; sleep 0.5
base="http://127.0.0.1:$gw_port"

python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
attrs = lambda n: "".join(f' a{i}="{i}"' for i in range(n))
env = '<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><e:echo xmlns:e="urn:tp:echo"><e:p{}/></e:echo></s:Body></s:Envelope>'
open(f"{w}/bomb-soap.xml", "w").write(env.format(attrs(64000)))
open(f"{w}/bomb-xml.xml", "w").write(f"<order{attrs(64000)}/>")
one = f"<i{attrs(256)}/>"
open(f"{w}/capped-xml.xml", "w").write("<order>" + one * ((1 << 20) // len(one)) + "</order>")
PY

# attacker FILE URL CONTENT-TYPE OUT: posts FILE in a loop, one line per answer
# (status, seconds), until killed.
attacker() {
  while :; do
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "content-type: $3" \
      --data-binary @"$1" "$2" >>"$4" || true
  done
}

probe() { # phase seconds -> one wait (ms) per line in $work/probe-phase
  python3 - "$base/open/v1/ping" "$2" >"$work/probe-$1" <<'PY'
import http.client, sys, time, urllib.parse
url, seconds = urllib.parse.urlsplit(sys.argv[1]), float(sys.argv[2])
connect = lambda: http.client.HTTPConnection(url.hostname, url.port, timeout=30)
conn = connect()
end = time.monotonic() + seconds
while time.monotonic() < end:
    t = time.monotonic()
    try:
        conn.request("GET", url.path)
        r = conn.getresponse(); r.read()
    except OSError:  # a timeout counts as the wait it was (>= 30 s)
        conn.close(); conn = connect()
    print(f"{(time.monotonic() - t) * 1000:.3f}", flush=True)
    time.sleep(max(0.0, 0.02 - (time.monotonic() - t)))
PY
}

run_attack() { # phase: attackers posting while the prober runs
  local phase=$1 apids=() i
  : >"$work/answers-$phase"
  for i in $(seq "$attackers"); do
    case "$phase" in
      bomb) if [ $((i % 2)) -eq 1 ]; then
              attacker "$work/bomb-soap.xml" "$base/soap/v1" 'application/soap+xml; charset=utf-8; action="urn:tp:echo#echo"' "$work/answers-$phase" &
            else
              attacker "$work/bomb-xml.xml" "$base/xml/v1/x" application/xml "$work/answers-$phase" &
            fi;;
      capped) attacker "$work/capped-xml.xml" "$base/xml/v1/x" application/xml "$work/answers-$phase" &;;
    esac
    apids+=($!); pids+=($!)
  done
  sleep 1 # the attack is under way before the first probe
  probe "$phase" "$seconds"
  for i in "${apids[@]}"; do kill "$i" 2>/dev/null || true; done
  wait "${apids[@]}" 2>/dev/null || true
}

probe quiet "$seconds"
run_attack bomb
run_attack capped

python3 - "$work" "$attackers" "$seconds" "$workers" "$bin" <<'PY'
import sys, statistics as st
w, attackers, seconds, workers, binary = sys.argv[1:]
def pct(v, p): v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))]
print(f"\nopen API waits (ms), {seconds}s per phase, {attackers} attackers, gateway workers {workers}, {binary}\n")
print("| phase | probes | p50 | p99 | max | added p99 | attack answers | attack answer p50 | verdict |")
print("|---|---|---|---|---|---|---|---|---|")
ok = True
quiet = None
for phase in ("quiet", "bomb", "capped"):
    waits = [float(x) for x in open(f"{w}/probe-{phase}") if x.strip()]
    answers, verdict, times = "-", "-", []
    if phase != "quiet":
        lines = [l.split() for l in open(f"{w}/answers-{phase}") if l.strip()]
        codes = {}
        for code, t in lines:
            codes[code] = codes.get(code, 0) + 1
            times.append(float(t) * 1000)
        answers = ", ".join(f"{n} x {c}" for c, n in sorted(codes.items()))
    p99 = pct(waits, 0.99)
    added = "-"
    if phase == "quiet":
        quiet = p99
    else:
        good = p99 - quiet < 50
        ok &= good
        added = f"{p99 - quiet:.2f}"
        verdict = "PASS" if good else "FAIL"
    tp50 = f"{st.median(times):.1f} ms" if times else "-"
    print(f"| {phase} | {len(waits)} | {st.median(waits):.2f} | {p99:.2f} | {max(waits):.2f} | {added} | {answers} | {tp50} | {verdict} |")
print("\nPASS" if ok else "\nFAIL", "(the wait each attack adds to the open API's p99 < 50 ms)")
PY
