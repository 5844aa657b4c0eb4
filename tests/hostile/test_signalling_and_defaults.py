"""Probe: every door's unauthenticated path signals how to authenticate; a server never runs on weak or
published secrets, whatever address it binds (``--dev`` aside, on loopback)."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

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


STRONG = {"cursor_secret": secrets.token_urlsafe(48), "api_key_pepper": secrets.token_urlsafe(48)}


def _published_values() -> list[str]:
    """Every secret value the repository's deploy files and docs show (``FORECOURT_*SECRET|PEPPER|KEY=...``)."""
    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"FORECOURT_[A-Z_]*(?:SECRET|PEPPER|OPERATOR_KEY)\s*[:=]\s*\$?\{?[A-Z_]*:?-?\"?([^\s\"}]+)")
    found: set[str] = set()
    for path in [*root.joinpath("deploy").rglob("*"), *root.joinpath("docs").rglob("*.md"), root / "README.md"]:
        if path.is_file():
            found |= {m for m in pattern.findall(path.read_text(errors="replace")) if not m.startswith("$")}
    found |= {Settings().cursor_secret.get_secret_value(), Settings().api_key_pepper.get_secret_value()}
    return sorted(found)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "127.0.0.1", "localhost", "::1"])
def test_serving_with_the_published_secrets_is_refused_on_every_bind_naming_the_variables(host: str) -> None:
    problems = startup_problems(_settings(host=host, public_base_url="https://forecourt.example.com"))
    assert len(problems) == 1
    assert "FORECOURT_CURSOR_SECRET" in problems[0]
    assert "FORECOURT_API_KEY_PEPPER" in problems[0]
    assert "--dev" in problems[0]


def test_every_secret_value_the_repository_publishes_is_refused() -> None:
    values = _published_values()
    assert "replace-with-64-random-characters" in values
    for value in values:
        problems = startup_problems(
            _settings(host="127.0.0.1", cursor_secret=value, **{"api_key_pepper": STRONG["api_key_pepper"]})
        )
        assert problems, value


@pytest.mark.parametrize("weak", ["x", "s" * 64, "0123456789" * 4, "aap-tests-pepper-0123456789abcdef"])
def test_short_low_entropy_and_test_looking_secrets_are_refused(weak: str) -> None:
    for name in ("cursor_secret", "api_key_pepper", "console_session_secret", "console_operator_key"):
        problems = startup_problems(_settings(host="127.0.0.1", **{**STRONG, name: weak}))
        assert len(problems) == 1, (name, weak)
        assert f"FORECOURT_{name.upper()}" in problems[0]


def test_random_secrets_are_allowed_on_a_public_address() -> None:
    settings = _settings(
        host="0.0.0.0", public_base_url="https://fc.example.com", console_session_secret=secrets.token_hex(16), **STRONG
    )
    assert startup_problems(settings) == []


@pytest.mark.parametrize(
    "where",
    [
        {"host": "0.0.0.0"},
        {"host": "10.1.2.3"},
        {"host": "127.0.0.1", "behind_proxy": True, "trusted_proxies": ["10.0.0.1"]},
    ],
)
def test_a_server_reached_at_another_address_needs_its_public_base_url(where: dict[str, object]) -> None:
    problems = startup_problems(_settings(**where, **STRONG))
    assert len(problems) == 1
    assert "FORECOURT_PUBLIC_BASE_URL" in problems[0]
    assert startup_problems(_settings(**where, public_base_url="https://fc.example.com", **STRONG)) == []


def test_a_loopback_server_reached_directly_advertises_its_bind_address() -> None:
    assert startup_problems(_settings(host="127.0.0.1", **STRONG)) == []


def test_dev_mode_allows_the_development_secrets_on_loopback_only() -> None:
    assert startup_problems(_settings(host="127.0.0.1"), dev=True) == []
    refused = startup_problems(_settings(host="0.0.0.0"), dev=True)
    assert len(refused) == 1
    assert "--dev" in refused[0]


def _serve(args: list[str], tmp_path: object, **env_values: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env["FORECOURT_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path}/x.db"
    env.update(env_values)
    return subprocess.run(
        [sys.executable, "-m", "forecourt.cli.main", "serve", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_forecourt_serve_exits_with_one_line_on_a_loopback_bind_with_the_published_secrets(tmp_path: object) -> None:
    result = _serve(["--host", "127.0.0.1", "--port", "1"], tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if "refusing" in line]
    assert len(lines) == 1, result.stderr[-2000:]
    assert "FORECOURT_CURSOR_SECRET" in lines[0]
    example = "replace-with-64-random-characters"
    result = _serve(["--port", "1"], tmp_path, FORECOURT_CURSOR_SECRET=example, FORECOURT_API_KEY_PEPPER=example)
    assert result.returncode == 2, result.stderr[-2000:]
    assert example not in result.stderr  # the reason is named, never the value


def test_startup_refused_is_a_system_exit_with_status_2() -> None:
    assert issubclass(StartupRefused, SystemExit)
