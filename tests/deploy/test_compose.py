"""deploy/compose.yaml rendered as compose would, and its commands started with the environment it gives.

``docker compose config`` renders the file where the compose plugin is installed; elsewhere a small renderer
applies the same rules (YAML anchors and merges, ``${VAR:-default}`` from the shell, ``env_file`` below
``environment:``). Then the process set compose would start (``migrate`` and both replicas) runs here with
that environment against the local PostgreSQL and Redis, ``serve``'s start-up checks included, until
``/readyz`` answers: the quickstart starts, with secrets from ``forecourt.env`` only.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from deploy.support import DEPLOY, free_port

FORECOURT = Path(sys.executable).parent / "forecourt"
SECRETS = {
    "FORECOURT_CURSOR_SECRET",
    "FORECOURT_API_KEY_PEPPER",
    "FORECOURT_DATABASE_URL",
    "FORECOURT_CONSOLE_SESSION_SECRET",
    "FORECOURT_CONSOLE_OPERATOR_KEY",
    "POSTGRES_PASSWORD",
}
"""Values that must come from forecourt.env only (a default in compose.yaml would be published)."""
REPLICAS = ("forecourt-1", "forecourt-2")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def _interpolate(value: Any, shell: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _VAR.sub(lambda m: shell.get(m.group(1)) or (m.group(2) or ""), value).replace("$$", "$")
    if isinstance(value, list):
        return [_interpolate(v, shell) for v in value]
    if isinstance(value, dict):
        return {k: _interpolate(v, shell) for k, v in value.items()}
    return value


def _env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def _render_here(folder: Path, shell: dict[str, str]) -> dict[str, Any]:
    """What ``docker compose config`` gives for the services: command, environment and ports."""
    compose = _interpolate(yaml.safe_load((folder / "compose.yaml").read_text()), shell)
    services: dict[str, Any] = {}
    for name, service in compose["services"].items():
        env: dict[str, str] = {}
        for entry in service.get("env_file", []):
            path = folder / (entry["path"] if isinstance(entry, dict) else entry)
            if path.exists():
                env |= _env_file(path)
            elif not isinstance(entry, dict) or entry.get("required", True):
                raise AssertionError(f"env file {path} not found")
        env |= {k: str(v) for k, v in (service.get("environment") or {}).items()}
        ports = []
        for port in service.get("ports", []):
            parts = str(port).split(":")
            host_ip = parts[0] if len(parts) == 3 else ""
            ports.append({"host_ip": host_ip, "published": parts[-2], "target": int(parts[-1])})
        services[name] = {"command": service.get("command"), "environment": env, "ports": ports}
    return services


def render(folder: Path, shell: dict[str, str] | None = None) -> dict[str, Any]:
    """The rendered services of ``folder/compose.yaml`` (the real ``docker compose`` where it is installed)."""
    shell = dict(shell or {})
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, check=False).returncode == 0:
        out = subprocess.run(
            [docker, "compose", "-f", str(folder / "compose.yaml"), "config", "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
            env={"PATH": os.environ.get("PATH", ""), **shell},
            timeout=60,
        )
        return dict(json.loads(out.stdout)["services"])
    return _render_here(folder, shell)


def _published(service: dict[str, Any]) -> list[str]:
    return [str(p.get("host_ip") or "0.0.0.0") for p in service["ports"]]


@pytest.fixture
def deploy_copy(tmp_path: Path) -> Path:
    """deploy/ copied with a forecourt.env made from the example with real secrets (what an operator does)."""
    folder = tmp_path / "deploy"
    shutil.copytree(DEPLOY, folder, ignore=shutil.ignore_patterns("forecourt.env"))
    return folder


def _write_env(folder: Path, **values: str) -> dict[str, str]:
    env = _env_file(folder / "forecourt.env.example")
    password = secrets.token_hex(16)
    env |= {
        "FORECOURT_CURSOR_SECRET": secrets.token_urlsafe(48),
        "FORECOURT_API_KEY_PEPPER": secrets.token_urlsafe(48),
        "POSTGRES_PASSWORD": password,
        "FORECOURT_DATABASE_URL": f"postgresql+asyncpg://forecourt:{password}@postgres:5432/forecourt",
        "FORECOURT_PUBLIC_BASE_URL": "http://127.0.0.1:8080",
        **values,
    }
    (folder / "forecourt.env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    return env


def test_compose_sets_no_secret_itself_so_forecourt_env_is_their_only_source(deploy_copy: Path) -> None:
    raw = yaml.safe_load((deploy_copy / "compose.yaml").read_text())
    for name, service in raw["services"].items():
        named = set(service.get("environment") or {}) & SECRETS
        assert named == set(), (name, named)
    assert "change-me" not in (deploy_copy / "compose.yaml").read_text()
    env = _write_env(deploy_copy)
    services = render(deploy_copy, {"FORECOURT_CURSOR_SECRET": "from-the-shell", "FORECOURT_API_KEY_PEPPER": "x"})
    for name in (*REPLICAS, "migrate"):
        rendered = services[name]["environment"]
        for secret in ("FORECOURT_CURSOR_SECRET", "FORECOURT_API_KEY_PEPPER", "FORECOURT_DATABASE_URL"):
            assert rendered[secret] == env[secret], (name, secret)
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == env["POSTGRES_PASSWORD"]


def test_compose_refuses_to_render_without_forecourt_env(deploy_copy: Path) -> None:
    with pytest.raises((AssertionError, subprocess.CalledProcessError)):
        render(deploy_copy)


def test_published_ports_bind_loopback_unless_asked(deploy_copy: Path) -> None:
    _write_env(deploy_copy)
    services = render(deploy_copy)
    published = {name: _published(s) for name, s in services.items() if s["ports"]}
    assert {"lb", "prometheus", "grafana"} <= set(published)
    assert {ip for ips in published.values() for ip in ips} == {"127.0.0.1"}
    opened = render(deploy_copy, {"FORECOURT_PUBLISH_ADDRESS": "0.0.0.0"})
    assert {ip for s in opened.values() if s["ports"] for ip in _published(s)} == {"0.0.0.0"}


def _image_env() -> dict[str, str]:
    """The FORECOURT_* variables the image's runtime stage sets (compose's environment comes on top)."""
    runtime = (DEPLOY / "Dockerfile").read_text().split(" AS runtime", 1)[1]
    return dict(re.findall(r"\b(FORECOURT_[A-Z_]+)=(\S+)", runtime))


def _local(env: dict[str, str], database_url: str, redis_prefix: str) -> dict[str, str]:
    """The rendered environment with compose's service names pointed at this machine's PostgreSQL and Redis."""
    out = dict(env)
    out["FORECOURT_DATABASE_URL"] = database_url
    out["FORECOURT_REDIS_URL"] = re.sub(r"//redis:", "//127.0.0.1:", env["FORECOURT_REDIS_URL"])
    out["FORECOURT_REDIS_PREFIX"] = redis_prefix
    return out


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # its worker processes too
            process.wait(timeout=30)


def _command(args: list[str], port: int | None = None) -> list[str]:
    args = list(args)
    if port is not None:
        args[args.index("--port") + 1] = str(port)
    return [str(FORECOURT), *args]


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    with httpx.Client(timeout=2.0) as client:
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                if client.get(f"{url}/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)  # the polling interval of a bounded wait


@pytest.mark.postgres
@pytest.mark.redis
def test_the_compose_process_set_starts_with_the_environment_compose_gives(
    deploy_copy: Path,
    postgres_url: str,
    redis_url: str,
    redis_prefix: str,
    started: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    del redis_url
    _write_env(deploy_copy)
    services = render(deploy_copy)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FORECOURT_", "PROMETHEUS_"))}
    migrate = services["migrate"]
    env = base | _image_env() | _local(migrate["environment"], postgres_url, redis_prefix)
    done = subprocess.run(_command(migrate["command"]), env=env, capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    urls = []
    for name in REPLICAS:
        service = services[name]
        port = free_port()
        log = tmp_path / f"{name}.log"
        env = base | _image_env() | _local(service["environment"], postgres_url, redis_prefix)
        with log.open("wb") as out:
            process = subprocess.Popen(
                _command(service["command"], port), env=env, stdout=out, stderr=out, start_new_session=True
            )
        started.append(process)
        urls.append((process, f"http://127.0.0.1:{port}", log))
    for process, url, log in urls:
        _wait_ready(process, url, log)
        assert "refusing" not in log.read_text()
