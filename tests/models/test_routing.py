"""model.invoke: agent preferences route a generic model call to a runtime and model, within company policy."""

from __future__ import annotations

import pytest

from forecourt.adapters.models import AgentPreferences, RoutePlanner
from forecourt.domain.tenancy import Policy
from forecourt.errors import ForecourtError

from .conftest import running_rig
from .support import MOTOR, adapter_files, error_of

RUNTIMES = {
    "vertex": {"models": ["gemini-1.5-pro", "gemini-1.5-flash"], "default_model": "gemini-1.5-pro"},
    "nvidia": {"models": ["meta/llama-3.1-8b-instruct"], "default_model": "meta/llama-3.1-8b-instruct"},
    "openai": {"models": ["llama3.1"], "default_model": "llama3.1"},
}
ROUTER = {"runtimes": ["vertex", "nvidia", "openai"], "aliases": {"vertex-agent": "vertex", "ollama": "openai"}}
SEED_PREFS = {
    "agentConfig": {
        "runtime": "vertex-agent",
        "modelAffinity": ["gemini-1.5-flash"],
        "nvidia": {"useFor": ["fine-tuning"]},
    }
}


def plan(payload, prefs=None, policies=()):
    planner = RoutePlanner(ROUTER, RUNTIMES)
    return planner.plan(payload, AgentPreferences.from_agent_config(prefs), list(policies))


def policy(**kwargs) -> Policy:
    return Policy(id="p", company_id="c", **kwargs)


def test_the_seed_preferences_route_to_vertex_with_the_preferred_model():
    route = plan({"input": "hi"}, SEED_PREFS)
    assert (route.runtime, route.action, route.model) == ("vertex", "vertex.invokeModel", "gemini-1.5-flash")
    assert route.reason == "agentConfig.runtime+agentConfig.modelAffinity"


def test_the_inner_agent_config_object_is_accepted_too():
    assert plan({"input": "hi"}, SEED_PREFS["agentConfig"]).model == "gemini-1.5-flash"


def test_a_task_the_agent_sends_to_nvidia_goes_to_nvidia():
    route = plan({"input": "hi", "task": "fine-tuning"}, SEED_PREFS)
    assert (route.runtime, route.model, route.reason) == (
        "nvidia",
        "meta/llama-3.1-8b-instruct",
        "agentConfig.nvidia.useFor+default_model",
    )


def test_the_payload_runtime_and_model_win_over_preferences():
    assert plan({"input": "hi", "runtime": "ollama"}, SEED_PREFS).runtime == "openai"
    route = plan({"input": "hi", "model": "llama3.1"}, SEED_PREFS)
    assert (route.runtime, route.model) == ("openai", "llama3.1")


def test_a_model_no_runtime_offers_is_model_not_found():
    with pytest.raises(ForecourtError) as info:
        plan({"input": "hi", "model": "claude-9"}, SEED_PREFS)
    assert info.value.code == "models.model_not_found"


def test_an_unknown_runtime_is_invalid_params():
    with pytest.raises(ForecourtError) as info:
        plan({"input": "hi", "runtime": "quantum"})
    assert info.value.code == "invalid_params"


def test_a_preference_the_policy_forbids_falls_back_to_an_allowed_model():
    route = plan({"input": "hi"}, SEED_PREFS, [policy(allowed_models=("gemini-1.5-pro", "llama*"))])
    assert (route.runtime, route.model, route.reason) == (
        "vertex",
        "gemini-1.5-pro",
        "agentConfig.runtime+default_model",
    )
    route = plan({"input": "hi"}, SEED_PREFS, [policy(denied_adapters=("vertex",))])
    assert route.runtime == "nvidia"
    route = plan({"input": "hi"}, SEED_PREFS, [policy(allowed_actions=("openai.*", "model.invoke"))])
    assert route.runtime == "openai"


def test_nothing_allowed_is_policy_denied():
    with pytest.raises(ForecourtError) as info:
        plan({"input": "hi"}, SEED_PREFS, [policy(allowed_models=("gpt-*",))])
    assert info.value.code == "policy.denied"


def test_malformed_preferences_are_ignored():
    prefs = {"agentConfig": {"runtime": 42, "modelAffinity": "gemini", "nvidia": ["x"]}}
    assert AgentPreferences.from_agent_config(prefs) == AgentPreferences()
    assert plan({"input": "hi"}, prefs).runtime == "vertex"


def test_a_disabled_runtime_is_skipped():
    planner = RoutePlanner(ROUTER, {**RUNTIMES, "vertex": {**RUNTIMES["vertex"], "enabled": False}})
    assert planner.plan({"input": "hi"}, AgentPreferences(), []).runtime == "nvidia"


