"""Per-call credentials: a downscoped Google token per Vertex call (STS exchange from the cached source token) and
a signed JWT per NVIDIA call naming the call it was minted for."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import jwt
import pytest

from forecourt.errors import ForecourtError

from .conftest import running_rig
from .support import MOTOR, Fakes, Rig, adapter_files

HMAC_KEY = "per-call-signing-key-0123456789abcdef"
HMAC_ENV = "FC_TEST_TRITON_JWT_KEY"
MODEL_RESOURCE = "//aiplatform.googleapis.com/projects/{project}/locations/{location}/publishers/google/models/{model}"
ADD_SUB = {
    "model": "add_sub",
    "inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
        {"name": "INPUT1", "datatype": "FP32", "shape": [1, 4], "data": [1, 1, 1, 1]},
    ],
    "outputs": ["OUTPUT0"],
}


@pytest.fixture
async def scoped_rig(
    template: tuple[Path, dict[str, str]], fakes: Fakes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Rig]:
    """Vertex with a downscoped token per call; NVIDIA's Triton with a signed JWT per call."""
    monkeypatch.setenv(HMAC_ENV, HMAC_KEY)
    directory = adapter_files(tmp_path / "adapters", fakes)
    sa_file = directory / "vertex-sa.json"
    config_dir = adapter_files(
        tmp_path / "adapters",
        fakes,
        vertex={
            "credentials": {
                "type": "google",
                "service_account_file": str(sa_file),
                "downscope": {
                    "sts_url": f"{fakes.vertex.base_url}v1/token",
                    "rules": [
                        {
                            "available_resource": MODEL_RESOURCE,
                            "available_permissions": ["inRole:roles/aiplatform.user"],
                            "availability_condition": {"expression": "resource.name.endsWith('/models/{model}')"},
                        }
                    ],
                },
            }
        },
        nvidia={"credentials": {"type": "jwt", "algorithm": "HS256", "key_env": HMAC_ENV, "ttl_s": 60}},
    )
    async with running_rig(template, config_dir, tmp_path) as made:
        yield made


async def test_each_vertex_call_gets_its_own_downscoped_token_from_one_cached_source_token(scoped_rig, fakes):
    for _ in range(3):
        await scoped_rig.invoke("vertex.invokeModel", {"model": "gemini-1.5-flash", "input": "Is the RAV4 in?"})
    exchanges = fakes.vertex.extras.exchanges
    assert len(exchanges) == 3
    assert {e.source for e in exchanges} == {"ya29.fake-1"}  # the source token is minted once and cached
    used = [r.token for r in fakes.vertex.requests]
    assert used == [e.token for e in exchanges]  # every call used the token minted for it, never a reused one
    assert len(set(used)) == 3
    rule = exchanges[0].boundary["accessBoundaryRules"][0]
    assert rule["availableResource"] == (
        "//aiplatform.googleapis.com/projects/demo-project/locations/us-central1/publishers/google/models/"
        "gemini-1.5-flash"
    )
    assert rule["availablePermissions"] == ["inRole:roles/aiplatform.user"]
    assert rule["availabilityCondition"]["expression"] == "resource.name.endsWith('/models/gemini-1.5-flash')"


async def test_a_model_name_that_would_change_a_boundary_rule_gets_no_credential(scoped_rig, fakes):
    with pytest.raises(ForecourtError) as info:
        await scoped_rig.invoke("vertex.invokeModel", {"model": "x') || true || ('", "input": "hi"})
    assert info.value.code == "credentials.unavailable"
    assert fakes.vertex.extras.exchanges == []
    assert fakes.vertex.requests == []


async def test_a_refused_token_exchange_is_credentials_unavailable(scoped_rig, fakes):
    await scoped_rig.invoke("vertex.invokeModel", {"model": "gemini-1.5-pro", "input": "hi"})
    fakes.vertex.tokens.expired.add("ya29.fake-1")  # STS now refuses the (still cached) source token
    with pytest.raises(ForecourtError) as info:
        await scoped_rig.invoke("vertex.invokeModel", {"model": "gemini-1.5-pro", "input": "hi"})
    assert info.value.code == "credentials.unavailable"


async def test_each_nvidia_call_carries_a_fresh_signed_token_naming_that_call(scoped_rig, fakes):
    first = await scoped_rig.invoke("nvidia.runInference", ADD_SUB)
    await scoped_rig.invoke("nvidia.runInference", ADD_SUB)
    tokens = [h["authorization"].removeprefix("Bearer ") for h in fakes.triton.headers_seen]
    assert len(tokens) == 2
    assert tokens[0] != tokens[1]
    claims = [jwt.decode(t, HMAC_KEY, algorithms=["HS256"], audience="nvidia") for t in tokens]
    assert claims[0]["jti"] != claims[1]["jti"]
    assert claims[0]["exp"] - claims[0]["iat"] == 60
    assert claims[0]["sub"] == MOTOR
    assert claims[0]["call"] == {"action": "nvidia.runInference", "model": "add_sub", "trace_id": first.trace_id}
