"""nvidia.runInference against a real tritonserver (KServe v2; ``triton_rig``) and a loopback NIM (OpenAI-compatible).

The fake Triton (``rig``) stays only for what a real server cannot be made to show: 429/5xx answers, a hang, and
counting the metadata requests the adapter makes.
"""

from __future__ import annotations

from typing import Any

import pytest

from fakes.openai import SECRET_IN_PROVIDER_MESSAGE, openai_error
from forecourt.errors import ForecourtError

from .support import NIM_KEY, Rig, error_of

ADD_SUB = {
    "model": "add_sub",
    "inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
        {"name": "INPUT1", "datatype": "FP32", "shape": [1, 4], "data": [[10, 20, 30, 40]]},
    ],
}
NIM_CHAT = {"backend": "nim", "model": "meta/llama-3.1-8b-instruct", "input": "When is my Civic due for service?"}


async def failure(rig: Rig, payload: dict[str, Any]) -> ForecourtError:
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("nvidia.runInference", payload)
    return info.value


async def test_raw_tensors_run_on_a_real_triton_and_answer_a_model_inference_result(triton_rig):
    outcome = await triton_rig.invoke("nvidia.runInference", ADD_SUB)
    assert outcome.result_type == "model.inference"
    outputs = {o["name"]: o for o in outcome.output["outputs"]}
    assert set(outputs) == {"OUTPUT0", "OUTPUT1"}  # output names learned from the model's metadata
    assert outputs["OUTPUT0"]["data"] == [11, 22, 33, 44]
    assert outputs["OUTPUT1"]["data"] == [-9, -18, -27, -36]
    assert outputs["OUTPUT0"]["shape"] == [1, 4]
    assert outcome.output["model_name"] == "add_sub"
    provenance = outcome.metadata.pop("provenance")  # a model's output is marked as third-party (docs/security.md)
    assert (provenance["sources"], provenance["untrusted"]) == (["model_output"], True)
    assert outcome.metadata == {
        "model": "add_sub",
        "tokens": None,
        "runtime": "nvidia",
        "backend": "triton",
        "model_version": "2",
        "version_route": "latest_ready",
    }


async def test_tensors_travel_as_json_and_outputs_default_to_the_model_metadata(rig, fakes):
    await rig.invoke("nvidia.runInference", ADD_SUB)
    sent = fakes.triton.infer_requests[-1]
    assert [o["name"] for o in sent["outputs"]] == ["OUTPUT0", "OUTPUT1"]
    assert all(o["parameters"]["binary_data"] is False for o in sent["outputs"])


async def test_model_metadata_is_fetched_once_and_named_outputs_skip_it(rig, fakes):
    await rig.invoke("nvidia.runInference", ADD_SUB)
    await rig.invoke("nvidia.runInference", ADD_SUB)
    assert fakes.triton.metadata_requests == 1
    outcome = await rig.invoke("nvidia.runInference", {**ADD_SUB, "outputs": ["OUTPUT1"], "model_version": "1"})
    assert [o["name"] for o in outcome.output["outputs"]] == ["OUTPUT1"]
    assert fakes.triton.metadata_requests == 1


async def test_a_text_prompt_runs_a_real_triton_text_generation_ensemble(triton_rig):
    payload = {"model": "ensemble", "input": "Book my oil change", "params": {"maxOutputTokens": 4}}
    outcome = await triton_rig.invoke("nvidia.runInference", payload)
    assert outcome.result_type == "model.textCompletion"
    assert outcome.output == "Triton says: Book my"  # text_input and max_tokens reached the ensemble's step
    assert outcome.metadata["model_version"] == "1"
    assert outcome.metadata["backend"] == "triton"


async def test_the_rest_envelope_answers_nvidia_run_inference_from_a_real_triton(triton_rig):
    response = await triton_rig.rest("nvidia.runInference", ADD_SUB)
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["type"] == "model.inference"
    assert result["metadata"]["model"] == "add_sub"


