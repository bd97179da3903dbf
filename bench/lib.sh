# Shared by the bench scripts that start their own processes on loopback (sourced):
#   bin        the turnpike binary: $TURNPIKE_BIN, else a fresh build of profile
#              $TURNPIKE_PROFILE (`release` when unset; `ci-bench` skips LTO);
#   work       a temporary directory, removed on exit with every pid in `pids`;
#   free_port  an unused 127.0.0.1 port;
#   wait_port  waits (10 s; $WAIT_PORT_TRIES tenths of a second) until a port accepts connections;
#   cpu_ticks  user + system clock ticks of the processes given (all their threads);
#   to_us      a wrk latency (`1.23ms`, `850.00us`, `1.2s`) in microseconds;
#   cache_api  writes $work/NAME.yaml: one open API /api/v1 (GET /*) in front of the echo
#              on ECHO_PORT, with a policies line when given (bench/cache*.sh);
#   admission_always  prints `, admission: always` for a binary whose cache has adaptive
#              admission (docs/caching.md, "Admission"), nothing for an older one (whose
#              every miss stores, and which refuses the field): a cache arm that must
#              store every miss appends it to its settings;
#   nginx_start  nginx with one worker pinned to core 1, its http block's body read from
#              stdin (after the shared part: logs off, temp paths in $work/nginx);
#   nginx_worker_pid  the pid of that worker, once a port it serves is open;
#   echo_apart `turnpike echo --threads 1` on core 1 (core 0 on one CPU), waited for; sets
#              echo_cpu, gen_cpu (core 0, for the load generator) and url (its /bench).
if [ -n "${TURNPIKE_BIN:-}" ]; then bin=$TURNPIKE_BIN; else
  profile=${TURNPIKE_PROFILE:-release}
  cargo build --profile "$profile" -p turnpike >/dev/null; bin=target/$profile/turnpike; fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq "${WAIT_PORT_TRIES:-100}"); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
to_us() { awk -v v="$1" 'BEGIN{ if (v ~ /us$/) {sub(/us$/,"",v); print v+0} else if (v ~ /ms$/) {sub(/ms$/,"",v); print v*1000} else if (v ~ /s$/) {sub(/s$/,"",v); print v*1000000} else print v }'; }
echo_apart() {
  if [ "$(nproc)" -ge 2 ]; then gen_cpu=0; echo_cpu=1; else gen_cpu=0; echo_cpu=0; fi
  local port; port=$(free_port)
  taskset -c "$echo_cpu" "$bin" echo --port "$port" --threads 1 >/dev/null 2>&1 &
  pids+=($!)
  wait_port "$port"
  url="http://127.0.0.1:$port/bench"
}
admission_always() { if grep -qa turnpike_cache_unadmitted_total "$1"; then echo ", admission: always"; fi; }
cache_api() { # name echo-port [policies-line]
  cat >"$work/$1.yaml" <<YAML
apis:
  - name: api
    context: /api
    version: v1
    endpoints: ["http://127.0.0.1:$2"]
    resources:
      - { path: "/*", methods: [GET] }
${3:-}
YAML
}
nginx_start() {
  mkdir -p "$work/nginx"
  {
    cat <<NGINX
worker_processes 1;
worker_cpu_affinity 10;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
NGINX
    cat
    echo "}"
  } >"$work/nginx/nginx.conf"
  taskset -c 1 nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" 2>"$work/nginx/stderr" &
  pids+=($!)
}
nginx_worker_pid() { sleep 0.5; pgrep -P "$(cat "$work/nginx/nginx.pid")" | head -1; }
