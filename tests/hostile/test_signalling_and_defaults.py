"""Probe: every door's unauthenticated path signals how to authenticate; a reachable server never runs on the
published default secrets (issue 11, item 7)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from forecourt.cli.preflight import StartupRefused, startup_problems
from forecourt.settings import Settings
from gateway.support import MOTOR, TOYOTA, Rig

# Every admin REST route, one request each, without credentials and with a wrong one.
ADMIN_PATHS = [
    ("GET", f"/admin/v1/companies/{MOTOR}"),
    ("GET", f"/admin/v1/companies/{MOTOR}/members"),
    ("POST", f"/admin/v1/companies/{MOTOR}/keys"),
    ("PUT", f"/admin/v1/companies/{MOTOR}/policies/p1"),
    ("DELETE", f"/admin/v1/companies/{MOTOR}/keys/abc"),
    ("GET", f"/admin/v1/companies/{MOTOR}/audit"),
    ("GET", f"/admin/v1/dealerships/{TOYOTA}/leads/l1/deliveries"),
]


@pytest.mark.parametrize("token", [None, "not-a-key"], ids=["anonymous", "wrong-key"])
@pytest.mark.parametrize(("method", "path"), ADMIN_PATHS)
async def test_the_admin_api_answers_401_with_a_bearer_challenge(
    rig: Rig, method: str, path: str, token: str | None
) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = b"{}" if method in ("POST", "PUT") else None
    response = await rig.client.request(method, path, headers=headers, content=body)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].lower().startswith("bearer ")
    assert response.json()["error"]["code"] == "auth.unauthorized"


def _settings(**values: object) -> Settings:
    return Settings(**values)  # type: ignore[arg-type]


def test_serving_on_a_non_loopback_address_with_the_published_secrets_is_refused_naming_the_variables() -> None:
    problems = startup_problems(_settings(host="0.0.0.0"))
    assert len(problems) == 1
    assert "FORECOURT_CURSOR_SECRET" in problems[0]
    assert "FORECOURT_API_KEY_PEPPER" in problems[0]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_serving_on_loopback_with_the_published_secrets_is_allowed(host: str) -> None:
    assert startup_problems(_settings(host=host)) == []


def test_serving_on_a_public_address_with_real_secrets_is_allowed() -> None:
    settings = _settings(host="0.0.0.0", cursor_secret="s" * 32, api_key_pepper="p" * 32)
    assert startup_problems(settings) == []


def test_one_published_secret_left_is_refused_naming_only_it() -> None:
    problems = startup_problems(_settings(host="10.1.2.3", cursor_secret="s" * 32))
    assert len(problems) == 1
    assert "FORECOURT_API_KEY_PEPPER" in problems[0]
    assert "FORECOURT_CURSOR_SECRET" not in problems[0]


def test_forecourt_serve_exits_with_one_line_when_the_published_secrets_would_be_reachable(tmp_path: object) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env["FORECOURT_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path}/x.db"
    result = subprocess.run(
        [sys.executable, "-m", "forecourt.cli.main", "serve", "--host", "0.0.0.0", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if "refusing" in line]
    assert len(lines) == 1, result.stderr[-2000:]
    assert "FORECOURT_CURSOR_SECRET" in lines[0]


def test_startup_refused_is_a_system_exit_with_status_2() -> None:
    assert issubclass(StartupRefused, SystemExit)
