"""The models family on remote adapter hosts: a gateway and two hosts (regions ``us`` and ``eu``) on loopback, each
host a real uvicorn server (``forecourt.cli.adapter_host``) running the same adapters against the same fake runtimes."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from fakes.server import LoopbackServer
from forecourt.adapters.remote import RemoteAdapter
from forecourt.adapters.remote.wire import sign_service_token
from forecourt.cli.adapter_host import AdapterHost, create_host_app
from forecourt.errors import ForecourtError
from forecourt.settings import Settings

from .support import MOTOR, PEPPER, Rig, adapter_files, start_rig

SECRET = "remote-host-test-secret-0123456789abcdef"
SECRET_ENV = "FC_TEST_ADAPTER_HOST_SECRET"
CHAT = {"input": "Is my Civic due for service?"}


class Host:
    """One adapter host on loopback (its lifespan builds and closes its services)."""

    def __init__(self, app: Any) -> None:
        self.server = LoopbackServer(app)
        self.server.server.config.lifespan = "on"
        self.app = app

    @property
    def url(self) -> str:
        return self.server.base_url

    @property
    def host(self) -> AdapterHost:
        host: AdapterHost = self.app.state.host
        return host


@contextmanager
def running_host(
    template_db: Path, tmp_path: Path, config_dir: Path, region: str, secret: str, tls: dict[str, Any] | None = None
) -> Iterator[Host]:
    db = tmp_path / f"host-{region}.db"
    shutil.copyfile(template_db, db)
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{db}",
        api_key_pepper=PEPPER,
        instance_name=f"adapter-host-{region}",
        adapter_config_dir=config_dir,
    )
    host = Host(create_host_app(settings, family="models", region=region, secret=secret))
    for name, value in (tls or {}).items():  # uvicorn's own TLS options, as `forecourt adapters serve` sets them
        setattr(host.server.server.config, name, value)
    host.server.start()
    try:
        yield host
    finally:
        host.server.request_stop()
        host.server.join()


@pytest.fixture
def hosts(template, fakes, tmp_path, monkeypatch) -> Iterator[dict[str, Host]]:
    """Hosts in ``us`` and ``eu`` sharing the gateway's secret."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    config_dir = adapter_files(tmp_path / "host-adapters", fakes, openai={"timeout_s": 20})
    with (
        running_host(template[0], tmp_path, config_dir, "us", SECRET) as us,
        running_host(template[0], tmp_path, config_dir, "eu", SECRET) as eu,
    ):
        yield {"us": us, "eu": eu}


@asynccontextmanager
async def gateway(template, fakes, tmp_path: Path, hosts: dict[str, Host], **remote: Any) -> AsyncIterator[Rig]:
    """The app with the models family on ``hosts`` (this gateway's own region: us)."""
    config_dir = adapter_files(tmp_path / "gateway-adapters", fakes, openai={"timeout_s": 20})
    section = {
        "families": {"models": {"hosts": [{"url": h.url, "region": r} for r, h in hosts.items()]}},
        "home_region": "us",
        "secret_env": SECRET_ENV,
        "health_interval_s": 3600,
        **remote,
    }
    (config_dir / "remote.yaml").write_text(yaml.safe_dump(section), encoding="utf-8")
    made = await start_rig(template[0], template[1], tmp_path / "gateway", config_dir)
    try:
        yield made
    finally:
        await made.client.aclose()
        await made.services.audit.flush()
        await made.services.close()


async def pin(rig: Rig, region: str) -> None:
    await rig.operator(
        "admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "remote", "config": {"region": region}}
    )


async def records(rig: Rig, trace_id: str) -> list[tuple[str, int, str | None]]:
    assert await rig.services.audit.flush()
    async with rig.services.store.transaction() as uow:
        page = await uow.audit.page(MOTOR, limit=500)
    return [(r.action, r.status_code, r.error_code) for r in page if r.trace_id == trace_id]


@pytest.fixture
def gateway_dir(tmp_path: Path) -> Path:
    (tmp_path / "gateway").mkdir()
    return tmp_path


