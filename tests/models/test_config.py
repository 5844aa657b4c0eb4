"""Default adapter files (config/mcp/adapters/*.yaml), the operator's override folder, company overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from forecourt.adapters.config import PACKAGED_DIR, adapter_defaults_for, load_adapter_defaults
from forecourt.adapters.errors import AdapterConfigError
from forecourt.settings import Settings

from .support import MOTOR, error_of

RUNTIMES = ("vertex", "nvidia", "openai", "anthropic", "huggingface")
REPO_CONFIG = Path(__file__).resolve().parents[2] / "config" / "mcp" / "adapters"


def test_the_packaged_defaults_describe_every_model_runtime():
    defaults = load_adapter_defaults()
    assert {*RUNTIMES, "models"} <= set(defaults)
    vertex = defaults["vertex"]
    assert vertex["credentials"]["type"] == "google"
    assert (vertex["location"], vertex["default_model"]) == ("us-central1", "gemini-1.5-pro")
    for name in RUNTIMES:
        assert defaults[name]["timeout_s"] > 0
        assert defaults[name]["concurrency"] >= 1
        assert defaults[name]["default_model"] in defaults[name]["models"]
    assert defaults["models"]["timeout_s"] > max(defaults[n]["timeout_s"] for n in RUNTIMES)


def test_the_repository_config_folder_holds_the_same_files_as_the_package():
    packaged = {p.name: p.read_text(encoding="utf-8") for p in PACKAGED_DIR.glob("*.yaml")}
    repo = {p.name: p.read_text(encoding="utf-8") for p in REPO_CONFIG.glob("*.yaml")}
    assert packaged == repo


def test_an_operator_folder_replaces_files_by_name_and_adds_adapters(tmp_path):
    (tmp_path / "openai.yaml").write_text("base_url: http://vllm.internal:8000/v1\ndefault_model: qwen\n")
    (tmp_path / "acme.yml").write_text("timeout_s: 3\n")
    defaults = adapter_defaults_for(Settings(adapter_config_dir=tmp_path))
    assert defaults["openai"] == {"base_url": "http://vllm.internal:8000/v1", "default_model": "qwen"}
    assert defaults["acme"] == {"timeout_s": 3}
    assert defaults["vertex"]["location"] == "us-central1"


def test_the_override_folder_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("FORECOURT_ADAPTER_CONFIG_DIR", str(tmp_path))
    assert Settings().adapter_config_dir == tmp_path


@pytest.mark.parametrize(
    "content",
    [
        "timeout_s: -1\n",
        "concurrency: 0\n",
        "credentials: {type: magic}\n",
        "credentials: secret\n",
        "models: gemini\n",
        "- just\n- a list\n",
        "key: [unclosed\n",
    ],
)
def test_an_invalid_file_stops_start_up(tmp_path, content):
    (tmp_path / "vertex.yaml").write_text(content)
    with pytest.raises(AdapterConfigError):
        load_adapter_defaults(tmp_path)


def test_a_missing_override_folder_stops_start_up(tmp_path):
    with pytest.raises(AdapterConfigError):
        load_adapter_defaults(tmp_path / "absent")


async def test_the_gateway_and_credential_broker_get_the_loaded_defaults(rig, fakes):
    configs = rig.gateway.adapter_configs.defaults
    assert configs["vertex"]["project"] == "demo-project"
    # the packaged file, not overridden
    assert configs["models"]["runtimes"] == ["vertex", "nvidia", "openai", "anthropic", "huggingface"]
    assert rig.gateway.credentials._defaults["vertex"]["credentials"]["type"] == "google"


async def test_a_company_override_changes_the_default_model_for_that_company_only(rig, fakes):
    await rig.operator(
        "admin.adapters.upsert",
        {"company_id": MOTOR, "adapter_id": "openai", "config": {"default_model": "nomic-embed-text"}},
    )
    listed = (await rig.operator("admin.adapters.list", {"company_id": MOTOR})).output["items"]
    assert listed[0]["config"] == {"default_model": "nomic-embed-text"}
    outcome = await rig.invoke("openai.invokeModel", {"input": "hi"})
    assert outcome.metadata["model"] == "nomic-embed-text"
    bay = await rig.gateway.adapter_configs.resolve(rig.services.store, "openai", "demo-bay-autos")
    assert bay["default_model"] == "llama3.1"


async def test_a_company_endpoint_is_refused_unless_the_operator_allows_company_endpoints(rig, fakes):
    from forecourt.domain.tenancy import AdapterSetting

    # Saved before URLs were checked at save time (the admin API now refuses it): still refused when used.
    setting = AdapterSetting(company_id=MOTOR, adapter_id="openai", config={"base_url": "http://169.254.169.254/v1"})
    async with rig.services.store.transaction() as uow:
        await uow.tenancy.upsert_adapter_setting(setting)
    rig.services.gateway.tenancy.invalidate()
    response = await rig.rest("openai.invokeModel", {"input": "hi"})
    assert error_of(response)["code"] == "models.runtime_not_configured"
    assert fakes.openai.requests == []
    adapter = rig.services.catalogue.adapter_for(rig.services.catalogue.get("openai.invokeModel"))
    adapter.defaults["allow_company_endpoints"] = True  # allowed, but the SSRF guard still refuses metadata IPs
    response = await rig.rest("openai.invokeModel", {"input": "hi"})
    assert error_of(response)["code"] == "models.runtime_not_configured"


async def test_vertex_without_a_project_is_not_configured(rig, fakes):
    await rig.operator(
        "admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "vertex", "config": {"project": ""}}
    )
    response = await rig.rest("vertex.invokeModel", {"input": "hi"})
    assert response.status_code == 503
    assert error_of(response)["code"] == "models.runtime_not_configured"


def test_the_cli_sets_a_company_adapter_override(tmp_path, template, monkeypatch):
    import json
    import shutil

    from typer.testing import CliRunner

    from forecourt.cli.main import app

    db = tmp_path / "cli.db"
    shutil.copyfile(template[0], db)
    override = tmp_path / "vertex.json"
    override.write_text(json.dumps({"location": "europe-west4", "default_model": "gemini-1.5-flash"}))
    monkeypatch.setenv("FORECOURT_DATABASE_URL", f"sqlite+aiosqlite:///{db}")
    result = CliRunner().invoke(app, ["admin", "set-adapter", "vertex", str(override), "--company", MOTOR])
    assert result.exit_code == 0, result.output
    listed = CliRunner().invoke(app, ["admin", "adapters", "--company", MOTOR])
    assert "europe-west4" in listed.output
