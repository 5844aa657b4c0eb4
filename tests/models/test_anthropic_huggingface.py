"""anthropic.invokeModel and huggingface.invokeModel against loopback fakes of Anthropic's Messages API and a Hugging
Face Inference Endpoint (TGI's Messages API, TEI's feature extraction), over real sockets."""

from __future__ import annotations

from typing import Any

import pytest

from fakes.anthropic import SECRET_IN_PROVIDER_MESSAGE as ANTHROPIC_SECRET
from fakes.anthropic import anthropic_error
from fakes.huggingface import SECRET_IN_PROVIDER_MESSAGE as HF_SECRET
from fakes.huggingface import tgi_error
from fakes.openai import vector
from forecourt.errors import ForecourtError

from .conftest import running_rig
from .support import ANTHROPIC_KEY, HF_TOKEN, MOTOR, Rig, adapter_files, error_of

CHAT = {
    "system": "You are a sales assistant.",
    "input": [{"role": "user", "content": "Is the RAV4 available?"}, {"role": "assistant", "content": "Which?"}, "XLE"],
    "params": {"temperature": 0.2, "maxOutputTokens": 200, "topP": 0.9, "topK": 20, "stop": ["END"]},
}


async def failure(rig: Rig, action: str, payload: dict[str, Any]) -> ForecourtError:
    with pytest.raises(ForecourtError) as info:
        await rig.invoke(action, payload)
    return info.value


# ------------------------------------------------------------------------------------------------ Anthropic


async def test_an_anthropic_message_is_normalised_with_its_token_counts(rig, fakes):
    outcome = await rig.invoke("anthropic.invokeModel", CHAT)
    assert (outcome.result_type, outcome.output) == ("model.textCompletion", fakes.anthropic.reply)
    usage = outcome.metadata["usage"]
    assert usage["output_tokens"] == len(fakes.anthropic.reply.split())
    assert usage["input_tokens"] > 0
    assert outcome.metadata["tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert (outcome.metadata["runtime"], outcome.metadata["model"]) == ("anthropic", "claude-sonnet-4-6")
    assert outcome.metadata["finish_reason"] == "end_turn"
    sent = fakes.anthropic.requests[-1]
    assert sent["system"] == "You are a sales assistant."
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert (sent["max_tokens"], sent["temperature"], sent["top_p"], sent["top_k"]) == (200, 0.2, 0.9, 20)
    assert sent["stop_sequences"] == ["END"]


async def test_the_gateway_issues_the_anthropic_key_per_call_never_the_callers(rig, fakes):
    await rig.invoke("anthropic.invokeModel", {"input": "hi"})
    headers = fakes.anthropic.headers_seen[-1]
    assert headers["authorization"] == f"Bearer {ANTHROPIC_KEY}"
    assert headers["anthropic-version"]
    assert rig.keys["crm"] not in str(headers)
    assert fakes.anthropic.requests[-1]["max_tokens"] == 512  # the adapter's max_tokens when the call gives none


async def test_a_streamed_anthropic_message_is_assembled_from_its_events(rig, fakes):
    outcome = await rig.invoke("anthropic.invokeModel", {**CHAT, "stream": True})
    assert outcome.output == fakes.anthropic.reply
    assert outcome.metadata["stream"] is True
    assert outcome.metadata["chunks"] >= len(fakes.anthropic.reply.split())
    assert outcome.metadata["usage"]["output_tokens"] == len(fakes.anthropic.reply.split())
    assert outcome.metadata["usage"]["input_tokens"] > 0
    assert outcome.metadata["finish_reason"] == "end_turn"


async def test_the_rest_envelope_answers_anthropic_invoke_model(rig, fakes):
    response = await rig.rest("anthropic.invokeModel", {"input": "Hello", "model": "claude-haiku-4-5"})
    assert response.status_code == 200
    result = response.json()["result"]
    assert (result["output"], result["metadata"]["model"]) == (fakes.anthropic.reply, "claude-haiku-4-5")


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (529, "upstream.unavailable", True),
        (500, "upstream.unavailable", True),
        (400, "models.request_rejected", False),
        (403, "upstream.forbidden", False),
        (404, "models.model_not_found", False),
    ],
)
async def test_anthropic_errors_map_to_gateway_errors_without_the_providers_message(
    rig, fakes, status, code, retryable
):
    fakes.anthropic.faults.fail(status, anthropic_error(status))
    error = await failure(rig, "anthropic.invokeModel", CHAT)
    assert (error.code, error.retryable) == (code, retryable)
    assert ANTHROPIC_SECRET not in str(error.to_dict())


