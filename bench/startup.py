"""Benchmark start-up: one-shot CLI commands and ``forecourt mcp --stdio`` answering ``initialize``.

Prepares a fresh SQLite database in a temporary folder (``forecourt db upgrade`` and ``forecourt demo``, not
timed), then spawns each one-shot command ``--repeat`` times and reports its wall time (spawn to exit) and CPU
time (user + system of the child). For ``forecourt mcp --stdio`` it writes an MCP ``initialize`` request on stdin
as soon as the process is spawned and times the answer (and, after ``notifications/initialized``, the answer to
``tools/list``, which must name the crm toolset's tools); the CPU column there is the CPU the process had used
when its ``initialize`` answer arrived (read from ``/proc``), then the total at exit.

Each command is run once, untimed, before it is timed, and the children write and read compiled bytecode in a
cache of their own (``PYTHONPYCACHEPREFIX`` in the temporary folder; ``PYTHONDONTWRITEBYTECODE`` is dropped): an
installed Forecourt runs from compiled bytecode, and without the cache every run would first compile Forecourt's
~250 modules (about 0.3 s of CPU). ``--cold-bytecode`` measures that case instead.

Prints one JSON object per run and a summary (median and min), with the 1-minute load average before and after
each command's runs: CPU time is the number that holds while the machine is shared; wall time is the user's wait.

``--tree LABEL=SRC`` (twice or more) compares source trees in the same seconds: each tree gets its own database
and bytecode cache, its children run with ``PYTHONPATH=SRC`` (same venv), and every repetition runs the command
once per tree, the order reversed at each repetition, so a change in the machine's load falls on all of them.

Examples::

    .venv/bin/python bench/startup.py                    # 5 repetitions of each
    .venv/bin/python bench/startup.py --repeat 11 --json-only
    .venv/bin/python bench/startup.py --tree before=/tmp/before/src --tree after=src --repeat 7
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

COMPANY = "demo-motor-group"
ONE_SHOT: dict[str, list[str]] = {
    "keys create": ["keys", "create", "--company", COMPANY, "--member", "crm-agent", "--name", "bench", "--json"],
    "keys list": ["keys", "list", "--company", COMPANY, "--json"],
    "members list": ["members", "list", "--company", COMPANY, "--json"],
    "tools list": ["tools", "list", "--member", f"{COMPANY}/crm-agent"],
}
EXPECTED_TOOLS = {"inventory.search", "leads.create"}
"""Tools the crm-agent's key must be offered: ``tools/list`` answered, and answered right."""
TIMEOUT_S = 120.0


