"""What a remote adapter host costs per call (docs/benchmarks.md, "Remote adapter hosts").

One run, same machine, same runtime: ``openai.invokeModel`` through ``Gateway.invoke`` with the adapter in-process,
and with the models family on a remote adapter host (``forecourt adapters serve --family models``, its own process
on loopback). The runtime is the fake OpenAI-compatible server (``tests/fakes/openai.py``) in a third process, so
both rows include the same runtime round trip and the difference is the hop: the service token, the call's JSON
both ways, one more HTTP round trip on loopback, and the host's own work. Rounds alternate the two gateways.

    .venv/bin/python bench/remote_hop.py [--calls 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from forecourt.bootstrap import build_services  # noqa: E402
from forecourt.gateway.base import Credentials, Invocation  # noqa: E402
from forecourt.settings import Settings  # noqa: E402
from models.support import PEPPER, build_template  # noqa: E402

SECRET = "bench-remote-hop-secret-0123456789abcdef"
FAKE = """
import sys, time
sys.path.insert(0, {tests!r})
from fakes.openai import fake_openai
with fake_openai() as fake:
    print(fake.base_url, flush=True)
    time.sleep(3600)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, deadline_s: float = 60.0) -> None:
    import httpx

    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def adapter_dir(path: Path, base_url: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    openai = {"base_url": base_url, "default_model": "llama3.1", "models": ["llama3.1"], "timeout_s": 30}
    (path / "openai.yaml").write_text(yaml.safe_dump({**openai, "credentials": {"type": "none"}}), encoding="utf-8")
    return path


async def timed(settings: Settings, key: str, calls: int) -> list[float]:
    services = build_services(settings, serving=False)
    await services.start(background=False)
    try:
        inv = Invocation(
            action="openai.invokeModel", payload={"input": "Is my Civic due?"}, credentials=Credentials(bearer=key)
        )
        for _ in range(20):  # warm: SDK import, connections, caches
            await services.gateway.invoke(inv)
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            await services.gateway.invoke(inv)
            samples.append((time.perf_counter() - start) * 1000)
        return samples
    finally:
        await services.close()


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return f"mean {statistics.fmean(samples):6.2f} ms  p50 {p(0.5):6.2f}  p90 {p(0.9):6.2f}  p99 {p(0.99):6.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="remote-hop-"))
    procs: list[subprocess.Popen[str]] = []
    try:
        fake = subprocess.Popen(
            [sys.executable, "-c", FAKE.format(tests=str(ROOT / "tests"))], stdout=subprocess.PIPE, text=True
        )
        procs.append(fake)
        assert fake.stdout is not None
        base_url = fake.stdout.readline().strip()
        template = work / "template.db"
        keys = asyncio.run(build_template(template))
        local_dir = adapter_dir(work / "local", base_url)
        remote_dir = adapter_dir(work / "remote", base_url)
        port = free_port()
        remote = {"families": {"models": {"hosts": [{"url": f"http://127.0.0.1:{port}", "region": "us"}]}}}
        (remote_dir / "remote.yaml").write_text(yaml.safe_dump(remote), encoding="utf-8")
        env = {**os.environ, "FORECOURT_ADAPTER_HOST_SECRET": SECRET}
        os.environ["FORECOURT_ADAPTER_HOST_SECRET"] = SECRET
        host_db = work / "host.db"
        shutil.copyfile(template, host_db)
        host_env = {
            **env,
            "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{host_db}",
            "FORECOURT_API_KEY_PEPPER": PEPPER,
            "FORECOURT_ADAPTER_CONFIG_DIR": str(local_dir),
        }
        cmd = [sys.executable, "-m", "forecourt.cli.main", "adapters", "serve", "--family", "models"]
        host = subprocess.Popen([*cmd, "--region", "us", "--host", "127.0.0.1", "--port", str(port)], env=host_env)
        procs.append(host)
        wait_for(f"http://127.0.0.1:{port}/healthz")
        results: dict[str, list[float]] = {"in-process": [], "remote host": []}
        for n in range(args.rounds):
            for name, directory in (("in-process", local_dir), ("remote host", remote_dir)):
                db = work / f"{name.replace(' ', '-')}-{n}.db"
                shutil.copyfile(template, db)
                settings = Settings(
                    database_url=f"sqlite+aiosqlite:///{db}",
                    api_key_pepper=PEPPER,
                    adapter_config_dir=directory,
                    instance_name="bench-remote-hop",
                )
                results[name].extend(asyncio.run(timed(settings, keys["crm"], args.calls)))
        for name, samples in results.items():
            print(f"{name:12} {len(samples)} calls  {summary(samples)}")
        hop = statistics.median(results["remote host"]) - statistics.median(results["in-process"])
        print(f"remote hop   +{hop:.2f} ms per call (median against median)")
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