async def test_an_anthropic_rate_limit_carries_retry_after(rig, fakes):
    fakes.anthropic.faults.fail(429, anthropic_error(429), {"retry-after": "7"})
    response = await rig.rest("anthropic.invokeModel", CHAT)
    assert response.status_code == 429
    assert error_of(response)["code"] == "upstream.rate_limited"
    assert error_of(response)["details"]["retry_after"] == 7
    assert ANTHROPIC_SECRET not in response.text


async def test_a_key_in_x_api_key_is_sent_alone(template, fakes, tmp_path):
    credentials = {"type": "secret", "env": "FC_TEST_ANTHROPIC_API_KEY", "kind": "api_key", "header": "x-api-key"}
    config_dir = adapter_files(tmp_path / "adapters", fakes, anthropic={"credentials": credentials})
    async with running_rig(template, config_dir, tmp_path) as made:
        await made.invoke("anthropic.invokeModel", {"input": "hi"})
    headers = fakes.anthropic.headers_seen[-1]
    assert headers["x-api-key"] == ANTHROPIC_KEY
    assert "authorization" not in headers


async def test_a_wrong_anthropic_key_is_credential_rejected(rig, fakes, monkeypatch):
    monkeypatch.setenv("FC_TEST_ANTHROPIC_API_KEY", "sk-ant-revoked")
    error = await failure(rig, "anthropic.invokeModel", CHAT)
    assert error.code == "upstream.credential_rejected"


async def test_an_anthropic_embedding_is_refused_before_any_request(rig, fakes):
    response = await rig.rest("anthropic.invokeModel", {"input": ["a", "b"], "kind": "embedding"})
    assert response.status_code == 422
    assert fakes.anthropic.requests == []


async def test_a_hanging_anthropic_api_fails_with_timeout(rig, fakes):
    await rig.operator(
        "admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "anthropic", "config": {"timeout_s": 0.5}}
    )
    fakes.anthropic.faults.hang = True
    response = await rig.rest("anthropic.invokeModel", CHAT)
    assert (response.status_code, error_of(response)["code"]) == (504, "timeout")


# ------------------------------------------------------------------------------------------------ Hugging Face


