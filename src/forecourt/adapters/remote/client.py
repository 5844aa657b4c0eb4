"""The gateway's side of remote adapter hosts: a proxy in the catalogue in place of each adapter of a remote family.

The gateway has already done everything that is policy (identity, tenancy, limits, approvals, idempotency, cache,
the per-call credential) when the proxy runs; it sends the call to a host of the family and answers what the host's
adapter answered. It then redacts, audits and meters as for any adapter, so each call is audited once, by the
gateway, however many hosts were tried.

Host choice: a company pinned to a region (``region`` in its ``remote`` adapter settings) is sent only to hosts of
that region, and the token says so (a host of another region refuses it); an unpinned company goes to any host,
those of the gateway's own ``home_region`` first. Healthy hosts take turns. A host that cannot be reached or drops the
connection is taken out for ``eject_s`` (the health check, ``GET /healthz`` every ``health_interval_s``, brings it
back); an idempotent call is then retried once on the next host, any other call fails with a retryable
``upstream.unavailable`` (it may have run). The call's deadline travels with it (``Forecourt-Deadline-Ms``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from forecourt.adapters.errors import AdapterConfigError
from forecourt.adapters.models.common import LoopLocal
from forecourt.adapters.remote.wire import (
    FAMILIES,
    TOKEN_TTL_S,
    call_body,
    error_of,
    no_host,
    now_ms,
    result_of,
    runs_in_gateway,
    sign_service_token,
    traceparent,
)
from forecourt.contract import Adapter, AdapterResult, Catalogue, ExecutionContext
from forecourt.contract.grants import DEADLINE_HEADER, NESTED_DEPTH, NESTED_PATH, NESTING, grant_key, sign_grant
from forecourt.errors import ForecourtError, Timeout

if TYPE_CHECKING:
    import httpx

    from forecourt.store.base import Store

logger = logging.getLogger(__name__)

RegionOf = Callable[["Store", str | None], Awaitable[str | None]]
"""The region a company is pinned to (``None``: not pinned)."""


@dataclass
class Host:
    """One adapter host of a family."""

    url: str
    region: str | None
    down_until: float = 0.0
    calls: int = 0

    def up(self, now: float) -> bool:
        """Whether the host takes calls now."""
        return now >= self.down_until


class RemoteFamily:
    """The hosts of one family, their health, and the secret the gateway signs its tokens with."""

    def __init__(
        self,
        name: str,
        hosts: list[Host],
        *,
        secret: str,
        home_region: str | None = None,
        token_ttl_s: float = TOKEN_TTL_S,
        eject_s: float = 30.0,
        health_interval_s: float = 10.0,
        tls: Mapping[str, Any] | None = None,
        callback_url: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.hosts = hosts
        self.secret = secret
        self.home_region = home_region
        self.token_ttl_s = token_ttl_s
        self.eject_s = eject_s
        self.health_interval_s = health_interval_s
        self.tls = dict(tls or {})
        self.callback_url = callback_url
        """The gateways' address as the hosts reach it, for nested calls (default: ``settings.advertised_url``)."""
        self._grant_keys: dict[str, bytes] = {}
        self.clock = clock
        self._turn = itertools.count()
        self._clients: LoopLocal[httpx.AsyncClient] = LoopLocal(lambda c: c.aclose())
        self._health: dict[int, asyncio.Task[None]] = {}

    def grant_key(self, pepper: str) -> bytes:
        """The key of the grants this gateway signs (derived once)."""
        key = self._grant_keys.get(pepper)
        if key is None:
            key = self._grant_keys[pepper] = grant_key(pepper)
        return key

    def http(self) -> httpx.AsyncClient:
        """The HTTP client of the running loop (keep-alive connections to the hosts)."""
        import httpx

        return self._clients.get(
            "hosts", lambda: httpx.AsyncClient(verify=self._verify(), follow_redirects=False, trust_env=False)
        )

    def _verify(self) -> Any:
        """TLS to the hosts with ``tls.ca_file`` (their CA); mTLS with ``tls.cert_file`` (this gateway's cert)."""
        if not self.tls.get("cert_file") and not self.tls.get("ca_file"):
            return True
        import ssl

        context = ssl.create_default_context(cafile=self.tls.get("ca_file"))
        if self.tls.get("cert_file"):
            context.load_cert_chain(self.tls["cert_file"], self.tls.get("key_file"))
        return context

    def candidates(self, region: str | None) -> list[Host]:
        """The hosts a call may go to, in the order to try them.

        Raises:
            UpstreamUnavailable: No host of the company's region is up.
        """
        now = self.clock()
        eligible = [h for h in self.hosts if region is None or h.region == region]
        up = [h for h in eligible if h.up(now)]
        if not up:
            raise no_host(self.name, region)
        start = next(self._turn) % len(up)
        turned = up[start:] + up[:start]
        if region is None and self.home_region:
            turned.sort(key=lambda h: h.region != self.home_region)  # stable: turns kept within each group
        return turned

    def eject(self, host: Host) -> None:
        """Take ``host`` out of the rotation until the health check (or ``eject_s``) brings it back."""
        host.down_until = self.clock() + self.eject_s
        logger.warning("adapter host %s (%s) taken out of rotation", host.url, self.name)

    async def check_health(self) -> None:
        """Probe every host once (``GET /healthz``): a host that answers comes back, one that does not goes out."""
        client = self.http()
        for host in self.hosts:
            try:
                response = await client.get(f"{host.url}/healthz", timeout=2.0)
                healthy = response.status_code == 200
            except Exception:
                healthy = False
            if healthy:
                host.down_until = 0.0
            elif host.up(self.clock()):
                self.eject(host)

    def watch(self) -> None:
        """Start the health check loop on the running loop (once per loop)."""
        loop = asyncio.get_running_loop()
        task = self._health.get(id(loop))
        if task is None or task.done():
            self._health[id(loop)] = loop.create_task(self._watch(), name=f"adapter-hosts-{self.name}")

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.health_interval_s)
            await self.check_health()

    async def aclose(self) -> None:
        """Stop the health check and close the connections of the running loop."""
        task = self._health.pop(id(asyncio.get_running_loop()), None)
        if task is not None:
            task.cancel()
        await self._clients.aclose()


