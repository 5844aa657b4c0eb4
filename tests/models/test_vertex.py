"""vertex.invokeModel through Gateway.invoke and the REST envelope, against a loopback Vertex AI."""

from __future__ import annotations

from typing import Any

import pytest

from fakes.vertex import SECRET_IN_PROVIDER_MESSAGE, google_error
from forecourt.errors import ForecourtError
from forecourt.gateway.credentials import CredentialBroker, GoogleCredentialProvider

from .support import Clock, Rig, error_of

PROMPT = {"model": "gemini-1.5-pro", "input": "Summarize the following doc...", "params": {"temperature": 0.0}}


async def failure(rig: Rig, payload: dict[str, Any] | None = None) -> ForecourtError:
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("vertex.invokeModel", payload or PROMPT)
    return info.value


async def test_a_vertex_call_answers_a_text_completion_with_tokens_and_model(rig, fakes):
    payload = {
        "model": "gemini-1.5-pro",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Is the RAV4 in stock?"}],
        "params": {"temperature": 0.2, "maxOutputTokens": 64, "topK": 5, "stop": ["\n\n"]},
    }
    outcome = await rig.invoke("vertex.invokeModel", payload)
    assert outcome.result_type == "model.textCompletion"
    assert outcome.output == fakes.vertex.reply
    assert outcome.metadata["model"] == "gemini-1.5-pro"
    assert outcome.metadata["tokens"] == 5 + len(fakes.vertex.reply.split())
    assert outcome.metadata["model_version"] == "gemini-1.5-pro-002"
    seen = fakes.vertex.requests[-1]
    assert (seen.project, seen.location, seen.model, seen.stream) == (
        "demo-project",
        "us-central1",
        "gemini-1.5-pro",
        False,
    )
    assert seen.body["systemInstruction"]["parts"][0]["text"] == "Be brief."
    assert seen.body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 64,
        "topK": 5,
        "stopSequences": ["\n\n"],
    }
    assert seen.token == "ya29.fake-1"  # minted by the broker at the service account's token endpoint


async def test_the_rest_envelope_answers_vertex_invoke_model_in_the_seed_shape(rig, fakes):
    response = await rig.rest("vertex.invokeModel", PROMPT)
    assert response.status_code == 200
    body = response.json()
    assert body["inResponseTo"] == "mcp-req:1"
    assert (body["status"]["code"], body["status"]["message"]) == (200, "OK")
    assert body["result"]["type"] == "model.textCompletion"
    assert body["result"]["output"] == fakes.vertex.reply
    assert body["result"]["metadata"]["model"] == "gemini-1.5-pro"
    assert isinstance(body["result"]["metadata"]["tokens"], int)


async def test_the_default_model_is_used_when_the_payload_names_none(rig, fakes):
    outcome = await rig.invoke("vertex.invokeModel", {"input": "Hello"})
    assert outcome.metadata["model"] == "gemini-1.5-pro"
    assert fakes.vertex.requests[-1].model == "gemini-1.5-pro"


async def test_a_streamed_call_assembles_the_server_sent_events_and_counts_the_chunks(rig, fakes):
    outcome = await rig.invoke("vertex.invokeModel", {**PROMPT, "stream": True})
    assert outcome.output == fakes.vertex.reply
    assert outcome.metadata["stream"] is True
    assert outcome.metadata["chunks"] == 5
    assert outcome.metadata["tokens"] == 1 + 0 + len(fakes.vertex.reply.split()) + 3
    assert fakes.vertex.requests[-1].stream is True


