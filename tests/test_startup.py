"""Start-up: what a one-shot command loads, and the start-up benchmark (timed only in ``bench/startup.py``)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FORECOURT = Path(sys.executable).parent / "forecourt"
ROOT = Path(__file__).resolve().parent.parent

OPTIONAL_HEAVY = (
    *("alembic", "mcp", "mcp_types", "a2a", "numpy", "redis"),
    *("SpiffWorkflow", "lxml", "starlette", "httpx2"),
    *("httpx", "httpcore", "trio", "jwt", "cryptography"),
    "rich",  # only once something is printed for a person (tables, errors, progress bars)
)
"""Libraries a one-shot command that reaches neither their feature nor a migration must not import."""

_RUN_AND_LIST_MODULES = """
import runpy, sys
sys.argv = ["forecourt", *sys.argv[1:]]
try:
    runpy.run_module("forecourt.cli.main", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print("MODULES " + " ".join(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


TENANT_CHANGES = ("forecourt.actions.tenants_apply", "forecourt.domain.tenants_file")
"""What applies and validates changes to tenants (tenants files, members, rooftops): not what reads them."""
ORM = ("sqlalchemy.orm", "sqlalchemy.ext.asyncio.session")
"""SQLAlchemy's ORM, which the store does not use (it runs Core statements on the asyncio engine)."""
POSTGRESQL_DIALECT = ("sqlalchemy.dialects.postgresql.base", "sqlalchemy.dialects.postgresql.asyncpg")
"""What runs PostgreSQL, which a command on SQLite does not need (its tables' PostgreSQL column types aside)."""


def _loaded(stderr: str, *, packages: bool = True) -> set[str]:
    """The modules a child printed (``_RUN_AND_LIST_MODULES``): top-level packages, or every module."""
    names = stderr.rsplit("MODULES ", 1)[1].split()
    return {n.split(".")[0] for n in names} if packages else set(names)


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    """The stdout of ``python -c code args`` in a fresh interpreter (no ``FORECOURT_*`` settings unless ``env``)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env if env is not None else {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _env(db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env["FORECOURT_DATABASE_URL"] = f"sqlite+aiosqlite:///{db}"
    return env


def test_the_sqlite_vec_extension_is_found_where_the_package_says_without_running_the_package() -> None:
    sqlite_vec = pytest.importorskip("sqlite_vec")
    from forecourt.store.sql.sqlite_vec import _loadable_path

    assert _loadable_path() == sqlite_vec.loadable_path()


def test_a_one_shot_command_runs_through_the_gateway_without_importing_optional_libraries(tmp_path: Path) -> None:
    env = _env(tmp_path / "startup.db")
    subprocess.run([str(FORECOURT), "db", "upgrade"], env=env, check=True, capture_output=True, timeout=120)
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, "companies", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"items": []}
    loaded = _loaded(done.stderr)
    assert "forecourt" in loaded
    assert sorted(loaded.intersection(OPTIONAL_HEAVY)) == []
    not_needed = (*TENANT_CHANGES, *ORM, *POSTGRESQL_DIALECT)
    assert sorted(_loaded(done.stderr, packages=False).intersection(not_needed)) == []


MCP_SERVER_STACK = ("mcp", "mcp_types", "starlette", "sse_starlette", "httpx", "anyio")
"""What serving MCP needs and printing a member's tool listing does not (the protocol's types included: the
listing names the tools without building their definitions)."""


def test_tools_list_prints_the_members_listing_without_importing_the_mcp_server_stack_or_its_types(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path / "startup.db")
    for prepare in (["db", "upgrade"], ["demo", "--vehicles", "1"]):
        subprocess.run([str(FORECOURT), *prepare], env=env, check=True, capture_output=True, timeout=300)
    command = ["tools", "list", "--member", "demo-motor-group/crm-agent", "--json"]
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert listing["toolset"] == "crm"
    assert {"inventory.search", "leads.create"} <= set(listing["tools"])
    assert sorted(_loaded(done.stderr).intersection(MCP_SERVER_STACK)) == []
    # The names are those of the tool definitions themselves, in the same order (--tokens builds and measures them).
    measured = subprocess.run(
        [str(FORECOURT), *command, "--tokens"], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert [tool["name"] for tool in json.loads(measured.stdout)["per_tool"]] == listing["tools"]


_IMPORT_AND_COUNT_COLLECTIONS = """
import gc, sys
gc.collect()  # (the interpreter's own start-up counts towards the first collection)
if sys.argv[1] == "off":
    gc.disable()
starts = []
gc.callbacks.append(lambda phase, info: starts.append(info["generation"]) if phase == "start" else None)
import forecourt.cli.main
print(len(starts), gc.isenabled(), gc.get_freeze_count())
"""


@pytest.mark.parametrize(("collector", "enabled_after"), [("on", True), ("off", False)])
def test_loading_the_cli_sets_off_no_collection_and_leaves_the_collector_as_it_found_it(
    tmp_path: Path, collector: str, enabled_after: bool
) -> None:
    # From compiled bytecode, as an installed Forecourt runs (the first run writes it, the second is counted).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORECOURT_", "PYTHONDONTWRITEBYTECODE"))}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    for _ in range(2):
        out = _python(_IMPORT_AND_COUNT_COLLECTIONS, collector, env=env)
    collections, enabled, frozen = out.split()
    assert int(collections) == 0
    assert enabled == str(enabled_after)
    assert int(frozen) == 0  # what loading built is in the oldest generation, not frozen


def test_a_command_named_on_the_command_line_is_built_alone_and_answers_as_the_whole_tree_does() -> None:
    from typer.testing import CliRunner

    from forecourt.cli.main import app

    trimmed = app.only(["-v", "keys", "list", "--company", "x"])
    assert trimmed is not None
    assert [g.name for g in trimmed.registered_groups] == ["keys"]
    assert trimmed.registered_commands == []
    serve = app.only(["serve", "--help"])
    assert serve is not None
    assert [c.callback.__name__ for c in serve.registered_commands if c.callback] == ["serve"]
    for whole_tree in (["--help"], [], ["nope"], ["--verbose"], ["--version"], ["-x", "keys"]):
        assert app.only(whole_tree) is None
    runner = CliRunner()
    for argv in (
        ["keys"],
        ["keys", "--help"],
        ["keys", "list"],
        ["keys", "lst"],
        ["-v", "keys", "list", "--help"],
        ["members", "list", "--company"],
        ["tools", "list", "--help"],
        ["db", "--help"],
        ["export-tenants", "--help"],
        ["adapters", "serve", "--help"],
    ):
        alone, whole = runner.invoke(app.only(argv) or app, argv), runner.invoke(app, argv)
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output), argv


_ENGINE_THEN_SESSION = """
import sys
from forecourt.store import sa_asyncio
import sqlalchemy.ext.asyncio as package
before = ("sqlalchemy.orm" in sys.modules, sa_asyncio.finished(package))
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
after = ("sqlalchemy.orm" in sys.modules, sa_asyncio.finished(package))
same = AsyncEngine is sa_asyncio.AsyncEngine and package.AsyncConnection is sa_asyncio.AsyncConnection
print(before, after, same, AsyncSession.__module__, callable(async_sessionmaker))
"""


def test_the_store_loads_sqlalchemys_asyncio_engine_without_the_orm_and_the_package_whole_when_asked() -> None:
    assert _python(_ENGINE_THEN_SESSION).split() == [
        *("(False,", "False)"),  # the engine alone
        *("(True,", "True)"),  # AsyncSession asked for: the package's __init__ ran, the ORM with it
        "True",  # the same classes either way
        "sqlalchemy.ext.asyncio.session",
        "True",
    ]


_TYPES_THEN_DIALECT = """
import sys
import forecourt.store
from forecourt.store.sa_partial import finished
from forecourt.store.sa_postgresql import postgresql
from sqlalchemy.dialects.postgresql import json
before = ("sqlalchemy.dialects.postgresql.base" in sys.modules, finished(postgresql), postgresql.JSONB is json.JSONB)
from forecourt.store.sql.engine import create_engine
engine = create_engine("postgresql+asyncpg://forecourt@localhost/never-connected")
after = ("sqlalchemy.dialects.postgresql.base" in sys.modules, finished(postgresql))
from sqlalchemy.dialects.postgresql import JSONB, insert
print(before, after, engine.dialect.name, engine.dialect.driver, JSONB is json.JSONB, insert.__module__)
"""


def test_the_store_loads_postgresqls_column_types_alone_and_the_dialect_when_an_engine_needs_it() -> None:
    assert _python(_TYPES_THEN_DIALECT).split() == [
        *("(False,", "False,", "True)"),  # the JSONB and ARRAY types alone
        *("(True,", "True)"),  # a PostgreSQL engine: the package's __init__ ran, the dialect with it
        *("postgresql", "asyncpg"),
        "True",  # the same classes either way
        "sqlalchemy.dialects.postgresql.dml",
    ]


def _migrated(tmp_path: Path) -> str:
    from forecourt.store import upgrade_async

    url = f"sqlite+aiosqlite:///{tmp_path / 'one-shot.db'}"
    asyncio.run(upgrade_async(url))
    return url


def test_a_one_shot_command_runs_no_task_beside_its_own_call_and_writes_its_audit_record_on_closing(
    tmp_path: Path,
) -> None:
    from forecourt.cli.common import services_for
    from forecourt.gateway.auth.operator import operator_principal
    from forecourt.gateway.base import Invocation
    from forecourt.settings import Settings
    from forecourt.store import open_store

    settings = Settings.load(None, database_url=_migrated(tmp_path))

    async def command() -> tuple[list[str], int]:
        async with services_for(settings) as services:
            await services.gateway.invoke(
                Invocation(action="admin.companies.list", payload={}, surface="cli", principal=operator_principal())
            )
            others = [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        store = open_store(settings)
        try:
            async with store.read() as uow:
                return others, await uow.audit.count()
        finally:
            await store.close()

    others, audited = asyncio.run(command())
    assert others == []  # no audit flusher, outbox dispatcher, sampler or poller: nothing to compete for SQLite
    assert audited == 1


def test_a_one_shot_command_starts_without_garbage_collections_and_leaves_the_collector_as_it_found_it(
    tmp_path: Path,
) -> None:
    from forecourt.cli.common import services_for
    from forecourt.settings import Settings

    settings = Settings.load(None, database_url=_migrated(tmp_path))
    collections: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    async def command() -> tuple[int, bool, int]:
        gc.callbacks.append(count)
        try:
            async with services_for(settings):
                during = len(collections)
                return during, gc.isenabled(), gc.get_freeze_count()
        finally:
            gc.callbacks.remove(count)

    frozen_before = gc.get_freeze_count()
    during, enabled_during, frozen_during = asyncio.run(command())
    assert during == 0  # building the services set off no collection
    assert enabled_during  # the command's own work is collected as usual
    assert frozen_during > frozen_before  # what start-up built is out of the collector's way
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen_before


_RUN_AND_COUNT_AT_EXIT = """
import atexit, gc, runpy, sys
atexit.register(lambda: print(f"AT EXIT {gc.get_freeze_count()} {len(gc.get_objects())}", file=sys.stderr))
sys.argv = ["forecourt", *sys.argv[1:]]
runpy.run_module("forecourt.cli.main", run_name="__main__")
"""


def test_a_one_shot_command_leaves_the_interpreters_exit_no_objects_to_collect(tmp_path: Path) -> None:
    env = _env(tmp_path / "startup.db")
    subprocess.run([str(FORECOURT), "db", "upgrade"], env=env, check=True, capture_output=True, timeout=120)
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_COUNT_AT_EXIT, "companies", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    frozen, collectable = map(int, done.stderr.rsplit("AT EXIT ", 1)[1].split())
    assert collectable * 20 < frozen  # the exit's full collections walk (next to) nothing


@pytest.mark.slow
@pytest.mark.parametrize("trees", [[], ["a", "b"]], ids=["this-tree", "two-trees"])
def test_the_startup_benchmark_runs_and_reports_each_command_it_was_asked_for(trees: list[str]) -> None:
    """Only that it runs (and, given trees, reports each): its timings are for docs/benchmarks.md, never asserted."""
    only = ["--only", "keys list", "--only", "mcp --stdio"]
    compared = [arg for label in trees for arg in ("--tree", f"{label}={ROOT / 'src'}")]
    bench = [sys.executable, str(ROOT / "bench" / "startup.py"), "--repeat", "1", "--vehicles", "1", "--json-only"]
    done = subprocess.run(
        [*bench, *only, *compared],
        env={k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summaries = json.loads(done.stdout.strip().splitlines()[-1])
    expected = [(command, label) for command in ("keys list", "mcp --stdio") for label in trees or [None]]
    assert [(s["command"], s.get("tree")) for s in summaries] == expected
    assert all(s["runs"] == 1 for s in summaries)
    assert {"wall_s", "cpu_s"} <= set(summaries[0])
    assert {"initialize_s", "cpu_at_initialize_s", "tools_list_s", "exit_s", "cpu_s"} <= set(summaries[-1])