class RemoteAdapter:
    """Stands in the catalogue for adapter ``id`` of a remote family; :attr:`local` is the in-process one."""

    def __init__(self, local: Adapter, family: RemoteFamily, region_of: RegionOf) -> None:
        self.id = local.id
        self.local = local
        self.family = family
        self.region_of = region_of

    def check_configured(self, config: Mapping[str, Any]) -> None:
        """The local adapter's own check (the gateway still refuses an unconfigured runtime before credentials)."""
        check = getattr(self.local, "check_configured", None)
        if callable(check):
            check(config)

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the call on a host of the family."""
        import httpx

        if runs_in_gateway(self.family.name, context.action.name):
            return await self.local.execute(payload, context)
        self.family.watch()
        region = await self.region_of(context.store, context.company_id)
        hosts = self.family.candidates(region)
        action = context.action
        retry = action.idempotent and not action.side_effect
        timeout_s = float(context.adapter_config.get("timeout_s", action.timeout_s))
        deadline = time.monotonic() + timeout_s
        headers = {
            "Authorization": "Bearer "
            + sign_service_token(
                self.family.secret,
                family=self.family.name,
                region=region,
                company=context.company_id,
                action=action.name,
                trace_id=context.trace_id,
                ttl_s=self.family.token_ttl_s,
            ),
            DEADLINE_HEADER: str(now_ms() + int(timeout_s * 1000)),
        }
        parent = traceparent(context.trace_id)
        if parent:
            headers["traceparent"] = parent
        nested = self._nested(context, time.time() + timeout_s) if self.family.name in NESTING else None
        body = call_body(payload, context, nested)
        attempts = hosts[:2] if retry else hosts[:1]
        for n, host in enumerate(attempts):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout(details={"timeout_s": timeout_s})
            host.calls += 1
            try:
                response = await self.family.http().post(
                    f"{host.url}/v1/adapters/{self.id}:execute", json=body, headers=headers, timeout=remaining
                )
            except httpx.TimeoutException as exc:
                raise Timeout(details={"timeout_s": timeout_s}) from exc
            except httpx.TransportError as exc:
                failure: str = type(exc).__name__
            else:
                parsed = _json(response)
                if response.status_code < 500 or (isinstance(parsed, Mapping) and "error" in parsed):
                    return self._answer(response.status_code, parsed)
                failure = f"HTTP {response.status_code}"  # the host itself broke (e.g. stopped mid-call)
            self.family.eject(host)
            if n + 1 < len(attempts):
                logger.warning("adapter host %s failed (%s); retrying on the next", host.url, failure)
                continue
            logger.warning("adapter host %s failed (%s)", host.url, failure)
            raise no_host(self.family.name, region)
        raise no_host(self.family.name, region)  # pragma: no cover

    def _nested(self, context: ExecutionContext, deadline: float) -> dict[str, str]:
        """Where, and with which grant, the host sends the call's own calls of other actions (``contract.grants``)."""
        callback = self.family.callback_url or context.settings.advertised_url
        grant = sign_grant(
            self.family.grant_key(context.settings.api_key_pepper.get_secret_value()),
            context.principal,
            trace_id=context.trace_id,
            session_id=context.session_id,
            # A read-only action's calls stay read-only; one that may write could only run where writes are allowed.
            writes=context.action.side_effect,
            depth=NESTED_DEPTH.get() + 1,
            expires_at=deadline,
        )
        return {"url": callback.rstrip("/") + NESTED_PATH, "grant": grant}

    @staticmethod
    def _answer(status: int, parsed: Any) -> AdapterResult:
        if status == 200 and isinstance(parsed, Mapping) and "result" in parsed:
            return result_of(parsed)
        error: ForecourtError = error_of(parsed, status)
        raise error


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _hosts(raw: Any) -> list[Host]:
    hosts = []
    for item in raw or ():
        if isinstance(item, Mapping) and isinstance(item.get("url"), str):
            region = item.get("region")
            hosts.append(Host(url=str(item["url"]).rstrip("/"), region=str(region) if region else None))
    return hosts


