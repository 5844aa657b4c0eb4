"""The company's last admin path: no policy or member change may remove it, and the operator can restore it.

A company administers itself through its admin members calling the admin actions, which run on the
``admin`` adapter and write (side effects). A policy that denies those actions, that adapter or side effects,
or a member change that leaves no active admin member, would lock the company out of its own settings with
no way back but the database. Such changes are refused (:class:`AdminLockout`); ``forecourt admin
restore-access`` (the operator) reopens the path on a company locked by older data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

from forecourt.domain.tenancy import Member, Policy
from forecourt.errors import AdminLockout

# Enough to undo any policy: read the policies, change one, delete one.
ADMIN_PATH_ACTIONS = ("admin.policies.list", "admin.policies.upsert", "admin.policies.delete")
ADMIN_ADAPTER = "admin"


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(p in ("*", name) or fnmatchcase(name, p) for p in patterns)


def blocks_admin_path(policy: Policy) -> bool:
    """Whether ``policy`` alone denies the company's admins a way to change its policies."""
    for name in ADMIN_PATH_ACTIONS:
        if _matches(name, policy.denied_actions) or not _matches(name, policy.allowed_actions):
            return True
    if _matches(ADMIN_ADAPTER, policy.denied_adapters) or not _matches(ADMIN_ADAPTER, policy.allowed_adapters):
        return True
    return not policy.allow_side_effects


def check_policies(policies: Sequence[Policy]) -> None:
    """Refuse a set of company policies (they combine, denials win) that closes the admin path."""
    if any(blocks_admin_path(p) for p in policies):
        raise AdminLockout(details={"needs": list(ADMIN_PATH_ACTIONS)})


def check_members(members: Sequence[Member]) -> None:
    """Refuse a member list with no active admin member."""
    if not any(m.is_admin and m.active for m in members):
        raise AdminLockout("A company needs at least one active admin member.")


def reopened(policy: Policy) -> Policy:
    """``policy`` changed only as much as needed to allow the admin path again, and never allowing more else.

    A denial that covers the admin path is dropped; when it also covered other actions (``*``, ``a*``), the
    policy's allowed actions become ``admin.*`` alone, so everything else it denied stays denied.
    """
    locking = [p for p in policy.denied_actions if any(_matches(a, [p]) for a in ADMIN_PATH_ACTIONS)]
    denied = tuple(p for p in policy.denied_actions if p not in locking)
    allowed = policy.allowed_actions
    if any(not p.startswith("admin.") for p in locking):
        allowed = ("admin.*",)
    elif not all(_matches(a, allowed) for a in ADMIN_PATH_ACTIONS):
        allowed = (*allowed, "admin.*")
    denied_adapters = tuple(p for p in policy.denied_adapters if not _matches(ADMIN_ADAPTER, [p]))
    allowed_adapters = policy.allowed_adapters
    if not _matches(ADMIN_ADAPTER, allowed_adapters):
        allowed_adapters = (*allowed_adapters, ADMIN_ADAPTER)
    return policy.model_copy(
        update={
            "denied_actions": denied,
            "allowed_actions": allowed,
            "denied_adapters": denied_adapters,
            "allowed_adapters": allowed_adapters,
            "allow_side_effects": True,
        }
    )