async def test_a_tgi_chat_completion_is_normalised_with_its_token_counts(rig, fakes):
    outcome = await rig.invoke("huggingface.invokeModel", CHAT)
    assert (outcome.result_type, outcome.output) == ("model.textCompletion", fakes.huggingface.reply)
    assert outcome.metadata["runtime"] == "huggingface"
    assert outcome.metadata["usage"]["output_tokens"] == len(fakes.huggingface.reply.split())
    assert outcome.metadata["tokens"] is not None
    sent = fakes.huggingface.requests[-1]
    assert sent["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    assert (sent["max_tokens"], sent["temperature"], sent["top_p"], sent["top_k"]) == (200, 0.2, 0.9, 20)
    assert fakes.huggingface.auth_seen[-1] == f"Bearer {HF_TOKEN}"


async def test_a_streamed_tgi_completion_is_assembled_with_the_usage_chunk(rig, fakes):
    outcome = await rig.invoke("huggingface.invokeModel", {**CHAT, "stream": True})
    assert outcome.output == fakes.huggingface.reply
    assert outcome.metadata["chunks"] >= len(fakes.huggingface.reply.split())
    assert outcome.metadata["usage"]["output_tokens"] == len(fakes.huggingface.reply.split())
    assert fakes.huggingface.requests[-1]["stream_options"] == {"include_usage": True}


async def test_feature_extraction_answers_one_vector_per_input_in_order(rig, fakes):
    outcome = await rig.invoke(
        "huggingface.invokeModel", {"model": "BAAI/bge-small-en-v1.5", "kind": "embedding", "input": ["oil", "tires"]}
    )
    assert outcome.result_type == "model.embedding"
    assert outcome.output == [pytest.approx(vector("oil")), pytest.approx(vector("tires"))]
    assert fakes.huggingface.requests[-1]["inputs"] == ["oil", "tires"]


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (503, "upstream.unavailable", True),
        (422, "models.request_rejected", False),
        (401, "upstream.credential_rejected", True),
        (404, "models.model_not_found", False),
    ],
)
async def test_inference_endpoint_errors_map_to_gateway_errors(rig, fakes, status, code, retryable):
    fakes.huggingface.faults.fail(status, tgi_error(status))
    error = await failure(rig, "huggingface.invokeModel", CHAT)
    assert (error.code, error.retryable) == (code, retryable)
    assert HF_SECRET not in str(error.to_dict())


async def test_a_model_with_its_own_endpoint_is_sent_there(template, fakes, tmp_path, closed_port_url):
    endpoints = {"BAAI/bge-small-en-v1.5": fakes.huggingface.url}
    config_dir = adapter_files(
        tmp_path / "adapters", fakes, huggingface={"base_url": closed_port_url, "endpoints": endpoints}
    )
    async with running_rig(template, config_dir, tmp_path) as made:
        embedded = await made.invoke(
            "huggingface.invokeModel", {"model": "BAAI/bge-small-en-v1.5", "kind": "embedding", "input": "oil"}
        )
        assert embedded.output == [pytest.approx(vector("oil"))]
        with pytest.raises(ForecourtError) as info:
            await made.invoke("huggingface.invokeModel", {"input": "hi"})
        assert (info.value.code, info.value.retryable) == ("upstream.unavailable", True)


async def test_a_hanging_endpoint_fails_with_timeout(rig, fakes):
    await rig.operator(
        "admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "huggingface", "config": {"timeout_s": 0.5}}
    )
    fakes.huggingface.faults.hang = True
    response = await rig.rest("huggingface.invokeModel", CHAT)
    assert (response.status_code, error_of(response)["code"]) == (504, "timeout")


async def test_an_endpoint_with_no_url_is_runtime_not_configured(template, fakes, tmp_path):
    config_dir = adapter_files(tmp_path / "adapters", fakes, huggingface={"base_url": None, "endpoints": {}})
    async with running_rig(template, config_dir, tmp_path) as made:
        response = await made.rest("huggingface.invokeModel", {"input": "hi"})
    assert (response.status_code, error_of(response)["code"]) == (503, "models.runtime_not_configured")


# ------------------------------------------------------------------------------------------------ routing


async def test_model_invoke_routes_preferred_models_to_anthropic_and_hugging_face(rig, fakes):
    members = (await rig.operator("admin.members.list", {"company_id": MOTOR})).output["items"]
    crm = next(m for m in members if m["id"] == "crm-agent")
    prefs = {"agentConfig": {"runtime": "vertex-agent", "modelAffinity": ["claude-haiku-4-5"]}}
    await rig.operator("admin.members.upsert", {"company_id": MOTOR, "member": {**crm, "agent_config": prefs}})
    outcome = await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert (outcome.metadata["route"]["runtime"], outcome.metadata["model"]) == ("anthropic", "claude-haiku-4-5")
    assert outcome.output == fakes.anthropic.reply
    routed = await rig.invoke("model.invoke", {"input": "Draft a reply", "runtime": "tgi"})
    assert (routed.metadata["route"]["runtime"], routed.output) == ("huggingface", fakes.huggingface.reply)
