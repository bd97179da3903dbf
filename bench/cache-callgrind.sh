#!/usr/bin/env bash
# User-space instructions per request of the gateway (valgrind callgrind) for the response
# cache's miss path (issue 27), the load-independent measure bench/cache.sh's wall-clock
# ratios can't resolve on a shared box. Every request carries a new query (`?n=I`), so
# every cached request is a miss. APIs (one gateway file):
#   open     no cache;
#   miss     `cache: { ttl: 60s, admission: always }`: every answer looked up, led, stored
#            (a miss that stores);
#   nostore  `cache: { ttl: 60s, statuses: [404], admission: always }`: the 200s are not
#            storable, so a miss that decides from the head not to store (the "configured,
#            not storable" case);
#   auto     `cache: { ttl: 60s }`, the default (adaptive) admission, once its store went selective
#            (a burst of new keys: what a user meets there): a key asked once is looked
#            up, counted and not stored. Its gateway runs with
#            TURNPIKE_CACHE_ADMISSION_WINDOW=64: under valgrind a gateway serves a few
#            hundred requests a second, too slow for a 4096-lookup window to switch the
#            store (it must take under a second); with 64 the store goes selective from
#            the 128th request, before N1, and each request pays 1/64 of a window's close
#            instead of 1/4096. (Four letters, as `once`, `miss` and `open`: each letter
#            of the path costs ~25 instructions in the gateway's path handling.)
#   (`admission: always` and the `auto` arm's selective mode only for binaries that
#   have adaptive admission: an older one's cache stores every miss, and refuses the
#   field. Each binary gets its own file.)
#   hit      the `miss` API's cache asked for one path again and again: every request
#            after the first is a hit.
#   once     `cache: { ttl: 60s, min_uses: 2 }` (not by default; binaries that know
#            `min_uses`): every key asked once, so no miss stores (looked up, counted).
#   open10k, miss10k (not by default): `open` and `miss` with 10 KiB answers
#            (`?size=10240`), the issue's other answer size.
#   twice    (not by default) the `miss` API's keys each asked twice in a row: a storing
#            miss, then the entry's first hit (which builds the head's map): per request
#            the mean of the two.
# Each count is (instructions after N2 GETs - after N1) / (N2 - N1), each run in its own
# gateway process under callgrind (startup and warm-up cancel out).
#
# Usage: bench/cache-callgrind.sh BIN [BIN...] [--n1 300] [--n2 1500] [--keep DIR]
# (APIS="miss hit" measures only those, and the gateway's file holds only those.) With a default 64 MiB store the cold part of
# S3-FIFO (3 %) holds about 2,500 of these entries: --n1 above that measures a miss that
# also evicts an older one (the steady state of a stream of new keys); 10 KiB entries
# evict from about the 200th on. Entries still held when the gateway stops are dropped
# then, inside the count: every stored entry's drop is counted either way.
# --keep DIR keeps each run's callgrind.out (BINNAME.API.N) for callgrind_annotate.
# Needs: valgrind, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/callgrind-args.sh
callgrind_args 300 1500 "$@"

# work, pids, cleanup, free_port, wait_port (a gateway under callgrind starts slowly: 60 s).
TURNPIKE_BIN=${bins[0]} WAIT_PORT_TRIES=600
. bench/lib.sh

echo_port=$(free_port)
"${bins[0]}" echo --port "$echo_port" --threads 1 --size 50 >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"

api() { # name policies
  cat <<YAML
  - name: $1
    context: /$1
    version: v1
    endpoints: ["http://127.0.0.1:$echo_port"]
    resources:
      - { path: "/*", methods: [GET] }
$2
YAML
}
apis=${APIS:-open miss nostore hit}
for i in "${!bins[@]}"; do
  always=$(admission_always "${bins[$i]}")
  {
    echo "apis:"
    for a in $apis; do
      case $a in
        open) api open "";;
        open10k) api open10k "";;
        miss|miss10k|twice) api "$a" "    policies: [ { cache: { ttl: 60s$always } } ]";;
        hit|auto) api "$a" "    policies: [ { cache: { ttl: 60s } } ]";;
        nostore) api nostore "    policies: [ { cache: { ttl: 60s, statuses: [404]$always } } ]";;
        once) api once "    policies: [ { cache: { ttl: 60s, min_uses: 2 } } ]";;
        *) echo "unknown API $a" >&2; exit 2;;
      esac
    done
  } >"$work/apis-$i.yaml"
done

# Sends N keep-alive GETs with a new query each on one connection (the same path each
# time for the hit API; 10 KiB answers for the *10k APIs); every answer must be 200.
cat >"$work/client.py" <<'PY'
import http.client, sys
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
size = "size=10240&" if "10k/" in path else ""
asks = 2 if path.startswith("/twice/") else 1
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
for i in range(n):
    c.request("GET", path if path.startswith("/hit/") else f"{path}?{size}n={i // asks}")
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"request {i}: {r.status}")
PY

count() { # binary-index path n -> Ir
  local bin=${bins[$1]} config="$work/apis-$1.yaml" path=$2 n=$3 port out window=
  port=$(free_port); out="$work/cg.$port"
  [[ $path != /auto/* ]] || window=64
  TURNPIKE_LOG=warn env ${window:+TURNPIKE_CACHE_ADMISSION_WINDOW=$window} valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$bin" gateway --config "$config" --workers 1 --http-port "$port" \
    --https-port off --data-dir "$work/data" --analytics off >"$work/gw-$port.log" 2>&1 &
  local pid=$!
  wait_port "$port"
  python3 "$work/client.py" "$port" "$path" "$n"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  grep -m1 '^summary:' "$out" | awk '{print $2}'
  if [ -n "$keep" ]; then
    mkdir -p "$keep"; cp "$out" "$keep/$(basename "$bin").${path//\//_}.$n"
  fi
}

printf '%-40s %-8s %s\n' binary api instructions/request
for i in "${!bins[@]}"; do
  bin=${bins[$i]}
  for api in $apis; do
    a=$(count "$i" "/$api/v1/x" "$n1")
    b=$(count "$i" "/$api/v1/x" "$n2")
    printf '%-40s %-8s %s\n' "$bin" "$api" $(( (b - a) / (n2 - n1) ))
  done
done