async def test_a_company_pinned_to_eu_is_served_only_by_the_eu_host(template, fakes, hosts, gateway_dir):
    async with gateway(template, fakes, gateway_dir, hosts) as rig:
        assert isinstance(rig.services.catalogue.adapter_for_id("openai"), RemoteAdapter)
        await pin(rig, "eu")
        for _ in range(3):
            outcome = await rig.invoke("openai.invokeModel", CHAT)
            assert outcome.output == fakes.openai.reply
            assert outcome.metadata["usage"]["output_tokens"] == len(fakes.openai.reply.split())
        assert (hosts["eu"].host.calls, hosts["us"].host.calls) == (3, 0)
        assert await records(rig, outcome.trace_id) == [("openai.invokeModel", 200, None)]
        await pin(rig, "us")
        await rig.invoke("openai.invokeModel", CHAT)
        assert (hosts["eu"].host.calls, hosts["us"].host.calls) == (3, 1)


async def test_a_gateway_sending_hosts_only_model_calls_takes_no_nested_call_even_with_a_valid_grant(
    template, fakes, hosts, gateway_dir
):
    from forecourt.contract import Principal
    from forecourt.contract.grants import NESTED_PATH, grant_key, sign_grant

    caller = Principal(method="internal", company_id=None, member_id=None, subject="operator")
    grant = sign_grant(
        grant_key(PEPPER), caller, trace_id="t", session_id=None, writes=True, depth=1, expires_at=time.time() + 60
    )
    async with gateway(template, fakes, gateway_dir, hosts) as rig:
        answer = await rig.client.post(
            NESTED_PATH,
            json={"action": "admin.companies.list", "payload": {}},
            headers={"Authorization": f"Bearer {grant}"},
        )
        assert answer.status_code == 404


async def test_a_host_refuses_a_token_pinned_to_another_region(hosts):
    token = sign_service_token(
        SECRET, family="models", region="eu", company=MOTOR, action="openai.invokeModel", trace_id="0" * 32
    )
    body = {"action": {"name": "openai.invokeModel"}, "payload": CHAT, "context": {"company_id": MOTOR}}
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{hosts['us'].url}/v1/adapters/openai:execute", json=body, headers={"Authorization": f"Bearer {token}"}
        )
    assert (response.status_code, response.json()["error"]["code"]) == (401, "adapters.host_unauthorized")
    assert hosts["us"].host.calls == 0


async def test_a_gateway_with_the_wrong_service_secret_is_refused(template, fakes, hosts, gateway_dir, monkeypatch):
    monkeypatch.setenv("FC_TEST_OTHER_SECRET", "not-the-hosts-secret-0123456789abcdef")
    async with gateway(template, fakes, gateway_dir, hosts, secret_env="FC_TEST_OTHER_SECRET") as rig:
        response = await rig.rest("openai.invokeModel", CHAT)
    assert response.json()["status"]["error"]["code"] == "adapters.host_unauthorized"
    assert (hosts["us"].host.calls, hosts["eu"].host.calls) == (0, 0)
    assert fakes.openai.requests == []


async def test_a_slow_host_is_cut_off_at_the_calls_deadline(template, fakes, hosts, gateway_dir):
    async with gateway(template, fakes, gateway_dir, hosts) as rig:
        await rig.operator(
            "admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "openai", "config": {"timeout_s": 1}}
        )
        fakes.openai.faults.hang = True
        response = await rig.rest("openai.invokeModel", CHAT)
        fakes.openai.faults.release()
    assert (response.status_code, response.json()["status"]["error"]["code"]) == (504, "timeout")


async def _killed_mid_call(rig: Rig, fakes, victim: Host) -> ForecourtError | Any:
    fakes.openai.faults.hang = True
    call = asyncio.create_task(rig.invoke("openai.invokeModel", CHAT))
    for _ in range(2000):  # until the host's adapter is inside the runtime call (bounded; no fixed sleep)
        if fakes.openai.faults.hung:
            break
        await asyncio.sleep(0.005)
    assert fakes.openai.faults.hung == 1
    victim.server.request_stop()
    await asyncio.to_thread(victim.server.join)
    fakes.openai.faults.release()
    try:
        return await call
    except ForecourtError as error:
        return error


