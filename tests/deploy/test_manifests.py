"""The deployment files are correct by construction: their references (settings, ports, health paths, files,
metric names) are checked against the code, since no container runtime or cluster runs them here."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess

import yaml

from deploy.support import DEPLOY, METRIC_NAME, ROOT, exported_metric_names, settings_env_names
from forecourt.bootstrap import create_app, route_paths
from forecourt.settings import Settings

ENV_NAME = re.compile(r"\b((?:FORECOURT|OTEL|PROMETHEUS)_[A-Z0-9_]+)\b")
# Variables of the deployment files themselves (HAProxy's addresses), not of Forecourt.
DEPLOYMENT_ONLY = {
    "FORECOURT_LB_BIND",
    "FORECOURT_REPLICA_1",
    "FORECOURT_REPLICA_2",
    "FORECOURT_LB_CHECK_INTER",
    "FORECOURT_PUBLISH_ADDRESS",
}


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def _app_paths(tmp_path) -> set[str]:
    app = create_app(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/f.db"))
    return set(route_paths(app))


def test_every_setting_named_in_the_deployment_files_is_a_field_of_settings() -> None:
    known = settings_env_names() | DEPLOYMENT_ONLY
    files = [
        DEPLOY / "compose.yaml",
        DEPLOY / "Dockerfile",
        DEPLOY / "forecourt.env.example",
        DEPLOY / "systemd" / "forecourt.service",
        DEPLOY / "haproxy" / "haproxy.cfg",
        *sorted((DEPLOY / "helm" / "forecourt").rglob("*.yaml")),
    ]
    unknown = {
        (path.relative_to(ROOT).as_posix(), name)
        for path in files
        for name in ENV_NAME.findall(path.read_text())
        if name not in known
    }
    assert unknown == set()


def test_compose_runs_postgres_redis_two_replicas_a_load_balancer_and_prometheus() -> None:
    services = _compose()["services"]
    assert {"postgres", "redis", "forecourt-1", "forecourt-2", "lb", "prometheus", "migrate"} <= set(services)
    for name in ("forecourt-1", "forecourt-2"):
        replica = services[name]
        env = replica["environment"]
        assert "FORECOURT_DATABASE_URL" not in env  # it holds the database password: forecourt.env only
        assert env["FORECOURT_REDIS_URL"].startswith("redis://redis:6379")
        assert env["FORECOURT_INSTANCE_NAME"] == name
        assert replica["build"]["dockerfile"] == "deploy/Dockerfile"
        assert replica["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["command"] == ["db", "upgrade"]


def test_compose_ports_line_up_from_the_replicas_through_the_load_balancer_to_prometheus() -> None:
    compose = _compose()
    services = compose["services"]
    command = services["forecourt-1"]["command"]
    port = command[command.index("--port") + 1]
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert f"EXPOSE {port}" in dockerfile
    assert f"FORECOURT_PORT={port}" in dockerfile
    lb_env = services["lb"]["environment"]
    assert {lb_env["FORECOURT_REPLICA_1"], lb_env["FORECOURT_REPLICA_2"]} == {
        f"forecourt-1:{port}",
        f"forecourt-2:{port}",
    }
    lb_port = lb_env["FORECOURT_LB_BIND"].rsplit(":", 1)[1]
    assert services["lb"]["ports"] == [f"${{FORECOURT_PUBLISH_ADDRESS:-127.0.0.1}}:{lb_port}:{lb_port}"]
    prometheus = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    targets = prometheus["scrape_configs"][0]["static_configs"][0]["targets"]
    assert sorted(targets) == [f"forecourt-1:{port}", f"forecourt-2:{port}"]
    # the load balancer's fixed address is the one the replicas trust for X-Forwarded-For
    trusted = json.loads(services["forecourt-1"]["environment"]["FORECOURT_TRUSTED_PROXIES"])
    assert trusted == [f"{services['lb']['networks']['forecourt']['ipv4_address']}/32"]


def test_files_mounted_by_compose_exist() -> None:
    for service in _compose()["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (DEPLOY / source).exists(), source


def test_health_paths_named_by_the_image_the_load_balancer_and_the_chart_are_served(tmp_path) -> None:
    paths = _app_paths(tmp_path)
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    haproxy = (DEPLOY / "haproxy" / "haproxy.cfg").read_text()
    values = yaml.safe_load((DEPLOY / "helm" / "forecourt" / "values.yaml").read_text())
    used = {
        *re.findall(r"127\.0\.0\.1:8000(/[a-z]+)", dockerfile),
        *re.findall(r"uri (/[a-z]+)", haproxy),
        *(probe["path"] for probe in values["probes"].values()),
        "/metrics",
    }
    assert used == {"/healthz", "/readyz", "/metrics"}
    assert used <= paths


def test_the_image_is_multi_stage_slim_non_root_with_a_healthcheck_and_the_locked_install() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+) AS (\w+)", dockerfile, re.MULTILINE)
    assert [name for _, name in stages] == ["build", "runtime"]
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.\d+-slim", dockerfile, re.MULTILINE)
    assert "RUN bash scripts/install.sh /opt/forecourt/venv" in dockerfile
    assert "scripts/install.sh" in (ROOT / "Makefile").read_text()  # the same install as `make install`
    user = re.findall(r"^USER (\S+)", dockerfile, re.MULTILINE)
    assert user
    assert not user[-1].startswith(("0", "root"))
    assert re.search(r"^HEALTHCHECK ", dockerfile, re.MULTILINE)
    assert 'ENTRYPOINT ["forecourt"]' in dockerfile
    for copied in re.findall(r"^COPY (?!--from)(.+) \S+$", dockerfile, re.MULTILINE):
        for source in copied.split():
            assert (ROOT / source).exists(), source


def test_the_systemd_unit_drains_within_its_stop_timeout() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string((DEPLOY / "systemd" / "forecourt.service").read_text())
    service = unit["Service"]
    assert service["ExecStart"].split()[1:3] == ["serve", "--workers"]
    assert service["KillSignal"] == "SIGTERM"
    assert service["User"] == "forecourt"
    env = dict(
        line.split("=", 1)
        for line in (DEPLOY / "systemd" / "forecourt.service").read_text().splitlines()
        if line.startswith("Environment=")
        for line in [line.removeprefix("Environment=")]
    )
    drain = float(env["FORECOURT_DRAIN_PERIOD_S"]) + float(env["FORECOURT_DRAIN_TIMEOUT_S"])
    assert float(service["TimeoutStopSec"]) > drain
    analyze = shutil.which("systemd-analyze")
    if analyze:  # where systemd is there, it agrees (the binary itself is not installed on this machine)
        out = subprocess.run(
            [analyze, "verify", str(DEPLOY / "systemd" / "forecourt.service")],
            capture_output=True,
            check=False,
            text=True,
            timeout=60,
        )
        problems = [line for line in out.stderr.splitlines() if line and "is not executable" not in line]
        assert problems == []


def test_the_dashboard_and_the_alert_rules_query_metrics_forecourt_exports() -> None:
    exported = exported_metric_names()
    dashboard = json.loads((DEPLOY / "grafana" / "forecourt.json").read_text())
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    exprs = [t["expr"] for p in panels for t in p["targets"]]
    alerts = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yaml").read_text())
    exprs += [rule["expr"] for group in alerts["groups"] for rule in group["rules"]]
    used = {name for expr in exprs for name in METRIC_NAME.findall(expr)}
    assert used - exported == set()
    # the dashboard covers each front door, adapter and model, and company
    titles = " ".join(p["title"] for p in panels).lower()
    for subject in ("front door", "adapter", "model", "compan"):
        assert subject in titles
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
