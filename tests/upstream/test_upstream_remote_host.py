"""The upstreams family on a remote adapter host: the registry, the catalogue and MCP federation's resources stay
in the gateway (its hub), tool calls run on the host's own sessions to the upstream servers; a workflow step's call
of an upstream tool (a nested call) reaches the host too, and another company's call never does."""

from __future__ import annotations

import asyncio
import time

import httpx
from upstream_support import MOTOR, PEPPER, UpstreamProcess

from conftest import Template
from forecourt.adapters.remote import RemoteAdapter
from remote.support import SECRET, SECRET_ENV, Pair, remote_pair
from workflows.bpmn_builder import chain, script, service


async def _register(pair: Pair, url: str) -> None:
    async with httpx.AsyncClient(base_url=pair.gateway.base_url, timeout=30) as client:
        response = await client.put(
            f"/admin/v1/companies/{MOTOR}/upstreams/up",
            json={"url": url, "mode": "legacy"},
            headers={"Authorization": f"Bearer {pair.keys['admin']}"},
        )
    assert response.status_code == 200, response.text
    deadline = time.monotonic() + 20
    while pair.gateway.services.catalogue.get("up.echo") is None:  # the gateway's hub lists the tools (bounded)
        assert time.monotonic() < deadline, "the gateway did not list the upstream's tools"
        await asyncio.sleep(0.05)


async def test_an_upstream_tool_registered_in_the_gateway_is_called_on_the_upstreams_host(
    upstream_template: Template, upstream: UpstreamProcess, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    template = (upstream_template.path, upstream_template.keys)
    with remote_pair(template, tmp_path, "upstreams", pepper=PEPPER) as pair:
        assert isinstance(pair.gateway.services.catalogue.adapter_for_id("upstream"), RemoteAdapter)
        await _register(pair, upstream.url)
        assert pair.host.host.calls == 0  # the registry is the gateway's
        response = await pair.rest("up.echo", {"text": "hello"})
        assert response.status_code == 200, response.text
        assert response.json()["result"]["output"]["content"][0]["text"] == "hello"
        assert pair.host.host.calls == 1  # registered after the host started: it synced on its first call
        records = await pair.audit(response.json()["audit"]["trace"], count=1)
        assert [(r.action, r.status_code) for r in records] == [("up.echo", 200)]


async def test_a_workflow_step_calling_an_upstream_tool_reaches_the_host_as_the_runs_caller(
    upstream_template: Template, upstream: UpstreamProcess, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    template = (upstream_template.path, upstream_template.keys)
    bpmn = chain(
        "ask_upstream",
        service("add", "up.add", {"a": "2", "b": "3"}, result="added"),
        script("keep", 'artifacts["sum"] = added["structuredContent"]["sum"]'),
    )
    with remote_pair(template, tmp_path, "upstreams", pepper=PEPPER) as pair:
        await _register(pair, upstream.url)
        upload = {"company_id": MOTOR, "workflow_id": "ask_upstream", "bpmn": bpmn}
        await pair.result("admin.workflows.upload", upload, key="admin")
        run = await pair.result("workflow.run", {"dealership_id": "demo-toyota-sf", "workflow_id": "ask_upstream"})
        assert (run["status"], run["artifacts"]["sum"]) == ("completed", 5)
        assert pair.host.host.calls == 1


async def test_another_companys_call_is_refused_in_the_gateway_and_a_dead_upstream_is_retryable(
    upstream_template: Template, upstream: UpstreamProcess, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    template = (upstream_template.path, upstream_template.keys)
    with remote_pair(template, tmp_path, "upstreams", pepper=PEPPER) as pair:
        await _register(pair, upstream.url)
        upstream.kill()  # before the host ever reached it: the host cannot list the tool the gateway vouches for
        down = await pair.rest("up.echo", {"text": "hello"})
        assert down.json()["status"]["error"]["code"] == "upstream.unavailable", down.text
        assert down.json()["status"]["error"]["retryable"] is True
        refused = await pair.rest("up.echo", {"text": "hello"}, key="bay")
        assert refused.json()["status"]["error"]["code"] == "action.unknown"
        assert pair.host.host.calls == 0  # neither reached an upstream adapter on the host