async def test_a_host_killed_mid_call_fails_retryably_when_no_other_host_may_take_it(
    template, fakes, hosts, gateway_dir
):
    async with gateway(template, fakes, gateway_dir, hosts) as rig:
        await pin(rig, "us")
        error = await _killed_mid_call(rig, fakes, hosts["us"])
        assert isinstance(error, ForecourtError)
        assert (error.code, error.retryable) == ("upstream.unavailable", True)
        assert await records(rig, error.trace_id or "") == [("openai.invokeModel", 503, "upstream.unavailable")]
        assert hosts["eu"].host.calls == 0  # pinned to us: never sent to eu


async def test_an_idempotent_call_on_a_killed_host_is_retried_on_the_next_and_audited_once(
    template, fakes, hosts, gateway_dir
):
    async with gateway(template, fakes, gateway_dir, hosts) as rig:
        outcome = await _killed_mid_call(rig, fakes, hosts["us"])
        assert outcome.output == fakes.openai.reply
        assert hosts["eu"].host.calls == 1
        assert await records(rig, outcome.trace_id) == [("openai.invokeModel", 200, None)]
        family = rig.services.catalogue.adapter_for_id("openai").family
        await family.check_health()
        assert [h.region for h in family.candidates(None)] == ["eu"]  # the dead host stays out
        await rig.invoke("openai.invokeModel", CHAT)
        assert hosts["eu"].host.calls == 2


async def test_model_invoke_routes_and_meters_through_a_remote_host(template, fakes, hosts, gateway_dir):
    async with gateway(template, fakes, gateway_dir, hosts) as rig:
        response = await rig.rest("model.invoke", {"input": "hi", "runtime": "openai"})
        assert response.status_code == 200
        result = response.json()["result"]
        assert (result["output"], result["metadata"]["route"]["runtime"]) == (fakes.openai.reply, "openai")
        assert result["metadata"]["usage"]["input_tokens"] == 1
    assert hosts["us"].host.calls == 1


async def test_with_mtls_only_a_gateway_holding_a_client_certificate_is_served(template, fakes, tmp_path, monkeypatch):
    import ssl

    from gateway_auth.pki import make_ca, make_leaf

    monkeypatch.setenv(SECRET_ENV, SECRET)
    ca = make_ca("Adapter hosts CA")
    files = {}
    for name, issued in (("ca", ca), ("host", make_leaf(ca, "host", server=True)), ("gw", make_leaf(ca, "gw"))):
        (tmp_path / f"{name}.pem").write_text(issued.cert_pem)
        (tmp_path / f"{name}.key").write_text(issued.key_pem)
        files[name] = (str(tmp_path / f"{name}.pem"), str(tmp_path / f"{name}.key"))
    tls = {
        "ssl_certfile": files["host"][0],
        "ssl_keyfile": files["host"][1],
        "ssl_ca_certs": files["ca"][0],
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
    }
    config_dir = adapter_files(tmp_path / "host-adapters", fakes)
    with running_host(template[0], tmp_path, config_dir, "us", SECRET, tls) as host:
        url = host.url.replace("http://", "https://")
        client_tls = {"cert_file": files["gw"][0], "key_file": files["gw"][1], "ca_file": files["ca"][0]}
        for with_cert in (True, False):
            (tmp_path / "gateway").mkdir(exist_ok=True)
            remote = {"tls": client_tls if with_cert else {"ca_file": files["ca"][0]}}
            async with gateway(template, fakes, tmp_path, {"us": _At(url)}, **remote) as rig:
                if with_cert:
                    outcome = await rig.invoke("openai.invokeModel", CHAT)
                    assert outcome.output == fakes.openai.reply
                else:
                    with pytest.raises(ForecourtError) as info:
                        await rig.invoke("openai.invokeModel", CHAT)
                    assert info.value.code == "upstream.unavailable"
            shutil.rmtree(tmp_path / "gateway")
        assert host.host.calls == 1


class _At:
    """A host known only by its URL."""

    def __init__(self, url: str) -> None:
        self.url = url
