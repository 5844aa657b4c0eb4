"""Compose and the Helm chart run each adapter family as its own Deployment (remote adapter hosts)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from deploy.support import DEPLOY, ROOT, require_program

CHART = DEPLOY / "helm" / "forecourt"
HOSTS = [
    "--set",
    "secrets.existingSecret=forecourt-secrets",
    "--set",
    "adapterHosts.models-eu.family=models",
    "--set",
    "adapterHosts.models-eu.region=eu",
    "--set-string",
    "adapterHosts.models-eu.nodeSelector.nvidia\\.com/gpu\\.present=true",
    "--set",
    "adapterHosts.models-eu.autoscaling.enabled=true",
    "--set",
    "adapterHosts.knowledge-us.family=knowledge",
    "--set",
    "adapterHosts.knowledge-us.replicaCount=1",
]


@pytest.fixture(scope="module")
def helm() -> str:
    return require_program("helm", str(ROOT / ".cache" / "helm" / "bin" / "helm"))


def _render(helm: str, *args: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [helm, "template", "fc", str(CHART), *args], capture_output=True, text=True, check=True, timeout=60
    )
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def _named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    return next((d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name), None)


def test_each_adapter_host_is_its_own_deployment_with_service_hpa_and_pdb(helm: str) -> None:
    docs = _render(helm, *HOSTS)
    models = _named(docs, "Deployment", "fc-forecourt-adapters-models-eu")
    assert models is not None
    pod = models["spec"]["template"]["spec"]
    assert pod["containers"][0]["args"] == [
        "adapters", "serve", "--family", "models", "--host", "0.0.0.0", "--port", "8090", "--region", "eu",
    ]  # fmt: skip
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert "replicas" not in models["spec"]  # the HPA sets them
    labels = models["spec"]["selector"]["matchLabels"]
    service = _named(docs, "Service", "fc-forecourt-adapters-models-eu")
    assert service is not None
    assert service["spec"]["selector"] == labels
    assert _named(docs, "HorizontalPodAutoscaler", "fc-forecourt-adapters-models-eu") is not None
    assert _named(docs, "PodDisruptionBudget", "fc-forecourt-adapters-models-eu") is not None
    knowledge = _named(docs, "Deployment", "fc-forecourt-adapters-knowledge-us")
    assert knowledge is not None
    assert knowledge["spec"]["replicas"] == 1
    assert _named(docs, "PodDisruptionBudget", "fc-forecourt-adapters-knowledge-us") is None  # one replica
    server = _named(docs, "Deployment", "fc-forecourt")
    assert server is not None
    assert server["spec"]["selector"]["matchLabels"] != labels


def test_no_adapter_host_is_rendered_unless_asked(helm: str) -> None:
    docs = _render(helm, "--set", "secrets.existingSecret=forecourt-secrets")
    assert not [d for d in docs if "adapters-" in d["metadata"]["name"]]


def test_compose_runs_a_models_host_per_region_behind_a_profile() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    for region in ("us", "eu"):
        host = services[f"adapters-models-{region}"]
        assert host["profiles"] == ["adapter-hosts"]
        assert host["command"] == ["adapters", "serve", "--family", "models", "--region", region, "--port", "8090"]
