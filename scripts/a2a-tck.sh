#!/usr/bin/env bash
# Runs the A2A project's TCK (github.com/a2aproject/a2a-tck, branch 1.0-dev: A2A v1.0.0) against a dealer agent
# and the gateway agent of a Forecourt started here with `forecourt serve --dev` on a scratch database.
#
#   scripts/a2a-tck.sh                       # MUST requirements, both agents
#   A2A_TCK_LEVEL=all scripts/a2a-tck.sh     # every level (SHOULD failures are expected failures)
#
# Everything happens in a scratch folder (A2A_TCK_WORK, default a new mktemp -d): the TCK's source (a git clone
# of A2A_TCK_REPO at A2A_TCK_REF, or a copy of the checkout named by A2A_TCK_SRC), its own virtualenv (pip, from
# PyPI), the database, the logs and the reports. Nothing of the TCK enters this repository. It needs network to
# GitHub and PyPI, so it is not part of `make test`; docs/a2a.md says what the last run found.
#
# The TCK sends no credentials, and the gateway agent answers nothing without one: its run goes through
# scripts/a2a_tck_proxy.py (run with Forecourt's own Python), which adds a demo member's API key and rewrites the
# TCK's scenario messages as gateway actions. The dealer agent of a public dealership is tested as it is, and
# again through the proxy as a keyed client (the key added, nothing rewritten).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${FORECOURT_PYTHON:-$ROOT/.venv/bin/python}"
FORECOURT="$ROOT/.venv/bin/forecourt"
WORK="${A2A_TCK_WORK:-$(mktemp -d -t a2a-tck.XXXXXX)}"
REPO="${A2A_TCK_REPO:-https://github.com/a2aproject/a2a-tck.git}"
REF="${A2A_TCK_REF:-1.0-dev}"
LEVEL="${A2A_TCK_LEVEL:-must}"
DEALER="${A2A_TCK_DEALER:-demo-toyota-sf}"
mkdir -p "$WORK"
echo "scratch folder: $WORK"

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_http() {
  for _ in $(seq 1 150); do
    if curl -fsS -o /dev/null "$1"; then return 0; fi
    sleep 0.2
  done
  echo "not reachable: $1" >&2
  return 1
}

# 1. The TCK and its virtualenv.
if [ ! -d "$WORK/tck" ]; then
  if [ -n "${A2A_TCK_SRC:-}" ]; then
    git clone -q --branch "$REF" "$A2A_TCK_SRC" "$WORK/tck"
  else
    git clone -q --depth 1 --branch "$REF" "$REPO" "$WORK/tck"
  fi
fi
echo "TCK: $(git -C "$WORK/tck" log -1 --format='%h %s')"
if [ ! -x "$WORK/venv/bin/python" ]; then
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q -e "$WORK/tck"
fi

# 2. Forecourt, serve --dev on a scratch database with the demo tenants.
export FORECOURT_DATABASE_URL="sqlite+aiosqlite:///$WORK/forecourt.db"
export FORECOURT_LOG_LEVEL="${FORECOURT_LOG_LEVEL:-WARNING}"
# The TCK's webhook receiver listens on this machine: push notifications to loopback are allowed for this run.
export FORECOURT_ALLOW_PRIVATE_TARGETS=true
"$FORECOURT" db upgrade >"$WORK/setup.log" 2>&1
"$FORECOURT" demo >>"$WORK/setup.log" 2>&1
KEY="$("$FORECOURT" keys create --company demo-motor-group --member crm-agent --name a2a-tck --json |
  "$PY" -c 'import json,sys; print(json.load(sys.stdin)["key"])')"
PORT="$(free_port)"
"$FORECOURT" serve --dev --host 127.0.0.1 --port "$PORT" >"$WORK/forecourt.log" 2>&1 &
SERVER=$!
PROXY=""
cleanup() {
  [ -n "$PROXY" ] && kill "$PROXY" 2>/dev/null || true
  kill "$SERVER" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
wait_http "http://127.0.0.1:$PORT/healthz"

# 3. The proxy in front of the gateway agent: the credential, and the TCK's scenarios as gateway actions.
PROXY_PORT="$(free_port)"
FORECOURT="http://127.0.0.1:$PORT" KEY="$KEY" DEALER="$DEALER" PORT="$PROXY_PORT" "$PY" "$ROOT/scripts/a2a_tck_proxy.py" >"$WORK/proxy.log" 2>&1 &
PROXY=$!
wait_http "http://127.0.0.1:$PROXY_PORT/agent/.well-known/agent-card.json"

# 4. The TCK against each agent; its reports are kept per agent.
run_tck() {
  local name="$1" url="$2" level_args=()
  [ "$LEVEL" != "all" ] && level_args=(--level "$LEVEL")
  echo
  echo "== $name: $url"
  (cd "$WORK/tck" && rm -rf reports && "$WORK/venv/bin/python" run_tck.py --sut-host "$url" "${level_args[@]}" \
    -- -q -p no:cacheprovider) | tee "$WORK/$name.txt" | tail -40 || true
  rm -rf "$WORK/reports-$name"
  if [ -d "$WORK/tck/reports" ]; then cp -r "$WORK/tck/reports" "$WORK/reports-$name"; fi
  "$PY" - "$WORK/reports-$name/compatibility.json" "$name" <<'PYEOF'
import collections, json, sys

report = json.load(open(sys.argv[1]))
for level in ("MUST", "SHOULD", "MAY"):
    found = {k: v for k, v in report["per_requirement"].items() if v["level"] == level}
    counts = collections.Counter(v["status"] for v in found.values())
    failed = sorted(k for k, v in found.items() if v["status"] == "FAIL")
    print(f"{sys.argv[2]} {level}: " + ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())), *failed)
PYEOF
}
run_tck gateway "http://127.0.0.1:$PROXY_PORT/agent"
run_tck dealer "http://127.0.0.1:$PORT/dealers/$DEALER"
# The same dealer agent as a keyed buyer agent sees it: through the proxy, which adds the key and rewrites nothing
# under /dealers/. An anonymous caller's tasks belong to that one request (surfaces/a2a/owners.py), so only a
# keyed client can read a task back, configure its push notifications or send it a follow-up.
run_tck dealer-keyed "http://127.0.0.1:$PROXY_PORT/dealers/$DEALER"

echo
echo "reports and logs: $WORK (reports-gateway/, reports-dealer/, reports-dealer-keyed/, forecourt.log)"
if grep -Ei '"level": ?"(error|critical)"' "$WORK/forecourt.log" >/dev/null; then
  echo "forecourt.log has ERROR lines:"
  grep -Ei '"level": ?"(error|critical)"' "$WORK/forecourt.log" | head -20
else
  echo "forecourt.log has no ERROR line"
fi
