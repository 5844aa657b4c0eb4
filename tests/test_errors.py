"""Every error code across the codebase is unique and well formed."""

from __future__ import annotations

import importlib
import pkgutil
import re

import forecourt
from forecourt.errors import ForecourtError, InternalError, all_error_classes

CODE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")


def _import_everything() -> None:
    for module in pkgutil.walk_packages(forecourt.__path__, prefix="forecourt."):
        # Migration scripts are loaded by Alembic, not imported.
        if ".migrations." in module.name:
            continue
        importlib.import_module(module.name)


def _defines_code(cls: type[ForecourtError]) -> bool:
    return "code" in cls.__dict__ or cls is ForecourtError


def test_every_error_class_in_every_module_has_its_own_unique_code() -> None:
    _import_everything()
    owners: dict[str, list[str]] = {}
    for cls in all_error_classes():
        if not _defines_code(cls):
            continue
        owners.setdefault(cls.code, []).append(f"{cls.__module__}.{cls.__qualname__}")
    duplicated = {code: names for code, names in owners.items() if len(names) > 1}
    assert not duplicated, f"error codes defined more than once: {duplicated}"


def test_every_error_subclass_declares_a_code_rather_than_inheriting_one_silently() -> None:
    _import_everything()
    inherited = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in all_error_classes()
        # InternalError is the base's own code ("internal_error") made concrete.
        if not _defines_code(cls) and cls not in (ForecourtError, InternalError)
    ]
    assert not inherited, f"error classes without a code of their own: {inherited}"


def test_every_error_code_is_namespaced_lowercase() -> None:
    _import_everything()
    bad = [(cls.__name__, cls.code) for cls in all_error_classes() if not CODE.fullmatch(cls.code)]
    assert not bad, f"malformed error codes: {bad}"


def test_every_error_has_a_client_error_status_or_a_server_error_status_and_a_json_rpc_code() -> None:
    _import_everything()
    for cls in all_error_classes():
        assert 400 <= cls.http_status <= 599, cls
        assert -32768 <= cls.jsonrpc_code <= -32000, cls
        assert isinstance(cls.retryable, bool), cls
        assert cls.default_message.endswith("."), cls


def test_an_error_body_carries_code_message_retryable_and_only_safe_details() -> None:
    from forecourt.errors import RateLimited

    body = RateLimited(2.5, scope="member").to_dict()
    assert body == {
        "code": "rate_limited",
        "message": "Too many requests.",
        "retryable": True,
        "details": {"retry_after": 2.5, "scope": "member"},
    }


def test_the_error_tree_in_the_errors_module_docstring_names_every_error_class() -> None:
    import forecourt.errors as errors_module

    _import_everything()
    doc = errors_module.__doc__ or ""
    missing = [cls.__name__ for cls in all_error_classes() if f" {cls.__name__}" not in doc]
    assert not missing, f"add these to the tree in forecourt/errors.py: {missing}"


def test_every_error_class_lives_in_an_errors_module() -> None:
    _import_everything()
    elsewhere = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in all_error_classes()
        if cls.__module__.startswith("forecourt.") and not cls.__module__.endswith("errors")
    ]
    assert not elsewhere, f"error classes outside an errors module: {elsewhere}"
