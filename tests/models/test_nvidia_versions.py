"""Triton model versioning on a real tritonserver: list, load/unload versions, pin, and how inference is routed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from forecourt.errors import ForecourtError

from .support import MOTOR, Rig

ADD_SUB = {
    "model": "add_sub",
    "inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
        {"name": "INPUT1", "datatype": "FP32", "shape": [1, 4], "data": [1, 1, 1, 1]},
    ],
    "outputs": ["OUTPUT0"],
}


@pytest.fixture
async def restored(triton_rig: Rig) -> AsyncIterator[Rig]:
    """The rig; afterwards add_sub serves its repository configuration again (the server lives for the session)."""
    yield triton_rig
    reloaded = await triton_rig.operator(
        "admin.nvidia.models.load", {"company_id": MOTOR, "model": "add_sub", "versions": ["1", "2"]}
    )
    assert reloaded.output["ready_versions"] == ["1", "2"]


async def _version_of(rig: Rig, key: str = "crm") -> tuple[str, str]:
    outcome = await rig.invoke("nvidia.runInference", ADD_SUB, key=key)
    assert outcome.output["outputs"][0]["data"] == [2, 3, 4, 5]
    return outcome.metadata["model_version"], outcome.metadata["version_route"]


async def test_an_admin_lists_the_servers_models_and_versions_with_their_state(triton_rig):
    outcome = await triton_rig.invoke("admin.nvidia.models.list", {"company_id": MOTOR}, key="admin")
    models = {m["model"]: m for m in outcome.output["items"]}
    assert models["add_sub"]["ready_versions"] == ["1", "2"]
    assert [v["state"] for v in models["add_sub"]["versions"]] == ["READY", "READY"]
    assert models["add_sub"]["pinned"] is None
    assert {"ensemble", "echo_llm"} <= set(models)


async def test_inference_without_a_version_runs_on_the_latest_ready_version(triton_rig):
    assert await _version_of(triton_rig) == ("2", "latest_ready")


async def test_a_payload_version_runs_on_that_version(triton_rig):
    outcome = await triton_rig.invoke("nvidia.runInference", {**ADD_SUB, "model_version": "1"})
    assert (outcome.metadata["model_version"], outcome.metadata["version_route"]) == ("1", "payload")


async def test_a_pinned_version_routes_the_companys_calls_until_unpinned(triton_rig):
    pinned = await triton_rig.invoke(
        "admin.nvidia.models.pin", {"company_id": MOTOR, "model": "add_sub", "version": "1"}, key="admin"
    )
    assert pinned.output == {"model": "add_sub", "pinned": "1"}
    assert await _version_of(triton_rig) == ("1", "pinned")
    listed = await triton_rig.invoke("admin.nvidia.models.list", {"company_id": MOTOR}, key="admin")
    assert {m["model"]: m["pinned"] for m in listed.output["items"]}["add_sub"] == "1"
    await triton_rig.invoke(
        "admin.nvidia.models.pin", {"company_id": MOTOR, "model": "add_sub", "version": None}, key="admin"
    )
    assert await _version_of(triton_rig) == ("2", "latest_ready")
    actions = await triton_rig.audit_actions()
    assert actions.count("admin.nvidia.models.pin") == 2
    assert "admin.adapters.upsert" in actions  # the pin is the company's adapter setting, audited as such


async def test_the_operator_loads_one_version_and_inference_follows_the_ready_versions(restored):
    loaded = await restored.operator(
        "admin.nvidia.models.load", {"company_id": MOTOR, "model": "add_sub", "versions": ["1"]}
    )
    assert loaded.output["ready_versions"] == ["1"]
    assert await _version_of(restored) == ("1", "latest_ready")
    with pytest.raises(ForecourtError) as info:
        await restored.invoke("nvidia.runInference", {**ADD_SUB, "model_version": "2"})
    assert info.value.code == "upstream.unavailable"  # Triton answers 503 for a version it unloaded


async def test_an_unloaded_model_has_no_ready_version(restored):
    unloaded = await restored.operator("admin.nvidia.models.unload", {"company_id": MOTOR, "model": "add_sub"})
    assert unloaded.output["ready_versions"] == []
    with pytest.raises(ForecourtError) as info:
        await restored.invoke("nvidia.runInference", ADD_SUB)
    assert (info.value.code, info.value.retryable) == ("models.no_ready_version", True)


async def test_a_company_admin_may_not_load_models_on_a_shared_server(triton_rig):
    with pytest.raises(ForecourtError) as info:
        await triton_rig.invoke("admin.nvidia.models.unload", {"company_id": MOTOR, "model": "add_sub"}, key="admin")
    assert info.value.code == "auth.forbidden"
    listed = await triton_rig.invoke("admin.nvidia.models.list", {"company_id": MOTOR}, key="admin")
    assert {m["model"]: m["ready_versions"] for m in listed.output["items"]}["add_sub"] == ["1", "2"]


async def test_a_member_without_the_admin_scope_cannot_see_the_model_repository(triton_rig):
    with pytest.raises(ForecourtError) as info:
        await triton_rig.invoke("admin.nvidia.models.list", {"company_id": MOTOR}, key="crm")
    assert info.value.code in ("auth.insufficient_scope", "auth.forbidden")


async def test_company_policy_can_deny_the_versioning_actions(triton_rig):
    await triton_rig.operator(
        "admin.policies.upsert",
        {"company_id": MOTOR, "policy": {"id": "no-gpu-admin", "denied_actions": ["admin.nvidia.*"]}},
    )
    with pytest.raises(ForecourtError) as info:
        await triton_rig.invoke("admin.nvidia.models.list", {"company_id": MOTOR}, key="admin")
    assert info.value.code == "policy.denied"
