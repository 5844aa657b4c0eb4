"""Operator keys: ``fco_<prefix>_<secret>``, the deployment's own credential, above every company.

An operator creates companies, so its credential cannot belong to one. The first ``forecourt serve`` on a
database without operator keys makes the ``bootstrap`` key and prints it once; ``forecourt operator
create-key`` makes more. Like API keys they are stored as a public prefix and an HMAC of the secret.

An operator key authenticates as the operator principal (``method="internal"``, ``subject="operator"``,
``key_prefix`` set). Over the wire it may run admin actions only (:func:`forecourt.gateway.policy.decide`);
the command line runs as the operator without a key, since it already holds the database.
"""

from __future__ import annotations

import logging
import re
import secrets
import string
from dataclasses import dataclass

from pydantic import SecretStr

from forecourt.contract import OPERATOR_SUBJECT
from forecourt.domain.timeutil import utcnow
from forecourt.errors import NotFound, Unauthorized
from forecourt.gateway.auth.apikeys import ApiKeyHasher
from forecourt.gateway.auth.common import Now, TenancySource
from forecourt.gateway.base import Credentials, Principal
from forecourt.store.base import OperatorKeyRecord

logger = logging.getLogger(__name__)

OPERATOR_SCHEME = "fco"
BOOTSTRAP_NAME = "bootstrap"
_PREFIX_ALPHABET = string.ascii_lowercase + string.digits
_SECRET_ALPHABET = string.ascii_letters + string.digits
_KEY_RE = re.compile(rf"^{OPERATOR_SCHEME}_([a-z0-9]{{10}})_([A-Za-z0-9]{{40}})$")


def looks_like_operator_key(token: str) -> bool:
    """Whether a bearer token is meant as an operator key."""
    return token.strip().startswith(f"{OPERATOR_SCHEME}_")


def operator_principal(company_id: str | None = None, *, key_prefix: str | None = None) -> Principal:
    """The operator acting (on ``company_id`` when the action concerns one company)."""
    return Principal(
        method="internal", company_id=company_id, member_id=None, subject=OPERATOR_SUBJECT, key_prefix=key_prefix
    )


def is_operator(principal: Principal) -> bool:
    """Whether ``principal`` is the operator (command line, or an operator key)."""
    return principal.is_operator


@dataclass(frozen=True)
class IssuedOperatorKey:
    """A freshly created operator key; ``key`` is the only plaintext copy."""

    key: str
    record: OperatorKeyRecord

    def __repr__(self) -> str:
        return f"IssuedOperatorKey(prefix={self.record.prefix!r}, key='***')"


class OperatorKeys:
    """Creates, lists, revokes and verifies operator keys."""

    def __init__(self, store: TenancySource, pepper: SecretStr | str, *, now: Now = utcnow) -> None:
        """Create the service.

        Args:
            store: Where key records live.
            pepper: ``settings.api_key_pepper``.
            now: The wall clock (aware UTC).
        """
        self._store = store
        self._hasher = ApiKeyHasher(pepper)
        self._now = now

    async def create(self, name: str) -> IssuedOperatorKey | None:
        """Create a key named ``name``; ``None`` when a key of that name exists (so a bootstrap happens once)."""
        prefix = "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(10))
        secret = "".join(secrets.choice(_SECRET_ALPHABET) for _ in range(40))
        record = OperatorKeyRecord(
            prefix=prefix, key_hash=self._hasher.digest(prefix, secret), name=name, created_at=self._now()
        )
        async with self._store.transaction() as uow:
            if not await uow.tenancy.add_operator_key(record):
                return None
        logger.info("created operator key %s", prefix)
        return IssuedOperatorKey(key=f"{OPERATOR_SCHEME}_{prefix}_{secret}", record=record)

    async def bootstrap(self, name: str = BOOTSTRAP_NAME) -> IssuedOperatorKey | None:
        """The first operator key, when no operator key was ever made (else ``None``).

        Replica-safe: names are unique, so of replicas starting together on an empty database one makes it.
        """
        if await self.any():
            return None
        return await self.create(name)

    async def any(self) -> bool:
        """Whether any operator key (live or revoked) exists."""
        async with self._store.read() as uow:
            return bool(await uow.tenancy.list_operator_keys())

    async def list(self) -> list[OperatorKeyRecord]:
        """Every operator key record (callers must not return hashes)."""
        async with self._store.read() as uow:
            return await uow.tenancy.list_operator_keys()

    async def revoke(self, prefix: str) -> None:
        """Revoke a live key (``NotFound`` when there is none with that prefix)."""
        async with self._store.transaction() as uow:
            if not await uow.tenancy.revoke_operator_key(prefix, self._now()):
                raise NotFound("No live operator key has that prefix.")
        logger.info("revoked operator key %s", prefix)

    async def authenticate(self, credentials: Credentials, company_hint: str | None) -> Principal | None:
        """Verify an operator key bearer token (``None`` when the token is not one)."""
        token = credentials.bearer
        if not token or not looks_like_operator_key(token):
            return None
        match = _KEY_RE.match(token.strip())
        if match is None:
            raise Unauthorized("The operator key is not valid.")
        prefix, secret = match.group(1), match.group(2)
        async with self._store.read() as uow:
            record = await uow.tenancy.get_operator_key(prefix)
        if record is None or record.revoked_at is not None:
            self._hasher.digest(prefix, secret)  # same work either way: no timing oracle
            raise Unauthorized("The operator key is not valid.")
        if not self._hasher.verify(prefix, secret, record.key_hash):
            raise Unauthorized("The operator key is not valid.")
        return operator_principal(company_hint, key_prefix=prefix)
