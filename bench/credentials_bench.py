"""Added latency of per-call credentials (docs/benchmarks.md, "Per-call credentials").

Measures one credential issue per call, as the gateway's credential stage runs it:

- ``google cached``: the cached service-account access token (the source token; no per-call work);
- ``google downscoped``: the cached source token exchanged per call at a loopback STS (the fake in
  ``tests/fakes/vertex_extras.py``) for a token limited by a credential access boundary rendered from the call;
- ``jwt HS256`` / ``jwt RS256``: a signed token minted per call with the ``call`` claim.

    .venv/bin/python bench/credentials_bench.py [--calls 500]

The fake runs in a child process (a server thread in this process would share its GIL and add its own waits). The
STS is on loopback, so the downscoped row is the exchange's own cost (HTTP round trip, form encoding, JSON) without
the network: against sts.googleapis.com add one round trip to Google (typically 10-40 ms in-region).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.vertex import FakeVertex  # noqa: E402
from forecourt.gateway.credentials import GoogleCredentialProvider, SignedJwtProvider  # noqa: E402
from forecourt.gateway.credentials.per_call import CallScope, call_scope  # noqa: E402

RULES = [
    {
        "available_resource": "//aiplatform.googleapis.com/projects/{project}/locations/{location}/publishers/google/"
        "models/{model}",
        "available_permissions": ["inRole:roles/aiplatform.user"],
    }
]
SCOPE = CallScope(
    action="vertex.invokeModel",
    company_id="demo-motor-group",
    model="gemini-1.5-pro",
    trace_id="t",
    project="p",
    location="us-central1",
)


async def measure(name: str, calls: int, issue: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    """Per-call latency of ``issue`` after a few warm-up calls."""
    for _ in range(10):
        await issue()
    samples = []
    seen: set[str] = set()
    for _ in range(calls):
        start = time.perf_counter()
        credential = await issue()
        samples.append((time.perf_counter() - start) * 1000)
        seen.add(credential.value)
    samples.sort()
    return {
        "credential": name,
        "calls": calls,
        "distinct_tokens": len(seen),
        "mean_ms": round(statistics.fmean(samples), 3),
        "p50_ms": round(samples[len(samples) // 2], 3),
        "p95_ms": round(samples[int(len(samples) * 0.95)], 3),
    }


async def run(calls: int, sa_file: Path, sts_url: str, env: dict[str, str]) -> list[dict[str, Any]]:
    google = GoogleCredentialProvider()
    jwt_provider = SignedJwtProvider(environ=env)
    cached = {"service_account_file": str(sa_file)}
    downscoped = {**cached, "downscope": {"sts_url": sts_url, "rules": RULES}}
    hs = {"algorithm": "HS256", "key_env": "HS_KEY"}
    rs = {"algorithm": "RS256", "key_env": "RS_KEY"}
    rows = []
    with call_scope(SCOPE):
        rows.append(await measure("google cached", calls, lambda: google.issue("vertex", "c", cached)))
        rows.append(await measure("google downscoped", calls, lambda: google.issue("vertex", "c", downscoped)))
        rows.append(await measure("jwt HS256", calls, lambda: jwt_provider.issue("nvidia", "c", hs)))
        rows.append(await measure("jwt RS256", calls, lambda: jwt_provider.issue("nvidia", "c", rs)))
    await google.exchange.aclose()
    google.close()
    return rows


def serve_fake() -> None:
    """The child process: serve the fake Vertex (with its STS) with uvicorn on its own loop, print its address, and
    stop when stdin closes (the tests' thread-hosted loopback server adds ~40 ms per keep-alive request)."""
    import socket
    import threading
    from types import SimpleNamespace

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    fake = FakeVertex()
    fake.server = SimpleNamespace(base_url=f"http://127.0.0.1:{port}")  # type: ignore[assignment]
    server = uvicorn.Server(uvicorn.Config(fake.app(), host="127.0.0.1", port=port, log_level="warning"))

    def stop_on_eof() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=stop_on_eof, daemon=True).start()
    print(json.dumps({"base_url": fake.base_url, "sa": fake.service_account_info()}), flush=True)
    server.run()


def main() -> None:
    """Run and print one JSON line per credential kind."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_fake()
        return
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    env = {"HS_KEY": "bench-signing-key-0123456789abcdef0123", "RS_KEY": pem.decode(), **os.environ}
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        fake = json.loads(child.stdout.readline())
        with tempfile.TemporaryDirectory() as tmp:
            sa_file = Path(tmp) / "sa.json"
            sa_file.write_text(json.dumps(fake["sa"]))
            rows = asyncio.run(run(args.calls, sa_file, f"{fake['base_url']}v1/token", env))
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
