"""The Helm chart, rendered by the real ``helm`` (``make helm``) and checked against the code."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy.support import DEPLOY, ROOT, require_program, settings_env_names

CHART = DEPLOY / "helm" / "forecourt"
SETTINGS = ["--set", "secrets.existingSecret=forecourt-secrets"]


@pytest.fixture(scope="module")
def helm() -> str:
    return require_program("helm", str(ROOT / ".cache" / "helm" / "bin" / "helm"))


def _template(helm: str, *args: str) -> dict[str, list[dict[str, Any]]]:
    out = subprocess.run(
        [helm, "template", "fc", str(CHART), *args], capture_output=True, text=True, check=True, timeout=60
    )
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in yaml.safe_load_all(out.stdout):
        if doc:
            by_kind.setdefault(doc["kind"], []).append(doc)
    return by_kind


def _container(docs: dict[str, list[dict[str, Any]]], kind: str) -> dict[str, Any]:
    spec = docs[kind][0]["spec"]["template"]["spec"]
    return dict(spec["containers"][0])


def test_the_chart_lints_clean(helm: str) -> None:
    out = subprocess.run([helm, "lint", str(CHART), *SETTINGS], capture_output=True, text=True, check=False, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_chart_renders_a_deployment_service_hpa_pdb_service_monitor_and_migrations_job(helm: str) -> None:
    docs = _template(helm, *SETTINGS)
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ServiceMonitor", "Job"} <= set(
        docs
    )
    job = docs["Job"][0]
    assert _container(docs, "Job")["args"] == ["db", "upgrade"]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert (
        docs["HorizontalPodAutoscaler"][0]["spec"]["scaleTargetRef"]["name"]
        == docs["Deployment"][0]["metadata"]["name"]
    )


def test_probes_ports_and_the_service_monitor_point_at_what_forecourt_serves(helm: str) -> None:
    docs = _template(helm, *SETTINGS)
    container = _container(docs, "Deployment")
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    (port,) = container["ports"]
    args = container["args"]
    assert args[:1] == ["serve"]
    assert int(args[args.index("--port") + 1]) == port["containerPort"]
    assert docs["Service"][0]["spec"]["ports"][0]["targetPort"] == port["name"]
    endpoint = docs["ServiceMonitor"][0]["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["path"]) == (port["name"], "/metrics")
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]


def test_secrets_come_from_secret_references_and_every_variable_is_a_setting(helm: str) -> None:
    docs = _template(helm, *SETTINGS)
    known = settings_env_names()
    for kind in ("Deployment", "Job"):
        env = _container(docs, kind)["env"]
        assert {e["name"] for e in env} <= known
        from_secret = {
            e["name"]: e["valueFrom"]["secretKeyRef"] for e in env if "secretKeyRef" in e.get("valueFrom", {})
        }
        assert set(from_secret) == {
            "FORECOURT_CURSOR_SECRET",
            "FORECOURT_API_KEY_PEPPER",
            "FORECOURT_DATABASE_URL",
            "FORECOURT_REDIS_URL",
        }
        assert {ref["name"] for ref in from_secret.values()} == {"forecourt-secrets"}
        assert not any("value" in e and "PEPPER" in e["name"] for e in env)


def test_the_pod_drains_before_it_is_killed(helm: str) -> None:
    docs = _template(helm, *SETTINGS, "--set", "drain.drainPeriodSeconds=20")
    pod = docs["Deployment"][0]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FORECOURT_DRAIN_PERIOD_S"] == "20"
    assert container["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "5"]
    assert pod["terminationGracePeriodSeconds"] > 5 + 20 + float(env["FORECOURT_DRAIN_TIMEOUT_S"])


def test_the_chart_refuses_to_render_without_a_secret_for_the_peppers_and_keys(helm: str) -> None:
    out = subprocess.run([helm, "template", "fc", str(CHART)], capture_output=True, text=True, check=False, timeout=60)
    assert out.returncode != 0
    assert "secrets.existingSecret" in out.stderr


def test_a_secret_created_by_the_chart_holds_every_key_the_pods_read(helm: str, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "secrets": {
                    "create": True,
                    "values": {
                        "cursorSecret": "c" * 40,
                        "apiKeyPepper": "p" * 40,
                        "databaseUrl": "postgresql+asyncpg://fc:pw@db/fc",
                        "redisUrl": "redis://cache:6379/0",
                    },
                }
            }
        )
    )
    docs = _template(helm, "-f", str(values))
    (secret,) = docs["Secret"]
    refs = {
        e["valueFrom"]["secretKeyRef"]["key"]
        for e in _container(docs, "Deployment")["env"]
        if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]
    }
    assert refs == set(secret["stringData"])
    assert secret["metadata"]["annotations"]["helm.sh/hook-weight"] == "-10"  # before the migrations Job