async def _set_preferences(rig, agent_config):
    members = (await rig.operator("admin.members.list", {"company_id": MOTOR})).output["items"]
    crm = next(m for m in members if m["id"] == "crm-agent")
    await rig.operator("admin.members.upsert", {"company_id": MOTOR, "member": {**crm, "agent_config": agent_config}})


async def test_a_members_preferences_route_model_invoke_through_the_rest_envelope(rig, fakes):
    await _set_preferences(rig, SEED_PREFS)
    response = await rig.rest("model.invoke", {"input": "Summarize the following doc..."})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["type"] == "model.textCompletion"
    assert result["output"] == fakes.vertex.reply
    assert result["metadata"]["model"] == "gemini-1.5-flash"
    assert result["metadata"]["route"]["action"] == "vertex.invokeModel"
    assert fakes.vertex.requests[-1].model == "gemini-1.5-flash"
    actions = await rig.audit_actions()
    assert "model.invoke" in actions
    assert "vertex.invokeModel" in actions  # the routed call passed the whole pipeline too


async def test_a_task_routed_to_nvidia_runs_on_nim_and_a_policy_can_push_calls_elsewhere(rig, fakes):
    await _set_preferences(rig, {**SEED_PREFS["agentConfig"], "modelAffinity": ["meta/llama-3.1-8b-instruct"]})
    await rig.operator(
        "admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "nvidia", "config": {"backend": "nim"}}
    )
    outcome = await rig.invoke("model.invoke", {"input": "Draft a reply", "task": "fine-tuning"})
    assert (outcome.metadata["route"]["runtime"], outcome.output) == ("nvidia", fakes.nim.reply)
    await rig.operator(
        "admin.policies.upsert",
        {"company_id": MOTOR, "policy": {"id": f"{MOTOR}-default", "allowed_models": ["llama*"]}},
    )
    rerouted = await rig.invoke("model.invoke", {"input": "Draft a reply", "task": "fine-tuning"})
    assert (rerouted.metadata["route"]["runtime"], rerouted.metadata["model"]) == ("openai", "llama3.1")


async def test_a_routed_error_keeps_its_code(rig, fakes):
    fakes.openai.faults.fail(429, {"error": {"message": "slow down"}}, {"Retry-After": "2"})
    response = await rig.rest("model.invoke", {"input": "hi", "runtime": "openai"})
    assert response.status_code == 429
    assert error_of(response)["code"] == "upstream.rate_limited"


async def test_model_invoke_needs_the_models_scope(rig, fakes):
    response = await rig.rest("model.invoke", {"input": "hi"}, key="crm_leads_only")
    assert error_of(response)["code"] == "auth.insufficient_scope"


def test_a_preferred_model_served_by_a_later_runtime_is_used():
    route = plan({"input": "hi"}, {"agentConfig": {"modelAffinity": ["llama3.1"]}})
    assert (route.runtime, route.model, route.reason) == (
        "openai",
        "llama3.1",
        "default_order+agentConfig.modelAffinity",
    )


def test_a_preferred_model_wins_over_the_preferred_runtimes_default():
    route = plan({"input": "hi"}, {"agentConfig": {"runtime": "vertex-agent", "modelAffinity": ["llama3.1"]}})
    assert (route.runtime, route.model) == ("openai", "llama3.1")


def test_preferred_models_are_tried_in_their_order_across_runtimes():
    prefs = {"agentConfig": {"modelAffinity": ["nowhere", "meta/llama-3.1-8b-instruct", "llama3.1"]}}
    planner = RoutePlanner(ROUTER, RUNTIMES)
    routes = planner.routes({"input": "hi"}, AgentPreferences.from_agent_config(prefs), [])
    assert [(r.runtime, r.model) for r in routes] == [
        ("nvidia", "meta/llama-3.1-8b-instruct"),
        ("openai", "llama3.1"),
        ("vertex", "gemini-1.5-pro"),
    ]


async def test_a_runtime_without_its_configuration_answers_runtime_not_configured(template, fakes, tmp_path):
    missing = tmp_path / "no-such-service-account.json"
    vertex = {"project": "", "credentials": {"type": "google", "service_account_file": str(missing)}}
    config_dir = adapter_files(tmp_path / "adapters", fakes, vertex=vertex)
    async with running_rig(template, config_dir, tmp_path) as made:
        for action, payload in (
            ("vertex.invokeModel", {"input": "hi"}),
            ("model.invoke", {"input": "hi", "runtime": "vertex"}),
        ):
            response = await made.rest(action, payload)
            assert response.status_code == 503
            assert error_of(response)["code"] == "models.runtime_not_configured"
    assert fakes.vertex.requests == []
