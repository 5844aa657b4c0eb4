"""Probe: hostile YAML on every door that reads YAML (issue 12, item 3).

A 540-byte billion-laughs file made ``forecourt apply --dry-run`` run past 120 s and grow to gigabytes; a second
``profile:`` silently replaced the first and changed the plan; deep nesting, invalid UTF-8 and lone surrogates
ended in tracebacks. Each door that reads a YAML file (``forecourt apply``, the operator's adapter configuration
folder) now refuses each of them at once, in one line that names the line, writes nothing and prints no
traceback. The admin API and the console take tenants as JSON, never YAML.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from forecourt.adapters.config import load_adapter_defaults
from forecourt.adapters.errors import AdapterConfigError
from forecourt.cli.main import app as cli
from forecourt.store import upgrade_async

LAUGHS = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
        "profile: {id: lol, name: *i}",
    ]
).encode()

HOSTILE: dict[str, tuple[bytes, int]] = {
    "billion laughs": (LAUGHS, 1),
    "a second profile": (b"profile: {id: first, name: First}\ncompanies: []\nprofile: {id: second, name: B}\n", 3),
    "deep nesting": (b"profile:\n  name: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", 2),
    "invalid UTF-8": (b"profile:\n  id: p\n  name: caf\xe9\n", 3),
    "a lone surrogate": (b'profile:\n  id: p\n  name: "\\udc80"\n', 3),
    "an impossible date": (b"profile:\n  id: p\n  name: 2026-02-30\n", 3),
}


@pytest.fixture
def database(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'forecourt.db'}"
    asyncio.run(upgrade_async(url))
    return url


def _audit_rows(url: str) -> int:
    with sqlite3.connect(url.removeprefix("sqlite+aiosqlite:///")) as conn:
        return int(conn.execute("SELECT count(*) FROM audit_records").fetchone()[0])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "apply"])
def test_forecourt_apply_refuses_hostile_yaml_in_one_line_naming_where(
    database: str, tmp_path: Path, case: str, dry_run: bool
) -> None:
    data, line = HOSTILE[case]
    path = tmp_path / "tenants.yaml"
    path.write_bytes(data)
    args = ["apply", str(path), "--json", *(["--dry-run"] if dry_run else [])]
    result = CliRunner().invoke(cli, args, env={"FORECOURT_DATABASE_URL": database})
    assert result.exit_code == 2, result.output
    assert f"is not valid YAML at line {line}, column " in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert _audit_rows(database) == 0  # refused before any call: nothing planned, applied or audited


def test_a_second_profile_key_no_longer_changes_the_plan(database: str, tmp_path: Path) -> None:
    """Before, the last ``profile:`` won: the plan silently created ``second`` instead of ``first``."""
    path = tmp_path / "tenants.yaml"
    path.write_bytes(HOSTILE["a second profile"][0])
    result = CliRunner().invoke(
        cli, ["apply", str(path), "--dry-run", "--json"], env={"FORECOURT_DATABASE_URL": database}
    )
    assert result.exit_code == 2
    assert "'profile' appears twice (first at line 1)" in result.output
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.stdout or "")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_adapter_configuration_folder_refuses_hostile_yaml_by_file_and_line(tmp_path: Path, case: str) -> None:
    data, _ = HOSTILE[case]
    (tmp_path / "vertex.yaml").write_bytes(data.replace(b"profile", b"project"))
    with pytest.raises(AdapterConfigError) as caught:
        load_adapter_defaults(tmp_path)
    error: Any = caught.value
    assert error.code == "adapters.invalid_config"
    assert "vertex.yaml: not valid YAML at line" in error.message
    assert isinstance(error.details.get("line"), int)
