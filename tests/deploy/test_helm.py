"""The Helm chart, rendered by the real ``helm`` (``make helm``) and checked against the code."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy.support import DEPLOY, ROOT, require_program, settings_env_names

CHART = DEPLOY / "helm" / "forecourt"
SETTINGS = ["--set", "secrets.existingSecret=forecourt-secrets"]
PRODUCTION = ["-f", str(CHART / "values-production.yaml")]
PROMETHEUS_OPERATOR = ["--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"]


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


@pytest.mark.parametrize("values", [SETTINGS, PRODUCTION], ids=["default", "production"])
def test_the_chart_lints_clean_in_strict_mode(helm: str, values: list[str]) -> None:
    out = subprocess.run(
        [helm, "lint", "--strict", str(CHART), *values], capture_output=True, text=True, check=False, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_chart_renders_a_deployment_service_hpa_pdb_service_monitor_and_migrations_job(helm: str) -> None:
    docs = _template(helm, *SETTINGS, *PROMETHEUS_OPERATOR)
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
    docs = _template(helm, *SETTINGS, *PROMETHEUS_OPERATOR)
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


def test_the_service_monitor_is_rendered_only_where_its_crd_exists(helm: str) -> None:
    assert "ServiceMonitor" not in _template(helm, *SETTINGS)
    assert "ServiceMonitor" in _template(helm, *SETTINGS, *PROMETHEUS_OPERATOR)
    assert "ServiceMonitor" not in _template(
        helm, *SETTINGS, *PROMETHEUS_OPERATOR, "--set", "serviceMonitor.enabled=false"
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["--set", "autoscaling.enabled=false", "--set", "replicaCount=1"], False),
        (["--set", "autoscaling.enabled=false", "--set", "replicaCount=3"], True),
        (["--set", "autoscaling.minReplicas=1"], False),
        (["--set", "autoscaling.minReplicas=2"], True),
    ],
)
def test_a_disruption_budget_exists_only_with_more_than_one_replica(
    helm: str, values: list[str], expected: bool
) -> None:
    assert ("PodDisruptionBudget" in _template(helm, *SETTINGS, *values)) is expected


def test_the_ingress_is_optional_and_terminates_tls_for_the_service(helm: str) -> None:
    assert "Ingress" not in _template(helm, *SETTINGS)
    docs = _template(helm, *PRODUCTION)
    (ingress,) = docs["Ingress"]
    service = docs["Service"][0]
    assert ingress["spec"]["tls"] == [{"hosts": ["forecourt.example.com"], "secretName": "forecourt-tls"}]
    (rule,) = ingress["spec"]["rules"]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": service["metadata"]["name"], "port": {"name": service["spec"]["ports"][0]["name"]}}
    env = {e["name"]: e.get("value") for e in _container(docs, "Deployment")["env"]}
    assert env["FORECOURT_PUBLIC_BASE_URL"] == f"https://{rule['host']}"


def test_the_values_schema_refuses_unknown_keys_and_secrets_in_plain_settings(helm: str) -> None:
    for bad in ("replicas=2", "env.FORECOURT_API_KEY_PEPPER=x", "workers=0", "service.type=Public"):
        out = subprocess.run(
            [helm, "template", "fc", str(CHART), *SETTINGS, "--set", bad],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert out.returncode != 0, bad
        assert "schema" in out.stderr, (bad, out.stderr)


def test_helm_test_asks_the_services_readyz(helm: str) -> None:
    docs = _template(helm, *SETTINGS)
    pods = [p for p in docs["Pod"] if p["metadata"]["annotations"].get("helm.sh/hook") == "test"]
    (pod,) = pods
    service = docs["Service"][0]
    container = pod["spec"]["containers"][0]
    url = container["command"][-1]
    assert url == f"http://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}/readyz"
    assert pod["spec"]["restartPolicy"] == "Never"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_service_and_the_budget_select_the_server_pods_only(helm: str) -> None:
    docs = _template(helm, *SETTINGS)
    server = docs["Deployment"][0]["spec"]["template"]["metadata"]["labels"]
    migrate = docs["Job"][0]["spec"]["template"]["metadata"]["labels"]
    for selector in (docs["Service"][0]["spec"]["selector"], docs["PodDisruptionBudget"][0]["spec"]["selector"]):
        labels = selector.get("matchLabels", selector)
        assert labels.items() <= server.items()
        assert not labels.items() <= migrate.items()


def test_a_further_component_gets_its_own_deployment_from_the_chart_helper(helm: str, tmp_path: Path) -> None:
    chart = tmp_path / "forecourt"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "extra.yaml").write_text(
        '{{ include "forecourt.componentDeployment" (dict "root" $ "component" "adapters-crm" '
        '"args" (list "crm" "sink") "values" (dict "replicaCount" 2)) }}\n'
    )
    out = subprocess.run(
        [helm, "template", "fc", str(chart), *SETTINGS], capture_output=True, text=True, check=True, timeout=60
    )
    deployments = {d["metadata"]["name"]: d for d in yaml.safe_load_all(out.stdout) if d and d["kind"] == "Deployment"}
    extra, server = deployments["fc-forecourt-adapters-crm"], deployments["fc-forecourt"]
    container = extra["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["crm", "sink"]
    assert "ports" not in container
    assert {e["name"] for e in container["env"]} == {e["name"] for e in _container({"D": [server]}, "D")["env"]}
    pod = extra["spec"]["template"]["metadata"]["labels"]
    assert not server["spec"]["selector"]["matchLabels"].items() <= pod.items()
    service = yaml.safe_load(
        subprocess.run(
            [helm, "template", "fc", str(chart), *SETTINGS, "-s", "templates/service.yaml"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    )
    assert not service["spec"]["selector"].items() <= pod.items()


@pytest.mark.parametrize("values", [SETTINGS, PRODUCTION], ids=["default", "production"])
def test_serves_start_up_checks_accept_what_the_chart_gives(helm: str, values: list[str]) -> None:
    from forecourt.cli.preflight import startup_problems
    from forecourt.settings import Settings

    container = _container(_template(helm, *values), "Deployment")
    env = {}
    for entry in container["env"]:
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        elif "secretKeyRef" in entry.get("valueFrom", {}):
            env[entry["name"]] = secrets.token_urlsafe(48)  # what the operator's Secret holds
    env["FORECOURT_DATABASE_URL"] = "postgresql+asyncpg://fc:pw@db/fc"
    env["FORECOURT_REDIS_URL"] = "redis://cache:6379/0"
    args = container["args"]
    host = args[args.index("--host") + 1]
    saved = {k: v for k, v in os.environ.items() if k.startswith("FORECOURT_")}
    try:
        for name in saved:
            del os.environ[name]
        os.environ.update(env)
        settings = Settings.load(host=host)
    finally:
        for name in env:
            os.environ.pop(name, None)
        os.environ.update(saved)
    assert startup_problems(settings) == []
