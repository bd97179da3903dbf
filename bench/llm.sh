#!/usr/bin/env bash
# Issue 30's `llm` rows: what an AI API adds to streamed LLM calls. `turnpike bench llm`
# runs STREAMS concurrent streamed chat calls (each `lorem TOKENS`, paced by the provider
# at TPS tokens a second) against `turnpike echo --llm` directly and through a gateway
# serving examples/ai.yaml (its tier raised so the budget never refuses), in alternating
# rounds (the order swapped every round so drift hits both sides; a stream must start
# after the warm-up and end inside the window to count, so DURATION is kept well over a
# stream's TOKENS/TPS seconds), and prints each
# round and the medians: time to first token p50/p99 on each side, what the gateway
# adds (per-round differences, their median) and the throughput ratio (gateway tokens/s
# over direct tokens/s, per round, its median).
# Targets (issue 30): <= 1 ms added TTFT at p99 under 100 concurrent streams; >= 0.9x
# the direct stream throughput in tokens/s.
#
# RAMP (default 0s: all streams start together, and, being of one length, stay in
# step) spreads the streams' first calls over that time (`bench llm --ramp`), as a
# client population that is not synchronised would; keep it under the 2 s warm-up.
#
# GATEWAY_BIN runs the gateway from another build (the echo and the load from $bin), to
# compare two gateways with the same client and provider.
#
#   TURNPIKE_PROFILE=ci-bench bench/llm.sh      # ROUNDS=5 STREAMS=100 TPS=100 TOKENS=100 DURATION=10s RAMP=0s
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

rounds=${ROUNDS:-5}
streams=${STREAMS:-100}
tps=${TPS:-100}
tokens=${TOKENS:-100}
duration=${DURATION:-10s}
ramp=${RAMP:-0s}

echo_port=$(free_port)
gw_port=$(free_port)
"$bin" echo --llm --llm-tokens-per-second "$tps" --port "$echo_port" >"$work/echo.log" 2>&1 &
pids+=($!)
wait_port "$echo_port"
sed -e "s/127.0.0.1:9000/127.0.0.1:$echo_port/" \
    -e 's/total: 3000, per: minute/total: 1000000000, per: minute/' \
    -e 's/requests: 3000, per: minute/requests: 100000000, per: minute/' \
    examples/ai.yaml >"$work/ai.yaml"
TURNPIKE_LOG=warn "${GATEWAY_BIN:-$bin}" gateway --config "$work/ai.yaml" --http-port "$gw_port" --https-port off \
  --data-dir "$work" >"$work/gateway.log" 2>&1 &
pids+=($!)
wait_port "$gw_port"
key=$(sed -n 's/^# example key: //p' examples/ai.yaml)

run() { # run NAME URL [ARGS...]: round $r's measurement, its JSON in $work/NAME.$r.json
  local name=$1 url=$2; shift 2
  "$bin" bench llm --url "$url" --streams "$streams" --duration "$duration" --warmup 2s --ramp "$ramp" \
    --prompt "lorem $tokens" --max-tokens $((tokens * 2)) --json "$@" >"$work/$name.$r.json"
}
direct="http://127.0.0.1:$echo_port/v1/chat/completions"
gateway="http://127.0.0.1:$gw_port/ai/v1/chat/completions"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    run direct "$direct"; run gateway "$gateway" --api-key "$key"
  else
    run gateway "$gateway" --api-key "$key"; run direct "$direct"
  fi
done

python3 - "$work" "$rounds" "$streams" "$tps" "$tokens" "$ramp" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
direct = [json.load(open(f"{work}/direct.{r}.json")) for r in range(1, rounds + 1)]
gateway = [json.load(open(f"{work}/gateway.{r}.json")) for r in range(1, rounds + 1)]
streams, tps, tokens = sys.argv[3:6]
print(f"llm: {streams} concurrent streams, {tokens} tokens each at {tps} tokens/s, starts spread over {sys.argv[6]}, {len(direct)} alternating rounds")
print("round  direct p50/p99 ms  gateway p50/p99 ms  added p99 ms  tokens/s direct  gateway  ratio  errors d/g")
for i, (d, g) in enumerate(zip(direct, gateway), 1):
    print(f"{i:5}  {d['ttft_p50_ms']:7.2f}/{d['ttft_p99_ms']:7.2f}  {g['ttft_p50_ms']:7.2f}/{g['ttft_p99_ms']:7.2f}"
          f"  {g['ttft_p99_ms'] - d['ttft_p99_ms']:11.2f}  {d['tokens_per_second']:15.0f}  {g['tokens_per_second']:7.0f}"
          f"  {g['tokens_per_second'] / max(d['tokens_per_second'], 1e-9):5.3f}  {d['errors']}/{g['errors']}")
med = lambda xs: statistics.median(xs)
added50 = med([g['ttft_p50_ms'] - d['ttft_p50_ms'] for d, g in zip(direct, gateway)])
added99 = med([g['ttft_p99_ms'] - d['ttft_p99_ms'] for d, g in zip(direct, gateway)])
ratio = med([g['tokens_per_second'] / max(d['tokens_per_second'], 1e-9) for d, g in zip(direct, gateway)])
print(f"median TTFT direct p50 {med([d['ttft_p50_ms'] for d in direct]):.2f} ms p99 {med([d['ttft_p99_ms'] for d in direct]):.2f} ms;"
      f" gateway p50 {med([g['ttft_p50_ms'] for g in gateway]):.2f} ms p99 {med([g['ttft_p99_ms'] for g in gateway]):.2f} ms")
print(f"added TTFT (median of rounds): p50 {added50:.3f} ms, p99 {added99:.3f} ms (target <= 1 ms: {'met' if added99 <= 1 else 'MISSED'})")
print(f"tokens/s gateway/direct (median of rounds): {ratio:.3f}x (target >= 0.9x: {'met' if ratio >= 0.9 else 'MISSED'})")
EOF