def remote_families(config: Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> dict[str, RemoteFamily]:
    """The remote families the ``remote`` adapter configuration names (none: every adapter runs in-process).

    Raises:
        AdapterConfigError: A family is configured but the shared secret is not set (or too short).
    """
    env = os.environ if environ is None else environ
    families = config.get("families") or {}
    out: dict[str, RemoteFamily] = {}
    for name, section in families.items() if isinstance(families, Mapping) else ():
        hosts = _hosts(section.get("hosts") if isinstance(section, Mapping) else None)
        if name not in FAMILIES or not hosts:
            continue
        secret = env.get(str(config.get("secret_env") or "FORECOURT_ADAPTER_HOST_SECRET"), "")
        if len(secret) < 32:
            raise AdapterConfigError(
                "Remote adapter hosts need a shared secret of at least 32 characters (remote.yaml secret_env)."
            )
        out[name] = RemoteFamily(
            name,
            hosts,
            secret=secret,
            home_region=config.get("home_region") if isinstance(config.get("home_region"), str) else None,
            token_ttl_s=float(config.get("token_ttl_s") or TOKEN_TTL_S),
            eject_s=float(config.get("eject_s") or 30.0),
            health_interval_s=float(config.get("health_interval_s") or 10.0),
            tls=config.get("tls") if isinstance(config.get("tls"), Mapping) else None,
            callback_url=config.get("callback_url") if isinstance(config.get("callback_url"), str) else None,
        )
    return out


def install_remote_adapters(
    catalogue: Catalogue, config: Mapping[str, Any], region_of: RegionOf
) -> list[Callable[[], Awaitable[None]]]:
    """Put a :class:`RemoteAdapter` in place of each adapter of a remote family; the closers of their clients."""
    closers: list[Callable[[], Awaitable[None]]] = []
    for name, family in remote_families(config).items():
        for adapter_id in FAMILIES[name]:
            local = catalogue.adapter_for_id(adapter_id)
            if local is not None and not isinstance(local, RemoteAdapter):
                catalogue.add_adapter(RemoteAdapter(local, family, region_of))
        closers.append(family.aclose)
        logger.info("adapter family %s runs on %d remote host(s)", name, len(family.hosts))
    return closers
