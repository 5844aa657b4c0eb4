"""Probe: a client's malformed request is never an ERROR (issue 11, item 8).

Any anonymous client can send these; if they logged at ERROR, anyone could flood an operator's alerts. Each is
answered with a JSON-RPC or HTTP client error, logged at INFO or below without a stack trace, and counted in
``forecourt_client_faults_total``.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from gateway.support import TOYOTA, Rig

RPC = f"/dealers/{TOYOTA}/a2a/jsonrpc"
REST = f"/dealers/{TOYOTA}/a2a"
_MESSAGE = {
    "messageId": "m-1",
    "role": "ROLE_USER",
    "parts": [{"data": {"type": "dealer.information.request"}, "mediaType": "application/json"}],
}

# (path, body) pairs: every way of being malformed the A2A SDK logs about.
MALFORMED: list[tuple[str, Any]] = [
    (RPC, b"{not json"),
    (RPC, {"jsonrpc": "2.0", "id": True, "method": "SendMessage", "params": {}}),
    (RPC, {"jsonrpc": "2.0", "id": {"a": 1}, "method": "SendMessage", "params": {}}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": 7, "params": {}}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": 5}}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": {"role": "NOPE"}}}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": []}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": "NoSuchMethod", "params": {}}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": "SendStreamingMessage", "params": {"message": _MESSAGE}}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": "SubscribeToTask", "params": {"id": "t-1"}}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": "no-such-task"}}),
    (RPC, {"jsonrpc": "2.0", "id": "1", "method": "CancelTask", "params": {"id": "no-such-task"}}),
    (REST + "/message:send", b"{not json"),
    (REST + "/message:send", {"message": 5}),
    (REST + "/message:send", {"message": {"role": "NOPE", "parts": "x"}}),
    (REST + "/message:stream", {"message": _MESSAGE}),
    (REST + "/tasks/no-such-task:cancel", {}),
]


def _client_faults(rig: Rig) -> float:
    total = 0.0
    for metric in rig.services.metrics.registry.collect():
        if metric.name == "forecourt_client_faults":
            total += sum(s.value for s in metric.samples if s.name.endswith("_total"))
    return total


@pytest.mark.parametrize("anonymous", [True, False], ids=["anonymous", "credentialed"])
async def test_malformed_a2a_requests_log_below_warning_and_are_counted(
    rig: Rig, caplog: pytest.LogCaptureFixture, anonymous: bool
) -> None:
    headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    if not anonymous:
        headers["Authorization"] = f"Bearer {rig.keys['shopper']}"
    before = _client_faults(rig)
    with caplog.at_level(logging.DEBUG):
        for path, body in MALFORMED:
            if isinstance(body, bytes):
                response = await rig.client.post(path, content=body, headers=headers)
            else:
                response = await rig.client.post(path, json=body, headers=headers)
            assert response.status_code < 500, (path, body, response.status_code, response.text[:300])
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith(("a2a", "forecourt"))]
    assert not loud, [(r.name, r.levelname, r.getMessage()[:120]) for r in loud[:5]]
    assert not [r for r in caplog.records if r.exc_info and r.name.startswith("a2a")]
    assert _client_faults(rig) - before >= 8


async def test_a_server_fault_inside_the_a2a_sdk_still_logs_at_error(caplog: pytest.LogCaptureFixture) -> None:
    from forecourt.surfaces.a2a.client_faults import ClientFaultFilter

    record = logging.LogRecord(
        "a2a.server.routes.jsonrpc_dispatcher", logging.ERROR, __file__, 1, "Unhandled exception", (), None
    )
    assert ClientFaultFilter().filter(record)
    assert record.levelno == logging.ERROR
