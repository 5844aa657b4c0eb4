#!/usr/bin/env bash
# One pinned Forecourt worker (CPU 0) under wrk (CPU 1, the peers' mcp_call.lua), two source trees alternated on one
# demo database: req/s and the worker's CPU per call (the worker and its fsync helper, from /proc/<pid>/stat).
#   BEFORE=/path/to/older/checkout/src bench/ab_http.sh          (from this checkout; its .venv installed)
# Env: ROUNDS (3), CONNS (8), SECS (10), CACHE (true: every call a cache hit; false: every call a store read).
# The older tree runs on this checkout's venv (PYTHONPATH puts it first), so it must need no other packages.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEFORE=${BEFORE:?set BEFORE to the older checkout src folder}
ROUNDS=${ROUNDS:-3}; CONNS=${CONNS:-8}; SECS=${SECS:-10}; CACHE=${CACHE:-true}; PORT=${PORT:-8199}
PEERS=$ROOT/../shared/peers
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
export FORECOURT_DATABASE_URL="sqlite+aiosqlite:///$WORK/fc.db" FORECOURT_API_KEY_PEPPER=bench-pepper-0123456789abcdef \
  FORECOURT_RATE_COMPANY_PER_MINUTE=1000000000 FORECOURT_RATE_MEMBER_PER_MINUTE=1000000000 \
  FORECOURT_RATE_ACTION_PER_MINUTE=1000000000 FORECOURT_RATE_ANONYMOUS_PER_MINUTE=1000000000 FORECOURT_LOG_LEVEL=WARNING
F=$ROOT/.venv/bin/forecourt
$F db upgrade >/dev/null 2>&1; $F demo >/dev/null 2>&1
KEY=$($F keys create --company demo-motor-group --member crm-agent --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
python3 "$PEERS/make_body.py" --style modern --tool inventory.search --args '{"dealership_id":"demo-toyota-sf","limit":20}' >"$WORK/body.json"
HDRS=$(printf 'Accept: application/json, text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: inventory.search\nAuthorization: Bearer %s\n' "$KEY")
cpu_ticks() { local t=0 p; for p in "$1" $(pgrep -P "$1" || true); do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo $t; }
load() { BENCH_BODY_FILE=$WORK/body.json BENCH_HEADERS=$HDRS taskset -c 1 wrk -t1 -c"$CONNS" -d"$1" -s "$PEERS/mcp_call.lua" "http://127.0.0.1:$PORT/mcp"; }
for round in $(seq "$ROUNDS"); do
  for which in before after; do
    if [ $which = before ]; then PP=$BEFORE; else PP=$ROOT/src; fi
    PYTHONPATH=$PP FORECOURT_CACHE_ENABLED=$CACHE taskset -c 0 "$F" serve --dev --host 127.0.0.1 --port "$PORT" >"$WORK/$which.log" 2>&1 &
    SPID=$!
    for _ in $(seq 120); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.5; done
    load 3s >/dev/null
    c0=$(cpu_ticks $SPID)
    out=$(load "${SECS}s" | awk '/^RESULT/ {print $2, $3, $4, $5, $6, $7, $8}')
    c1=$(cpu_ticks $SPID)
    read -r rps p50 p99 n non2xx rpcerr toolerr <<<"$out"
    echo "round $round $which: $rps req/s p50 $p50 ms p99 $p99 ms, $(python3 -c "print(round(($c1-$c0)*10/$n, 3))") ms CPU/call, errors $non2xx/$rpcerr/$toolerr"
    kill $SPID; wait $SPID 2>/dev/null || true
  done
done
