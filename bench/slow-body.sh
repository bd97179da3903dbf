#!/usr/bin/env bash
# Slow request bodies (issue 25 item 11): while N hostile clients each send a POST body a
# byte every 100 ms, how long does a request to an unrelated open API wait? Both APIs
# proxy to one back end (`turnpike echo`) that takes at most `--backend-conns`
# connections from the gateway (`--max-upstream-connections`, standing for a back end
# with a bounded connection or thread pool, as servlet containers have); the unrelated
# API's connect timeout is 1 s. Three phases, each timing `--requests` sequential GETs to
# the unrelated API (one keep-alive client):
#   baseline   no hostile client;
#   buffered   N slow POSTs to an API with request buffering (the default): the bodies
#              are read at the gateway, no back-end connection is taken;
#   streamed   N slow POSTs to an API with `request_buffering: { enabled: false }`: each
#              holds a back-end connection while its body trickles (the behaviour before
#              buffering), so the unrelated API waits for a free one, up to its timeout.
# Prints p50 / max wait per phase (the request's time minus the baseline's p50), the
# back-end connections the hostile clients hold (ss, established gateway -> back end,
# minus those held before they started), non-2xx answers, and PASS/FAIL: the buffered
# phase's max wait < 50 ms.
#
# Usage: [TURNPIKE_BIN=...] bench/slow-body.sh [--clients 50] [--requests 20] [--backend-conns 32]
# Needs: python3, ss (iproute2).
set -euo pipefail
cd "$(dirname "$0")/.."

clients=50; requests=20; backend_conns=32
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) clients=$2; shift 2;;
    --requests) requests=$2; shift 2;;
    --backend-conns) backend_conns=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done

. bench/lib.sh

echo_port=$(free_port); gw_port=$(free_port)
cat >"$work/apis.yaml" <<YAML
apis:
  - name: open
    context: /open
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    timeouts: { connect: 1s }
    resources: [{ path: "/*", methods: [GET] }]
  - name: buffered
    context: /buffered
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources: [{ path: "/*", methods: [POST] }]
  - name: streamed
    context: /streamed
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    request_buffering: { enabled: false }
    resources: [{ path: "/*", methods: [POST] }]
YAML

"$bin" echo --port "$echo_port" >"$work/echo.log" 2>&1 &
pids+=($!)
TURNPIKE_LOG=warn "$bin" gateway --config "$work/apis.yaml" --http-port "$gw_port" \
  --https-port off --data-dir "$work/data" --max-upstream-connections "$backend_conns" \
  >"$work/gw.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"; wait_port "$gw_port"

python3 - "$gw_port" "$echo_port" "$clients" "$requests" <<'PY'
import http.client, socket, statistics, subprocess, sys, threading, time
gw, echo, clients, requests = (int(a) for a in sys.argv[1:])

def backend_conns():
    out = subprocess.run(["ss", "-Htn", "state", "established", f"( dport = :{echo} )"],
                         capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.strip())

def time_requests():
    c = http.client.HTTPConnection("127.0.0.1", gw, timeout=30)
    times, bad = [], 0
    for _ in range(requests):
        t = time.perf_counter()
        c.request("GET", "/open/v1/x")
        r = c.getresponse(); r.read()
        times.append((time.perf_counter() - t) * 1000)
        if r.status != 200:
            bad += 1
        if r.getheader("connection", "").lower() == "close":
            c.close(); c = http.client.HTTPConnection("127.0.0.1", gw, timeout=30)
    c.close()
    return times, bad

def hostile(path, stop, started):
    s = socket.create_connection(("127.0.0.1", gw))
    # 600 bytes: 60 s at this rate, longer than a phase; small enough for the in-task
    # client, which shares the pooled connections with the unrelated API's GETs.
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: a\r\nContent-Length: 600\r\n\r\n".encode())
    started.release()
    try:
        while not stop.is_set():
            s.sendall(b"x"); time.sleep(0.1)
    except OSError:
        pass
    s.close()

def phase(name, path, base_p50):
    stop, started = threading.Event(), threading.Semaphore(0)
    before = backend_conns()
    threads = []
    if path:
        threads = [threading.Thread(target=hostile, args=(path, stop, started)) for _ in range(clients)]
        for t in threads: t.start()
        for _ in threads: started.acquire()
        time.sleep(1.0)  # every hostile head is in, bodies trickling
    held = backend_conns() - before
    times, bad = time_requests()
    stop.set()
    for t in threads: t.join()
    p50 = statistics.median(times)
    base = base_p50 if base_p50 is not None else p50
    wait = [t - base for t in times]
    print(f"{name:9} p50 {p50:8.2f} ms  max {max(times):8.2f} ms  wait p50 {statistics.median(wait):8.2f} ms"
          f"  max {max(wait):8.2f} ms  non-2xx {bad}/{len(times)}  back-end conns held by hostile {held}")
    time.sleep(1.5)  # the gateway answers or drops the cut bodies
    return p50, max(wait), held

print(f"{clients} slow POSTs (a byte every 100 ms), {requests} GETs to an unrelated API, back end capped at its connections")
base_p50, _, _ = phase("baseline", None, None)
_, buffered_wait, buffered_held = phase("buffered", "/buffered/v1/upload", base_p50)
phase("streamed", "/streamed/v1/upload", base_p50)
ok = buffered_wait < 50
print(f"{'PASS' if ok else 'FAIL'}: buffered max wait {buffered_wait:.2f} ms (target < 50 ms), "
      f"back-end connections held by the slow bodies: {buffered_held}")
sys.exit(0 if ok else 1)
PY
