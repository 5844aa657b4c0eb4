"""Fixtures: the demo database is built once per session; each test gets fresh fakes and its own app."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from fakes.anthropic import fake_anthropic
from fakes.customizer import fake_customizer
from fakes.huggingface import fake_inference_endpoint
from fakes.openai import fake_openai
from fakes.triton import fake_triton
from fakes.vertex import fake_vertex

from .support import (
    ANTHROPIC_KEY,
    ANTHROPIC_KEY_ENV,
    HF_TOKEN,
    HF_TOKEN_ENV,
    NIM_KEY,
    NIM_KEY_ENV,
    Fakes,
    Rig,
    adapter_files,
    build_template,
    start_rig,
)
from .triton_server import RealTriton, TritonUnavailable, real_triton

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("models-template") / "template.db"
    keys = asyncio.run(build_template(path))
    return path, keys


@pytest.fixture(scope="session")
def running_fakes() -> Iterator[Fakes]:
    """The fake runtimes on loopback, started once per session."""
    with ExitStack() as stack:
        yield Fakes(
            vertex=stack.enter_context(fake_vertex()),
            triton=stack.enter_context(fake_triton()),
            openai=stack.enter_context(fake_openai()),
            nim=stack.enter_context(
                fake_openai(api_key=NIM_KEY, models=("meta/llama-3.1-8b-instruct", "nvidia/nv-embedqa-e5-v5"))
            ),
            customizer=stack.enter_context(fake_customizer()),
            anthropic=stack.enter_context(fake_anthropic(api_key=ANTHROPIC_KEY)),
            huggingface=stack.enter_context(fake_inference_endpoint(token=HF_TOKEN)),
        )


@pytest.fixture(scope="session")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealTriton]:
    """The real tritonserver, started once per session (fails in CI when it cannot run, skips elsewhere)."""
    try:
        with real_triton(tmp_path_factory.mktemp("tritonserver")) as server:
            yield server
    except TritonUnavailable as exc:
        if IN_CI:
            pytest.fail(f"a real tritonserver is required in CI: {exc}")
        pytest.skip(f"no real tritonserver here: {exc}")


@pytest.fixture
def fakes(running_fakes: Fakes, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fakes]:
    """The fakes, reset for this test; NIM wants a bearer key read from a named variable."""
    monkeypatch.setenv(NIM_KEY_ENV, NIM_KEY)
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_KEY)
    monkeypatch.setenv(HF_TOKEN_ENV, HF_TOKEN)
    for fake in running_fakes.all():
        fake.reset()
    yield running_fakes
    for fake in running_fakes.all():
        fake.faults.release()


@asynccontextmanager
async def running_rig(
    template: tuple[Path, dict[str, str]], config_dir: Path, tmp_path: Path, **settings: Any
) -> AsyncIterator[Rig]:
    """The app on a copy of the template database, with the given adapter files (and settings)."""
    made = await start_rig(template[0], template[1], tmp_path, config_dir, **settings)
    try:
        yield made
    finally:
        await made.client.aclose()
        # Write the audit trail while the app's background tasks still run normally: closing cancels them, and
        # a task cancelled inside an SQLite transaction can keep the file locked while close() flushes.
        await made.services.audit.flush()
        await made.services.close()


@pytest.fixture
async def rig(template: tuple[Path, dict[str, str]], fakes: Fakes, tmp_path: Path) -> AsyncIterator[Rig]:
    """The app with adapter files pointing at the fakes (Triton: the fake, for faults a real server cannot show)."""
    async with running_rig(template, adapter_files(tmp_path / "adapters", fakes), tmp_path) as made:
        yield made


@pytest.fixture
async def triton_rig(
    template: tuple[Path, dict[str, str]], fakes: Fakes, triton: RealTriton, tmp_path: Path
) -> AsyncIterator[Rig]:
    """The app with the NVIDIA adapter's Triton endpoint on the real tritonserver."""
    config_dir = adapter_files(tmp_path / "adapters", fakes, triton_url=triton.url)
    async with running_rig(template, config_dir, tmp_path) as made:
        yield made


@pytest.fixture
def closed_port_url() -> str:
    """An http URL on loopback where nothing listens (the port was bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
