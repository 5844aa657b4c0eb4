"""A company's own Triton URL (the operator set ``allow_company_endpoints``) is connected only at checked addresses.

The URL is checked when saved and before each call; its host name is then resolved once more for each connection,
and the connection goes to exactly the address that passed. A name that rebinds to a private address in between
is refused with ``net.unsafe_target`` and Triton hears nothing, for inference and for the model repository's admin
actions alike. With ``allow_private_targets`` a company Triton on a private network works. The operator's own
Triton is trusted as configured (every other test in this folder calls it on loopback).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fakes.dns import FakeDns
from forecourt.errors import ForecourtError

from .conftest import running_rig
from .support import MOTOR, Fakes, Rig, adapter_files, error_of
from .triton_server import RealTriton

REBINDING_HOST = "triton.dealer.example"
PUBLIC_ADDRESS = "93.184.215.14"
ADD_SUB = {
    "model": "add_sub",
    "inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
        {"name": "INPUT1", "datatype": "FP32", "shape": [1, 4], "data": [1, 1, 1, 1]},
    ],
    "outputs": ["OUTPUT0"],
}


def _config_dir(tmp_path: Path, fakes: Fakes) -> Path:
    return adapter_files(tmp_path / "adapters", fakes, nvidia={"allow_company_endpoints": True})


@pytest.fixture
async def open_rig(template: tuple[Path, dict[str, str]], fakes: Fakes, tmp_path: Path) -> AsyncIterator[Rig]:
    """The app whose operator lets companies name their own model endpoints (private addresses refused)."""
    async with running_rig(template, _config_dir(tmp_path, fakes), tmp_path) as made:
        yield made


@pytest.fixture
async def private_rig(template: tuple[Path, dict[str, str]], fakes: Fakes, tmp_path: Path) -> AsyncIterator[Rig]:
    """As ``open_rig``, with ``allow_private_targets`` (a company Triton on a private network)."""
    async with running_rig(template, _config_dir(tmp_path, fakes), tmp_path, allow_private_targets=True) as made:
        yield made


async def _use_company_triton(rig: Rig, port: int) -> None:
    """Save the company's Triton URL through the admin action (its URL check included)."""
    config = {"triton": {"url": f"http://{REBINDING_HOST}:{port}", "default_model": "add_sub"}}
    await rig.operator("admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "nvidia", "config": config})


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


@pytest.mark.parametrize("rebound_to", ["127.0.0.1", "169.254.169.254", "10.0.0.8"])
async def test_a_company_triton_name_that_rebinds_to_a_private_address_is_refused_when_connecting(
    open_rig: Rig, fakes: Fakes, monkeypatch: pytest.MonkeyPatch, rebound_to: str
) -> None:
    dns = FakeDns.install(monkeypatch)
    dns.script(REBINDING_HOST, PUBLIC_ADDRESS, PUBLIC_ADDRESS, rebound_to)  # saved, checked before the call, then
    await _use_company_triton(open_rig, _port(fakes.triton.url))
    heard = list(fakes.triton.paths)

    response = await open_rig.rest("nvidia.runInference", ADD_SUB)

    assert response.status_code == 400
    assert error_of(response)["code"] == "net.unsafe_target"
    assert dns.lookups == [REBINDING_HOST] * 3  # the connection resolved the name once more, itself
    assert fakes.triton.paths == heard


async def test_the_model_repository_admin_actions_connect_only_at_checked_addresses_too(
    open_rig: Rig, fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    dns = FakeDns.install(monkeypatch)
    dns.script(REBINDING_HOST, PUBLIC_ADDRESS, PUBLIC_ADDRESS, "127.0.0.1")
    await _use_company_triton(open_rig, _port(fakes.triton.url))
    heard = list(fakes.triton.paths)

    with pytest.raises(ForecourtError) as refused:
        await open_rig.invoke("admin.nvidia.models.list", {"company_id": MOTOR}, key="admin")

    assert refused.value.code == "net.unsafe_target"
    assert fakes.triton.paths == heard


async def test_a_company_triton_on_an_allowed_private_address_is_reached_at_the_address_resolved(
    private_rig: Rig, fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name exists only in the fake DNS: the connection went to the address the resolver handed back."""
    dns = FakeDns.install(monkeypatch)
    dns.script(REBINDING_HOST, "127.0.0.1")
    await _use_company_triton(private_rig, _port(fakes.triton.url))

    outcome = await private_rig.invoke("nvidia.runInference", ADD_SUB)
    listed = await private_rig.invoke("admin.nvidia.models.list", {"company_id": MOTOR}, key="admin")

    assert outcome.output["outputs"][0]["data"] == [2, 3, 4, 5]
    assert {m["model"] for m in listed.output["items"]} == {"add_sub", "ensemble"}
    assert "/v2/models/add_sub/versions/1/infer" in fakes.triton.paths


async def test_a_company_triton_on_an_allowed_address_serves_inference_and_versioning_on_a_real_triton(
    template: tuple[Path, dict[str, str]],
    fakes: Fakes,
    triton: RealTriton,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dns = FakeDns.install(monkeypatch)
    dns.script(REBINDING_HOST, "127.0.0.1")
    async with running_rig(template, _config_dir(tmp_path, fakes), tmp_path, allow_private_targets=True) as rig:
        await _use_company_triton(rig, _port(triton.url))
        outcome = await rig.invoke("nvidia.runInference", ADD_SUB)
        listed = await rig.invoke("admin.nvidia.models.list", {"company_id": MOTOR}, key="admin")

    assert outcome.output["outputs"][0]["data"] == [2, 3, 4, 5]
    assert (outcome.metadata["model_version"], outcome.metadata["version_route"]) == ("2", "latest_ready")
    models = {m["model"]: m for m in listed.output["items"]}
    assert models["add_sub"]["ready_versions"] == ["1", "2"]