def _env(db: Path, pycache: Path | None, source: str | None = None) -> dict[str, str]:
    """The children's environment: no ``FORECOURT_*`` of ours, the database, a bytecode cache unless None, and
    ``PYTHONPATH`` when running another source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env["FORECOURT_DATABASE_URL"] = f"sqlite+aiosqlite:///{db}"
    if source is not None:
        env["PYTHONPATH"] = str(Path(source).resolve())
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _load() -> float:
    """The 1-minute load average (how busy the machine was while it measured)."""
    return round(os.getloadavg()[0], 2)


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(forecourt: str, args: Sequence[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one command, and its stdout; a failure stops the benchmark."""
    cpu0 = _cpu_children()
    t0 = time.perf_counter()
    done = subprocess.run(
        [forecourt, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"`forecourt {' '.join(args)}` failed ({done.returncode}):\n{done.stderr}")
    return wall, _cpu_children() - cpu0, done.stdout


def _proc_cpu(pid: int) -> float | None:
    """User + system seconds a live process has used so far (Linux ``/proc``), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _message(method: str, msg_id: int | None = None, params: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        body["id"] = msg_id
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode() + b"\n"


class _Lines:
    """Newline-delimited JSON-RPC answers from a child's stdout, read with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)
        self.buffer = b""

    def answer(self, msg_id: int) -> dict[str, Any]:
        """The answer to request ``msg_id`` (notifications and log lines before it are skipped)."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(line) if line.strip() else {}
                if message.get("id") == msg_id:
                    return dict(message)
            if not self.selector.select(timeout=max(0.0, deadline - time.monotonic())):
                raise SystemExit(f"no answer to request {msg_id} within {TIMEOUT_S} s")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise SystemExit(f"stdout closed before the answer to request {msg_id}")
            self.buffer += chunk


def _stdio(forecourt: str, env: dict[str, str], stderr_path: Path) -> dict[str, Any]:
    """Spawn ``forecourt mcp --stdio``: seconds to the ``initialize`` and ``tools/list`` answers, and CPU."""
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "forecourt-startup-bench", "version": "1"},
    }
    cpu0 = _cpu_children()
    with stderr_path.open("ab") as stderr:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [forecourt, "mcp", "--stdio"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        assert proc.stdin is not None
        try:
            proc.stdin.write(_message("initialize", 1, init))
            proc.stdin.flush()
            lines = _Lines(proc)
            answer = lines.answer(1)
            initialize_s = time.perf_counter() - t0
            cpu_at_initialize = _proc_cpu(proc.pid)
            if "result" not in answer:
                raise SystemExit(f"initialize failed: {answer}")
            proc.stdin.write(_message("notifications/initialized"))
            proc.stdin.write(_message("tools/list", 2, {}))
            proc.stdin.flush()
            tools = lines.answer(2)
            tools_list_s = time.perf_counter() - t0
            names = {t["name"] for t in tools.get("result", {}).get("tools", [])}
            if not names >= EXPECTED_TOOLS:
                raise SystemExit(f"tools/list lacks {sorted(EXPECTED_TOOLS - names)}: {tools}")
            proc.stdin.close()
            proc.wait(timeout=TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return {
        "initialize_s": initialize_s,
        "tools_list_s": tools_list_s,
        "cpu_at_initialize_s": cpu_at_initialize,
        "exit_s": time.perf_counter() - t0,
        "cpu_s": _cpu_children() - cpu0,
    }


def prepare(
    forecourt: str, folder: Path, vehicles: int = 60, *, bytecode: bool = True, source: str | None = None
) -> tuple[dict[str, str], str]:
    """A fresh database with the demo tenants, and an API key of the crm agent for stdio."""
    env = _env(folder / "startup.db", folder / "pycache" if bytecode else None, source)
    _run(forecourt, ["db", "upgrade"], env)
    _run(forecourt, ["demo", "--vehicles", str(vehicles)], env)
    _, _, out = _run(forecourt, ONE_SHOT["keys create"], env)
    return env, str(json.loads(out)["key"])


def _tree(spec: str) -> tuple[str, str]:
    """``LABEL=SRC`` as ``(label, src)``; the source folder must hold the ``forecourt`` package."""
    label, sep, source = spec.partition("=")
    if not sep or not label or not (Path(source) / "forecourt" / "__init__.py").is_file():
        raise SystemExit(f"--tree wants LABEL=SRC, SRC a folder holding the forecourt package (got {spec!r})")
    return label, source


def _shown(row: dict[str, Any], label: str | None) -> dict[str, Any]:
    shown = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}
    return {**shown, "tree": label} if label else shown


def _labelled(summary: dict[str, Any], label: str | None, load: float) -> dict[str, Any]:
    """The summary with its tree (when trees are compared) and the load before and after its runs."""
    return {**summary, **({"tree": label} if label else {}), "load": [load, _load()]}


def _summary(name: str, rows: list[dict[str, Any]], fields: Sequence[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {"command": name, "runs": len(rows)}
    for field in fields:
        values = [r[field] for r in rows if r.get(field) is not None]
        if values:
            summary[field] = {"median": round(statistics.median(values), 3), "min": round(min(values), 3)}
    return summary


Prepared = list[tuple[str | None, dict[str, str], str]]
"""Per tree: its label (None when there is one tree, the environment's), the children's environment, a key."""


def _time_one_shot(args: argparse.Namespace, prepared: Prepared, wanted: set[str]) -> list[dict[str, Any]]:
    summaries: list[dict[str, Any]] = []
    for name, command in ONE_SHOT.items():
        if name not in wanted:
            continue
        for _, env, _ in prepared:
            _run(args.forecourt, command, env)  # warm-up, untimed: bytecode cache and page cache
        load = _load()
        rows: dict[str | None, list[dict[str, Any]]] = {label: [] for label, _, _ in prepared}
        for rep in range(args.repeat):
            for label, env, _ in prepared if rep % 2 == 0 else prepared[::-1]:
                wall, cpu, _ = _run(args.forecourt, command, env)
                rows[label].append({"command": name, "wall_s": wall, "cpu_s": cpu})
                if not args.json_only:
                    print(json.dumps(_shown(rows[label][-1], label)))
        summaries += [_labelled(_summary(name, r, ("wall_s", "cpu_s")), label, load) for label, r in rows.items()]
    return summaries


def _time_stdio(args: argparse.Namespace, prepared: Prepared, folder: Path) -> list[dict[str, Any]]:
    stdio = [(label, {**env, "FORECOURT_MCP_TOKEN": key}, folder / f"{label or 'stdio'}.stderr")
             for label, env, key in prepared]  # fmt: skip
    for _, env, stderr in stdio:
        _stdio(args.forecourt, env, stderr)  # warm-up, untimed
    load = _load()
    rows: dict[str | None, list[dict[str, Any]]] = {label: [] for label, _, _ in stdio}
    for rep in range(args.repeat):
        for label, env, stderr in stdio if rep % 2 == 0 else stdio[::-1]:
            rows[label].append({"command": "mcp --stdio", **_stdio(args.forecourt, env, stderr)})
            if not args.json_only:
                print(json.dumps(_shown(rows[label][-1], label)))
    fields = ("initialize_s", "cpu_at_initialize_s", "tools_list_s", "exit_s", "cpu_s")
    return [_labelled(_summary("mcp --stdio", r, fields), label, load) for label, r in rows.items()]


def _report(summaries: list[dict[str, Any]], *, json_only: bool) -> None:
    if json_only:
        print(json.dumps(summaries))
        return
    print("summary (seconds: median / min; 1-minute load average before → after):")
    for summary in summaries:
        cells = [f"{k} {v['median']:.3f} / {v['min']:.3f}" for k, v in summary.items() if isinstance(v, dict)]
        cells.append("load {} → {}".format(*summary["load"]))
        tree = f"{summary['tree']:<8} " if "tree" in summary else ""
        print(f"  {summary['command']:<14} {tree}" + "  ".join(cells))


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Run the benchmark; returns the summaries (also printed)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument(
        "--forecourt", default=str(Path(sys.executable).parent / "forecourt"), help="the console script to spawn"
    )
    parser.add_argument("--only", action="append", help="only this command (repeat; e.g. 'keys list', 'mcp --stdio')")
    parser.add_argument("--json-only", action="store_true", help="print only the summary, as one JSON array")
    parser.add_argument("--keep", type=Path, help="prepare the database in this folder and keep it")
    parser.add_argument("--vehicles", type=int, default=60, help="demo vehicles per dealership (default 60)")
    parser.add_argument(
        "--cold-bytecode", action="store_true", help="no bytecode cache: every run compiles Forecourt's modules"
    )
    parser.add_argument(
        "--tree",
        action="append",
        metavar="LABEL=SRC",
        help="a source tree to run (PYTHONPATH=SRC); give two or more to compare them run by run",
    )
    args = parser.parse_args(argv)
    trees: list[tuple[str | None, str | None]] = [_tree(t) for t in args.tree or []] or [(None, None)]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="forecourt-startup-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        prepared: Prepared = []
        for label, source in trees:
            home = folder / label if label else folder
            home.mkdir(parents=True, exist_ok=True)
            env, key = prepare(args.forecourt, home, args.vehicles, bytecode=not args.cold_bytecode, source=source)
            prepared.append((label, env, key))
        wanted = set(args.only or [*ONE_SHOT, "mcp --stdio"])
        summaries = _time_one_shot(args, prepared, wanted)
        if "mcp --stdio" in wanted:
            summaries += _time_stdio(args, prepared, folder)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    _report(summaries, json_only=args.json_only)
    return summaries


if __name__ == "__main__":
    main()
