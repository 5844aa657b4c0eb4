#!/usr/bin/env bash
# Two checkouts of Forecourt side by side with the bare SDK server (../shared/peers), result cache off (CACHE=true
# for every call a cache hit), both eras, in one session: each Forecourt row follows a fresh A row.
#   BEFORE=/path/to/older/checkout/src bench/peers_before_after.sh     (from this checkout; its .venv installed)
# The older checkout runs on this checkout's venv (PYTHONPATH puts its src first), so it must need no other packages.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEFORE=${BEFORE:?set BEFORE to the older checkout src folder}
CACHE=${CACHE:-false}
cd "$ROOT/../shared/peers"
DB=$(mktemp -d)/fc.db; PORT=8199
export FORECOURT_DATABASE_URL="sqlite+aiosqlite:///$DB" FORECOURT_API_KEY_PEPPER=bench-pepper-0123456789abcdef \
  FORECOURT_RATE_COMPANY_PER_MINUTE=1000000000 FORECOURT_RATE_MEMBER_PER_MINUTE=1000000000 \
  FORECOURT_RATE_ACTION_PER_MINUTE=1000000000 FORECOURT_RATE_ANONYMOUS_PER_MINUTE=1000000000 FORECOURT_LOG_LEVEL=WARNING
F=$ROOT/.venv/bin/forecourt
$F db upgrade >/dev/null 2>&1; $F demo >/dev/null 2>&1
KEY=$($F keys create --company demo-motor-group --member crm-agent --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
ARGS='{"dealership_id":"demo-toyota-sf","limit":20}'
for which in before after; do
  if [ $which = before ]; then PP=$BEFORE; else PP=$ROOT/src; fi
  PYTHONPATH=$PP FORECOURT_CACHE_ENABLED=$CACHE taskset -c 0 $F serve --dev --host 127.0.0.1 --port $PORT >logs/fc-$which.log 2>&1 & SPID=$!
  for _ in $(seq 120); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.5; done
  for style in modern legacy; do
    EXT_NAME="F_${which}_${style}_cache_$CACHE" EXT_URL="http://127.0.0.1:$PORT/mcp" EXT_API_KEY=$KEY EXT_TOOL=inventory.search \
      EXT_ARGS=$ARGS EXT_STYLE=$style TARGETS="A" CONNS="8 32" ./run.sh
  done
  kill $SPID; wait $SPID 2>/dev/null || true
done
