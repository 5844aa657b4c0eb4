#!/usr/bin/env bash
# Smoke test of the MCP endpoint with the official MCP Inspector CLI (a TypeScript MCP client).
#
# Self-contained and idempotent: installs @modelcontextprotocol/inspector-cli into .cache/npm (once; ~10 s),
# builds a throwaway SQLite database with the demo tenants and an API key, starts `forecourt serve` on a free
# loopback port, then lists tools, calls inventory.search, reads a resource and lists prompts over
# Streamable HTTP; then, at /mcp?names=llm, lists the LLM-safe names and calls a tool by both of its names. Exits non-zero on the first failure; always stops the server and removes the temp folder.
#
#   scripts/mcp-inspector-smoke.sh            # install if needed, then run
#   scripts/mcp-inspector-smoke.sh --install  # only install the npm package
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${MCP_INSPECTOR_PREFIX:-$ROOT/.cache/npm}"
VERSION="${MCP_INSPECTOR_VERSION:-1.0.3}"
CLI="$PREFIX/node_modules/@modelcontextprotocol/inspector-cli/build/index.js"
BIN="${FORECOURT_BIN:-$ROOT/.venv/bin}"

if [ ! -f "$CLI" ]; then
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/inspector-cli@$VERSION" >&2
fi
[ "${1:-}" = "--install" ] && exit 0

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

PORT="$("$BIN/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
export FORECOURT_DATABASE_URL="sqlite+aiosqlite:///$WORK/forecourt.db"
export FORECOURT_HOST=127.0.0.1 FORECOURT_PORT="$PORT" FORECOURT_PUBLIC_BASE_URL="http://127.0.0.1:$PORT"
export FORECOURT_API_KEY_PEPPER="inspector-smoke-pepper-0123456789" FORECOURT_LOG_LEVEL=WARNING

"$BIN/forecourt" db upgrade >/dev/null
"$BIN/forecourt" demo --vehicles 10 >/dev/null
KEY="$("$BIN/forecourt" keys create --company demo-motor-group --member crm-agent --json | "$BIN/python" -c 'import json,sys; print(json.load(sys.stdin)["key"])')"

"$BIN/forecourt" serve --dev >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 300); do
  if curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; then break; fi
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
  sleep 0.1
done

URL="http://127.0.0.1:$PORT/mcp"
# index.js finds its own package.json relative to the working directory, so run it from its folder.
inspect() { (cd "$(dirname "$CLI")" && node index.js "$URL" --transport http --header "Authorization: Bearer $KEY" "$@"); }
expect() { # expect <what> <needle> <output>
  if ! grep -q -- "$2" <<<"$3"; then echo "FAIL: $1 (no '$2' in output)" >&2; echo "$3" | head -c 2000 >&2; exit 1; fi
  echo "ok: $1"
}

out="$(inspect --method tools/list)"
expect "tools/list names inventory.search" '"inventory.search"' "$out"
expect "tools/list of the crm toolset has dealer.information" '"dealer.information"' "$out"
if grep -q '"aap_inventory_search"' <<<"$out"; then echo "FAIL: the crm toolset lists aap_inventory_search" >&2; exit 1; fi
echo "ok: the crm toolset lists one inventory search"
out="$(inspect --method tools/call --tool-name inventory.search --tool-arg dealership_id=demo-toyota-sf --tool-arg limit=2)"
expect "tools/call inventory.search returns vehicles" '"vin"' "$out"
out="$(inspect --method tools/call --tool-name inventory.search --tool-arg dealership_id=demo-bay-sj)"
expect "tools/call at another company's dealership is a tool error" 'auth.tenancy_denied' "$out"
out="$(inspect --method resources/templates/list)"
expect "resources/templates/list shows the URI scheme" 'automotive://dealers/{dealership_id}/vehicles/{vehicle_id}' "$out"
out="$(inspect --method resources/read --uri automotive://manifest)"
expect "resources/read automotive://manifest" 'automotive_mcp' "$out"
out="$(inspect --method prompts/list)"
expect "prompts/list" 'follow_up_lead' "$out"
expect "prompts/list has the CRM prompts" 'find_suvs_and_book_test_drive' "$out"

URL="http://127.0.0.1:$PORT/mcp?names=llm"
out="$(inspect --method tools/list)"
expect "?names=llm lists inventory_search" '"inventory_search"' "$out"
expect "?names=llm lists deals_request_trade_value" '"deals_request_trade_value"' "$out"
if grep -q '"name": *"[a-z_]*\.' <<<"$out"; then echo "FAIL: ?names=llm lists a dotted name" >&2; exit 1; fi
echo "ok: ?names=llm lists no dotted name"
out="$(inspect --method tools/call --tool-name inventory_search --tool-arg dealership_id=demo-toyota-sf --tool-arg limit=2)"
expect "tools/call inventory_search (LLM-safe name) returns vehicles" '"vin"' "$out"
out="$(inspect --method tools/call --tool-name inventory.search --tool-arg dealership_id=demo-toyota-sf --tool-arg limit=2)"
expect "tools/call inventory.search (canonical name) still works there" '"vin"' "$out"
echo "MCP Inspector smoke test passed"
