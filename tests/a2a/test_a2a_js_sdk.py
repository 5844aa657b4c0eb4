"""@a2a-js/sdk (Node) reads the dealer agent's card and calls inventory.search and lead.submit on both bindings.

The Node package is installed by ``scripts/install-node-deps.sh`` (CI runs it before the tests); without
it, or without node, the test skips with the reason, except in CI where it must run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from aap.support import TOYOTA, LiveServer, build_template, settings_for
from forecourt.bootstrap import create_app
from forecourt.domain.aap_spec import errors

ROOT = Path(__file__).resolve().parents[2]
PREFIX = Path(os.environ.get("A2A_JS_PREFIX", ROOT / ".cache" / "node"))
SCRIPT = ROOT / "scripts" / "a2a_js_client.mjs"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _require_node() -> str:
    node = shutil.which("node")
    installed = (PREFIX / "node_modules" / "@a2a-js" / "sdk" / "package.json").exists()
    if node and installed:
        return node
    reason = (
        "node is not installed"
        if not node
        else f"@a2a-js/sdk is not installed in {PREFIX}; run scripts/install-node-deps.sh"
    )
    if IN_CI:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    directory = tmp_path_factory.mktemp("a2a-js")
    db = directory / "forecourt.db"
    asyncio.run(build_template(db))
    live = LiveServer(create_app(settings_for(db))).start()
    try:
        yield live
    finally:
        live.stop()


def test_the_js_a2a_client_discovers_the_card_and_calls_search_and_lead_submit_on_both_bindings(
    server: LiveServer,
) -> None:
    node = _require_node()
    run = subprocess.run(
        [node, str(SCRIPT), f"{server.url}/dealers/{TOYOTA}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "A2A_JS_PREFIX": str(PREFIX)},
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    results = {r["binding"]: r for r in map(json.loads, run.stdout.strip().splitlines())}
    assert set(results) == {"JSONRPC", "HTTP+JSON"}
    for binding, r in results.items():
        assert r["transport"] == binding
        assert r["search_media_type"] == "application/vnd.autoagent.inventory-search-response+json"
        assert errors("inventory-search-response.schema.json", r["search"]) == []
        assert r["search"]["data"]["total"] > 0
        assert errors("lead-submit-response.schema.json", r["lead"]) == []
        assert r["lead"]["data"]["status"] == "received"
    assert results["JSONRPC"]["error"] == "SCHEMA_VALIDATION_FAILED"  # error.data is exposed over JSON-RPC
    assert results["HTTP+JSON"]["error"] == 422
