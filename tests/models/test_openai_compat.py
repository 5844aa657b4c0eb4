"""openai.invokeModel against a loopback OpenAI-compatible server (what vLLM, Ollama and LM Studio expose)."""

from __future__ import annotations

from typing import Any

import pytest

from fakes.openai import SECRET_IN_PROVIDER_MESSAGE, openai_error, vector
from forecourt.errors import ForecourtError

from .support import Rig, error_of

CHAT = {
    "model": "llama3.1",
    "system": "You are a service advisor.",
    "input": [{"role": "user", "content": "Is my Civic due?"}, {"role": "assistant", "content": "Which year?"}, "2021"],
    "params": {"temperature": 0.1, "maxOutputTokens": 100, "topP": 0.9, "topK": 40, "stop": ["END"], "seed": 7},
}


async def failure(rig: Rig, payload: dict[str, Any]) -> ForecourtError:
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("openai.invokeModel", payload)
    return info.value


async def test_a_chat_completion_is_normalised_to_the_seed_result(rig, fakes):
    outcome = await rig.invoke("openai.invokeModel", CHAT)
    assert outcome.result_type == "model.textCompletion"
    assert outcome.output == fakes.openai.reply
    assert outcome.metadata["model"] == "llama3.1"
    assert outcome.metadata["finish_reason"] == "stop"
    assert outcome.metadata["usage"]["output_tokens"] == len(fakes.openai.reply.split())
    sent = fakes.openai.requests[-1]
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    assert (sent["temperature"], sent["max_tokens"], sent["top_p"], sent["top_k"]) == (0.1, 100, 0.9, 40)
    assert (sent["stop"], sent["seed"]) == (["END"], 7)


async def test_the_rest_envelope_answers_openai_invoke_model(rig, fakes):
    response = await rig.rest("openai.invokeModel", {"input": "Hello"})
    assert response.status_code == 200
    result = response.json()["result"]
    assert (result["type"], result["output"], result["metadata"]["model"]) == (
        "model.textCompletion",
        fakes.openai.reply,
        "llama3.1",
    )


async def test_a_streamed_completion_is_assembled_from_the_server_sent_events(rig, fakes):
    outcome = await rig.invoke("openai.invokeModel", {**CHAT, "stream": True})
    assert outcome.output == fakes.openai.reply
    assert outcome.metadata["stream"] is True
    assert outcome.metadata["chunks"] >= len(fakes.openai.reply.split())
    assert outcome.metadata["tokens"] is not None


async def test_embeddings_come_back_one_vector_per_input_in_order(rig, fakes):
    outcome = await rig.invoke(
        "openai.invokeModel", {"model": "nomic-embed-text", "kind": "embedding", "input": ["oil change", "tires"]}
    )
    assert outcome.result_type == "model.embedding"
    assert outcome.output == [pytest.approx(vector("oil change")), pytest.approx(vector("tires"))]
    assert fakes.openai.requests[-1]["encoding_format"] == "float"


async def test_a_rate_limited_server_maps_to_upstream_rate_limited_with_retry_after(rig, fakes):
    fakes.openai.faults.fail(429, openai_error(429), {"Retry-After": "12"})
    response = await rig.rest("openai.invokeModel", CHAT)
    assert response.status_code == 429
    assert error_of(response)["code"] == "upstream.rate_limited"
    assert error_of(response)["details"]["retry_after"] == 12
    assert SECRET_IN_PROVIDER_MESSAGE not in response.text


async def test_retry_after_ms_is_preferred_when_the_server_sends_it(rig, fakes):
    fakes.openai.faults.fail(429, openai_error(429), {"retry-after-ms": "1500", "Retry-After": "9"})
    error = await failure(rig, CHAT)
    assert error.details["retry_after"] == 1.5


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (500, "upstream.unavailable", True),
        (503, "upstream.unavailable", True),
        (400, "models.request_rejected", False),
        (401, "upstream.credential_rejected", True),
        (404, "models.model_not_found", False),
        (409, "upstream.error", False),
    ],
)
async def test_openai_errors_map_to_retryable_or_terminal_gateway_errors(rig, fakes, status, code, retryable):
    fakes.openai.faults.fail(status, openai_error(status))
    error = await failure(rig, CHAT)
    assert (error.code, error.retryable) == (code, retryable)
    assert SECRET_IN_PROVIDER_MESSAGE not in str(error.to_dict())


async def test_a_model_the_server_does_not_have_is_model_not_found(rig, fakes):
    error = await failure(rig, {**CHAT, "model": "mistral"})
    assert error.code == "models.model_not_found"


async def test_an_unreachable_server_is_upstream_unavailable(rig, fakes, closed_port_url):
    rig.gateway.adapter_configs.defaults["openai"]["base_url"] = closed_port_url + "/v1"
    adapter = rig.services.catalogue.adapter_for(rig.services.catalogue.get("openai.invokeModel"))
    adapter.defaults["base_url"] = closed_port_url + "/v1"
    error = await failure(rig, CHAT)
    assert (error.code, error.retryable) == ("upstream.unavailable", True)


async def test_a_hanging_server_fails_with_timeout(rig, fakes):
    await rig.invoke("openai.invokeModel", CHAT)
    await rig.operator(
        "admin.adapters.upsert",
        {"company_id": "demo-motor-group", "adapter_id": "openai", "config": {"timeout_s": 1.0}},
    )
    fakes.openai.faults.hang = True
    response = await rig.rest("openai.invokeModel", CHAT)
    assert response.status_code == 504
    assert error_of(response)["code"] == "timeout"


async def test_a_payload_the_schema_rejects_never_reaches_the_server(rig, fakes):
    response = await rig.rest("openai.invokeModel", {"input": "hi", "params": {"temperature": 5}})
    assert response.status_code == 422
    assert error_of(response)["code"] == "invalid_params"
    assert fakes.openai.requests == []