async def test_the_adapter_streams_pieces_as_an_async_iterator(rig, fakes):
    adapter = rig.services.catalogue.adapter_for(rig.services.catalogue.get("vertex.invokeModel"))
    credential = await rig.gateway.credentials.issue(
        "vertex", "demo-motor-group", rig.gateway.adapter_configs.defaults["vertex"]
    )
    from forecourt.contract import ExecutionContext
    from forecourt.gateway.base import Principal

    ctx = ExecutionContext(
        action=rig.services.catalogue.get("vertex.invokeModel"),
        principal=Principal(method="internal", company_id="demo-motor-group", member_id=None),
        dealership_id=None,
        company_id="demo-motor-group",
        store=rig.services.store,
        settings=rig.services.settings,
        now=rig.gateway.clock(),
        trace_id="t-stream",
        credential=credential,
        adapter_config=rig.gateway.adapter_configs.defaults["vertex"],
    )
    pieces = [chunk.text async for chunk in adapter.stream(PROMPT, ctx)]
    assert len(pieces) == 5
    assert "".join(pieces) == fakes.vertex.reply


async def test_a_rate_limited_vertex_call_is_retryable_with_retry_after_and_hides_googles_message(rig, fakes):
    fakes.vertex.faults.fail(429, google_error(429), {"Retry-After": "7"})
    response = await rig.rest("vertex.invokeModel", PROMPT)
    assert response.status_code == 429
    error = error_of(response)
    assert error["code"] == "upstream.rate_limited"
    assert error["retryable"] is True
    assert error["details"]["retry_after"] == 7
    assert response.headers["retry-after"] == "7"
    assert SECRET_IN_PROVIDER_MESSAGE not in response.text


async def test_a_rate_limit_while_streaming_maps_the_same_way(rig, fakes):
    fakes.vertex.faults.fail(429, google_error(429), {"Retry-After": "3"})
    error = await failure(rig, {**PROMPT, "stream": True})
    assert (error.code, error.retryable, error.details["retry_after"]) == ("upstream.rate_limited", True, 3)


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (500, "upstream.unavailable", True),
        (503, "upstream.unavailable", True),
        (400, "models.request_rejected", False),
        (403, "upstream.forbidden", False),
        (404, "models.model_not_found", False),
    ],
)
async def test_vertex_errors_map_to_retryable_or_terminal_gateway_errors(rig, fakes, status, code, retryable):
    fakes.vertex.faults.fail(status, google_error(status))
    error = await failure(rig)
    assert (error.code, error.retryable) == (code, retryable)
    assert SECRET_IN_PROVIDER_MESSAGE not in str(error.to_dict())
    assert error.__cause__ is not None  # raised ``from`` the SDK's error


async def test_an_unreachable_vertex_endpoint_is_upstream_unavailable(rig, fakes, closed_port_url):
    await rig.invoke("vertex.invokeModel", PROMPT)  # the token is minted while the token endpoint is up
    rig.gateway.adapter_configs.defaults["vertex"]["base_url"] = closed_port_url + "/"
    adapter = rig.services.catalogue.adapter_for(rig.services.catalogue.get("vertex.invokeModel"))
    adapter.defaults["base_url"] = closed_port_url + "/"
    error = await failure(rig)
    assert (error.code, error.retryable) == ("upstream.unavailable", True)


async def test_a_hanging_vertex_call_fails_with_timeout_within_the_configured_deadline(rig, fakes):
    await rig.invoke("vertex.invokeModel", PROMPT)  # warm: token minted, connection open
    await rig.operator(
        "admin.adapters.upsert",
        {"company_id": "demo-motor-group", "adapter_id": "vertex", "config": {"timeout_s": 1.0}},
    )
    fakes.vertex.faults.hang = True
    response = await rig.rest("vertex.invokeModel", PROMPT)
    assert response.status_code == 504
    assert error_of(response)["code"] == "timeout"
    assert error_of(response)["retryable"] is True
    assert error_of(response)["details"]["timeout_s"] == 1.0
    assert response.json()["audit"]["durationMs"] < 5000
    assert fakes.vertex.faults.hung == 1