async def test_tensor_data_that_does_not_fit_its_shape_is_invalid_params_without_calling_triton(rig, fakes):
    bad = {"model": "add_sub", "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2]}]}
    error = await failure(rig, bad)
    assert error.code == "invalid_params"
    assert fakes.triton.infer_requests == []


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (429, "upstream.rate_limited", True),
        (503, "upstream.unavailable", True),
        (500, "upstream.unavailable", True),
        (400, "models.request_rejected", False),
    ],
)
async def test_triton_errors_map_to_retryable_or_terminal_gateway_errors(rig, fakes, status, code, retryable):
    fakes.triton.faults.fail(status, {"error": SECRET_IN_PROVIDER_MESSAGE})
    error = await failure(rig, ADD_SUB)
    assert (error.code, error.retryable) == (code, retryable)
    assert SECRET_IN_PROVIDER_MESSAGE not in str(error.to_dict())


async def test_an_unknown_model_on_a_real_triton_is_model_not_found(triton_rig):
    error = await failure(triton_rig, {**ADD_SUB, "model": "no_such_model", "outputs": ["OUTPUT0"]})
    assert error.code == "models.model_not_found"


async def test_an_unknown_version_on_a_real_triton_is_model_not_found(triton_rig):
    error = await failure(triton_rig, {**ADD_SUB, "model_version": "7"})
    assert error.code == "models.model_not_found"


async def test_inputs_a_real_triton_refuses_are_models_request_rejected_without_its_message(triton_rig):
    wrong = {"model": "add_sub", "inputs": [{**ADD_SUB["inputs"][0], "name": "NOT_AN_INPUT"}], "outputs": ["OUTPUT0"]}
    error = await failure(triton_rig, wrong)
    assert (error.code, error.retryable) == ("models.request_rejected", False)
    assert "NOT_AN_INPUT" not in str(error.to_dict())


async def test_a_hanging_triton_call_fails_with_timeout(rig, fakes):
    await rig.invoke("nvidia.runInference", ADD_SUB)
    await rig.operator(
        "admin.adapters.upsert",
        {"company_id": "demo-motor-group", "adapter_id": "nvidia", "config": {"timeout_s": 1.0}},
    )
    fakes.triton.faults.hang = True
    response = await rig.rest("nvidia.runInference", ADD_SUB)
    assert response.status_code == 504
    assert error_of(response)["code"] == "timeout"


async def test_an_unreachable_triton_is_upstream_unavailable(rig, fakes, closed_port_url):
    adapter = rig.services.catalogue.adapter_for(rig.services.catalogue.get("nvidia.runInference"))
    for config in (rig.gateway.adapter_configs.defaults["nvidia"], adapter.defaults):
        config["triton"] = {**config["triton"], "url": closed_port_url}
    error = await failure(rig, {**ADD_SUB, "outputs": ["OUTPUT0"]})
    assert (error.code, error.retryable) == ("upstream.unavailable", True)


async def test_nim_chat_completions_use_the_bearer_key_the_broker_reads(rig, fakes):
    outcome = await rig.invoke("nvidia.runInference", NIM_CHAT)
    assert outcome.result_type == "model.textCompletion"
    assert outcome.output == fakes.nim.reply
    assert outcome.metadata["backend"] == "nim"
    assert outcome.metadata["model"] == "meta/llama-3.1-8b-instruct"
    assert outcome.metadata["tokens"] == 7 + len(fakes.nim.reply.split())
    assert fakes.nim.auth_seen[-1] == f"Bearer {NIM_KEY}"


async def test_nim_streams_and_assembles_the_completion(rig, fakes):
    outcome = await rig.invoke("nvidia.runInference", {**NIM_CHAT, "stream": True})
    assert outcome.output == fakes.nim.reply
    assert outcome.metadata["chunks"] == len(fakes.nim.reply.split()) + 2  # role chunk, words, usage chunk
    assert outcome.metadata["tokens"] == 7 + len(fakes.nim.reply.split())
    assert fakes.nim.requests[-1]["stream_options"] == {"include_usage": True}


