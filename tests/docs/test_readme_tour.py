"""The README's commands run as written: `make run`'s recipe, then every shell block of the tour, on a real server.

`make run` is not run itself (it would install and serve on port 8000): its recipe is read from the Makefile
(`forecourt db upgrade`, `forecourt demo`, `forecourt serve --port 8000`) and run with this venv's forecourt,
a fresh database and a free port. Each README shell block then runs under ``bash -euo pipefail`` with only
the port substituted; ``curl`` is wrapped to record each answer's HTTP status, so a README call that starts
failing (4xx/5xx that its comment does not announce as a refusal) fails this test.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAKEFILE = ROOT / "Makefile"
BIN = Path(sys.executable).parent
README_PORT = "8000"

CURL_WRAPPER = r"""
curl() {
  local out
  out=$(command curl -w $'\n__STATUS__%{http_code}' "$@") || return $?
  printf '%s\n' "${out%$'\n'__STATUS__*}"
  printf '%s\n' "${out##*__STATUS__}" >> "$README_STATUS_LOG"
}
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _recipe(target: str) -> list[str]:
    """The command lines of a Makefile target."""
    lines = MAKEFILE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        out.append(line.strip().lstrip("@"))
    return out


def _forecourt_commands(targets: list[str], port: int) -> list[list[str]]:
    commands = []
    for target in targets:
        for line in _recipe(target):
            if "$(BIN)/forecourt" in line:
                words = line.replace("$(BIN)/forecourt", str(BIN / "forecourt")).split()
                commands.append([w if w != README_PORT else str(port) for w in words])
    return commands


def _shell_blocks() -> list[tuple[str, str]]:
    """(section title, block) for every ```sh block of the README after its "Two commands" section."""
    text = README.read_text(encoding="utf-8")
    blocks = []
    section = ""
    for part in re.split(r"^(## .+)$", text, flags=re.MULTILINE):
        if part.startswith("## "):
            section = part[3:].strip()
            continue
        if section in ("", "Two commands"):
            continue
        blocks += [(section, b) for b in re.findall(r"```sh\n(.*?)```", part, flags=re.DOTALL)]
    return blocks


def _expected_refusals(block: str) -> int:
    return sum(1 for line in block.splitlines() if line.strip().startswith("#") and "refused" in line)


def _env(db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env.update(
        {
            "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "FORECOURT_API_KEY_PEPPER": "readme-tour-pepper-0123456789",
            "FORECOURT_LOG_LEVEL": "WARNING",
        }
    )
    return env


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, dict[str, str], str]]:
    """`make run`'s recipe with this venv: migrate, load the demo, serve on a free port."""
    directory = tmp_path_factory.mktemp("readme")
    env = _env(directory / "forecourt.db") | {"STATE_DIRECTORY": str(directory)}
    port = _free_port()
    *setup, serve = _forecourt_commands(["migrate", "demo", "run"], port)
    assert serve[1] == "serve", "make run must end by serving"
    assert str(port) in serve, "make run must serve on port 8000"
    for command in setup:
        done = subprocess.run(command, env=env, capture_output=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    proc = subprocess.Popen(serve, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, "forecourt serve exited during start-up"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "forecourt serve did not become ready"
            time.sleep(0.05)
        yield port, env, "ok"
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    # The first start on a database without operator keys made one and handed it over once: off a terminal, in a
    # file only its owner reads (stdout is a service log there), whose path is printed.
    key_file = directory / "bootstrap-operator-key"
    assert re.fullmatch(r"fco_[a-z0-9]{10}_[A-Za-z0-9]{40}\n", key_file.read_text())
    assert str(key_file) in out.decode()
    assert not re.search(rb"fco_[a-z0-9]{10}_[A-Za-z0-9]{40}", out)


def test_the_readme_has_a_tour_and_the_operators_first_day() -> None:
    sections = [title for title, _ in _shell_blocks()]
    assert "A short tour" in sections
    assert "Your own dealer group" in sections
    text = README.read_text(encoding="utf-8")
    assert "forecourt apply" in text
    assert "docs/tenants.md" in text


@pytest.mark.parametrize("index", range(len(_shell_blocks())))
def test_every_readme_shell_block_runs_as_written_against_a_real_server(
    index: int, served: tuple[int, dict[str, str], str], tmp_path: Path
) -> None:
    port, env, _ = served
    title, block = _shell_blocks()[index]
    script = block.replace(f"127.0.0.1:{README_PORT}", f"127.0.0.1:{port}").replace(
        ".venv/bin/forecourt", str(BIN / "forecourt")
    )
    status_log = tmp_path / "status.log"
    status_log.touch()
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", CURL_WRAPPER + script],
        env={**env, "README_STATUS_LOG": str(status_log), "PATH": f"{BIN}:{env.get('PATH', '')}"},
        cwd=ROOT,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, f"README section {title!r} failed:\n{run.stderr.decode()[-3000:]}"
    statuses = [int(s) for s in status_log.read_text().split()]
    failures = [s for s in statuses if s >= 400]
    assert len(failures) == _expected_refusals(block), f"{title}: HTTP statuses {statuses}\n{run.stdout.decode()}"
    assert all(s < 500 for s in statuses)