async def test_a_credential_that_expires_mid_run_is_replaced_and_a_rejected_one_is_mapped(rig, fakes):
    clock = Clock()
    broker = CredentialBroker(
        providers={"google": GoogleCredentialProvider(now=clock)},
        adapter_defaults=rig.gateway.adapter_configs.defaults,
    )
    rig.gateway.credentials = broker
    fakes.vertex.tokens.expires_in = 420  # short-lived: within the 300 s refresh margin two minutes later

    first = await rig.invoke("vertex.invokeModel", PROMPT)
    assert fakes.vertex.requests[-1].token == "ya29.fake-1"
    clock.advance(60)
    await rig.invoke("vertex.invokeModel", PROMPT)
    assert fakes.vertex.requests[-1].token == "ya29.fake-1"  # still fresh: reused
    clock.advance(70)
    fakes.vertex.tokens.expires_in = 600
    await rig.invoke("vertex.invokeModel", PROMPT)
    assert fakes.vertex.requests[-1].token == "ya29.fake-2"  # near expiry: a new token was minted

    fakes.vertex.tokens.expired.add("ya29.fake-2")  # Vertex considers it expired before the gateway does
    response = await rig.rest("vertex.invokeModel", PROMPT)
    assert response.status_code == 502
    assert error_of(response)["code"] == "upstream.credential_rejected"
    assert error_of(response)["retryable"] is True

    # The gateway told the provider: the next call mints a fresh token at once (no waiting for the refused
    # one to reach its expiry) and succeeds.
    retried = await rig.rest("vertex.invokeModel", PROMPT)
    assert retried.status_code == 200
    assert fakes.vertex.requests[-1].token == "ya29.fake-3"
    assert first.output == retried.json()["result"]["output"]
    broker.close()


async def test_a_credential_limited_to_other_scopes_cannot_invoke_models(rig, fakes):
    response = await rig.rest("vertex.invokeModel", PROMPT, key="crm_leads_only")
    assert response.status_code == 403
    assert error_of(response)["code"] == "auth.insufficient_scope"
    assert error_of(response)["details"]["required_scope"] == "amcp:models:read"
    allowed = await rig.rest("vertex.invokeModel", PROMPT, key="crm_models_read")
    assert allowed.status_code == 200
    assert fakes.vertex.requests  # only the allowed call reached Vertex
    assert len(fakes.vertex.requests) == 1


async def test_a_company_policy_that_excludes_the_model_denies_the_call_before_vertex_sees_it(rig, fakes):
    await rig.operator(
        "admin.policies.upsert",
        {"company_id": "demo-motor-group", "policy": {"id": "demo-motor-group-default", "allowed_models": ["llama*"]}},
    )
    response = await rig.rest("vertex.invokeModel", PROMPT)
    assert response.status_code == 403
    assert error_of(response)["code"] == "policy.denied"
    assert fakes.vertex.requests == []


async def test_vertex_calls_are_audited_with_the_prompt_redacted_by_digest_only(rig, fakes):
    await rig.invoke("vertex.invokeModel", PROMPT)
    assert "vertex.invokeModel" in await rig.audit_actions()


async def test_concurrent_calls_share_one_sdk_client_but_each_sends_its_own_token(rig, fakes):
    import asyncio

    from forecourt.contract import ExecutionContext
    from forecourt.gateway.base import IssuedCredential, Principal

    catalogue = rig.services.catalogue
    adapter = catalogue.adapter_for(catalogue.get("vertex.invokeModel"))
    tokens = [fakes.vertex.tokens.mint() for _ in range(6)]

    def ctx(token: str) -> ExecutionContext:
        return ExecutionContext(
            action=catalogue.get("vertex.invokeModel"),
            principal=Principal(method="internal", company_id=None, member_id=None),
            dealership_id=None,
            company_id=None,
            store=rig.services.store,
            settings=rig.services.settings,
            now=rig.gateway.clock(),
            trace_id="t-concurrent",
            credential=IssuedCredential(kind="bearer", value=token),
            adapter_config=rig.gateway.adapter_configs.defaults["vertex"],
        )

    await asyncio.gather(*(adapter.execute({"input": f"prompt for {t}"}, ctx(t)) for t in tokens))
    sent = {seen.body["contents"][0]["parts"][0]["text"]: seen.token for seen in fakes.vertex.requests}
    assert sent == {f"prompt for {t}": t for t in tokens}
    assert len(adapter._clients._clients) == 1