async def test_nim_embeddings_answer_a_model_embedding_result(rig, fakes):
    payload = {"backend": "nim", "model": "nvidia/nv-embedqa-e5-v5", "kind": "embedding", "input": ["a", "bb"]}
    outcome = await rig.invoke("nvidia.runInference", payload)
    assert outcome.result_type == "model.embedding"
    assert len(outcome.output) == 2
    assert outcome.metadata["dimensions"] == 8


async def test_a_missing_nim_key_is_credentials_unavailable(rig, fakes, monkeypatch):
    monkeypatch.delenv("FC_TEST_NIM_API_KEY")
    error = await failure(rig, NIM_CHAT)
    assert error.code == "credentials.unavailable"
    assert fakes.nim.requests == []


async def test_a_rejected_nim_key_is_upstream_credential_rejected(rig, fakes):
    fakes.nim.faults.fail(401, openai_error(401))
    error = await failure(rig, NIM_CHAT)
    assert (error.code, error.retryable) == ("upstream.credential_rejected", True)


async def test_a_real_triton_reports_ready(triton_rig):
    adapter, ctx = _adapter_and_context(triton_rig)
    assert await adapter.ready(ctx) is True
    await adapter.aclose()


def _adapter_and_context(rig: Rig) -> tuple[Any, Any]:
    from forecourt.contract import ExecutionContext
    from forecourt.gateway.base import Principal

    catalogue = rig.services.catalogue
    adapter = catalogue.adapter_for(catalogue.get("nvidia.runInference"))
    ctx = ExecutionContext(
        action=catalogue.get("nvidia.runInference"),
        principal=Principal(method="internal", company_id=None, member_id=None),
        dealership_id=None,
        company_id=None,
        store=rig.services.store,
        settings=rig.services.settings,
        now=rig.gateway.clock(),
        trace_id="t-ready",
        adapter_config=rig.gateway.adapter_configs.defaults["nvidia"],
    )
    return adapter, ctx


async def test_triton_readiness_is_read_from_the_health_endpoint(rig, fakes):
    from forecourt.contract import ExecutionContext
    from forecourt.gateway.base import Principal

    catalogue = rig.services.catalogue
    adapter = catalogue.adapter_for(catalogue.get("nvidia.runInference"))
    ctx = ExecutionContext(
        action=catalogue.get("nvidia.runInference"),
        principal=Principal(method="internal", company_id=None, member_id=None),
        dealership_id=None,
        company_id=None,
        store=rig.services.store,
        settings=rig.services.settings,
        now=rig.gateway.clock(),
        trace_id="t-ready",
        adapter_config=rig.gateway.adapter_configs.defaults["nvidia"],
    )
    assert await adapter.ready(ctx) is True
    fakes.triton.ready = False
    assert await adapter.ready(ctx) is False
    await adapter.aclose()


class _MetadataClient:
    """A Triton client that only answers model metadata, counting the requests."""

    def __init__(self, outputs: list[str]) -> None:
        self.outputs = outputs
        self.asked = 0

    async def get_model_metadata(self, model: str, model_version: str, headers: dict[str, str]) -> dict[str, Any]:
        self.asked += 1
        return {"outputs": [{"name": n} for n in self.outputs]}


async def test_output_names_are_kept_by_server_and_never_by_a_client_address_another_client_reuses():
    from forecourt import caching
    from forecourt.adapters.models.nvidia import TritonBackend

    backend = TritonBackend()
    first = _MetadataClient(["A_OUT"])
    assert await backend.output_names(first, "http://a:8000", "m", "1", {}) == ["A_OUT"]
    address = id(first)
    del first
    # A client of another server, made where the first one was (CPython hands freed memory straight back).
    for _ in range(1_000):
        second = _MetadataClient(["B_OUT"])
        if id(second) == address:
            break
    assert await backend.output_names(second, "http://b:8000", "m", "1", {}) == ["B_OUT"]
    # Another loop's client of the first server: the names kept for that server, without asking again.
    third = _MetadataClient(["A_OUT"])
    assert await backend.output_names(third, "http://a:8000", "m", "1", {}) == ["A_OUT"]
    assert third.asked == 0
    info = next(i for i in caching.snapshot() if i.name == "adapters.nvidia.output_names")
    assert (info.size, info.max_age_s) == (1_024, 300.0)
