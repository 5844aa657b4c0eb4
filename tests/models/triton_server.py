"""A real NVIDIA Triton Inference Server (2.51, CPU-only) on loopback, started once per test session.

``scripts/install-triton.sh`` installs it into ``.triton/`` (``make pytest`` runs the script) and writes
``.triton/triton.json``: the binary, the backend directory, and the interpreter environment the Python backend's
stub must run in (its libpython first on ``LD_LIBRARY_PATH``, its venv first on ``PATH``; why: docs/models.md).
The server loads ``tests/models/triton_repository`` (copied, so the stubs' ``__pycache__`` stays out of the
source tree) in explicit model-control mode, so tests can load and unload models through the repository API.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = Path(__file__).resolve().parent / "triton_repository"
INSTALL = Path(os.environ.get("FORECOURT_TEST_TRITON_DIR", ROOT / ".triton"))
START_TIMEOUT_S = 120.0
"""Generous: each Python-backend model starts a stub process that imports numpy, on a shared 2-core machine."""
MODELS = ("add_sub", "ensemble")


class TritonUnavailable(RuntimeError):
    """The server is not installed, or did not become ready."""


@dataclass
class RealTriton:
    """A running tritonserver."""

    url: str
    repository: Path
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server's log (for failure messages)."""
        with suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v2/health/ready", timeout=1.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def install_info() -> dict[str, str]:
    """``.triton/triton.json``, or :class:`TritonUnavailable` saying how to install it."""
    stamp = INSTALL / "triton.json"
    if not stamp.is_file():
        raise TritonUnavailable(f"tritonserver is not installed ({stamp} missing): run scripts/install-triton.sh")
    info: dict[str, str] = json.loads(stamp.read_text())
    return info


@contextmanager
def real_triton(workdir: Path) -> Iterator[RealTriton]:
    """Start tritonserver on a free loopback port and wait (bounded) until every model is ready."""
    info = install_info()
    repository = workdir / "models"
    shutil.copytree(REPOSITORY, repository, ignore=shutil.ignore_patterns("__pycache__", "README.md"))
    port = _free_port()
    log = workdir / "tritonserver.log"
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(p for p in (info["ld_library_path"], env.get("LD_LIBRARY_PATH")) if p)
    env["PATH"] = f"{info['path_prefix']}:{env.get('PATH', '')}"
    command = [
        info["tritonserver"],
        f"--model-repository={repository}",
        f"--backend-directory={info['backend_directory']}",
        "--http-address=127.0.0.1",
        f"--http-port={port}",
        "--allow-grpc=false",
        "--allow-metrics=false",
        "--model-control-mode=explicit",
        *(f"--load-model={m}" for m in MODELS),
        "--exit-timeout-secs=5",
        "--log-verbose=0",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = RealTriton(url=f"http://127.0.0.1:{port}", repository=repository, log=log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ready(server.url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise TritonUnavailable(f"tritonserver did not become ready:\n{server.log_tail()}")
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
