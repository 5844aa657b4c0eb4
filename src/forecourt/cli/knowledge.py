"""``forecourt knowledge`` and ``forecourt queries``: dealer documents and named queries, run through the gateway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.admin import invoke_admin
from forecourt.cli.common import ConfigOption, console, load_settings, run
from forecourt.cli.output import JsonOption, print_listing, print_record

knowledge_app = typer.Typer(
    help="Dealer documents for knowledge.query (FAQ, policies, warranty).", no_args_is_help=True
)
queries_app = typer.Typer(help="Named report queries for db.query.", no_args_is_help=True)
_SUFFIXES = (".md", ".markdown", ".txt")


def _print(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def _documents(path: Path) -> list[dict[str, Any]]:
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in _SUFFIXES) if path.is_dir() else [path]
    if not files:
        console.print(f"[red]error[/red] no .md or .txt documents under {path}")
        raise typer.Exit(2)
    base = path if path.is_dir() else path.parent
    try:
        return [{"source": str(f.relative_to(base)), "content": f.read_text(encoding="utf-8")} for f in files]
    except (OSError, UnicodeDecodeError) as exc:
        console.print(f"[red]error[/red] cannot read documents: {exc.__class__.__name__}")
        raise typer.Exit(2) from None


async def _company_of(settings: Any, dealership_id: str) -> str:
    from forecourt.store import open_store

    store = open_store(settings)
    try:
        async with store.transaction() as uow:
            dealership = await uow.tenancy.get_dealership(dealership_id)
    finally:
        await store.close()
    if dealership is None:
        console.print(f"[red]error[/red] no dealership {dealership_id}")
        raise typer.Exit(2)
    return dealership.company_id


@knowledge_app.command("create")
def knowledge_ingest(
    path: Path = typer.Argument(..., exists=True, help="A Markdown/text file, or a folder of them."),
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Chunk, index and embed documents for a dealership (unchanged documents are skipped)."""
    settings = load_settings(config)
    documents = _documents(path)

    async def body() -> Any:
        company = await _company_of(settings, dealership)
        payload = {"company_id": company, "dealership_id": dealership, "documents": documents}
        return await invoke_admin(settings, "admin.knowledge.ingest", payload)

    print_record(run(body), as_json=as_json, title="documents")


knowledge_app.command("ingest", hidden=True)(knowledge_ingest)


@knowledge_app.command("list")
def knowledge_list(
    dealership: str = typer.Option(..., "--dealership"), as_json: bool = JsonOption, config: Path | None = ConfigOption
) -> None:
    """List a dealership's documents."""
    settings = load_settings(config)

    async def body() -> Any:
        company = await _company_of(settings, dealership)
        return await invoke_admin(
            settings, "admin.knowledge.list", {"company_id": company, "dealership_id": dealership}
        )

    print_listing(run(body), as_json=as_json, title="documents")


@queries_app.command("list")
def queries_list(
    company: str = typer.Option(..., "--company"), as_json: bool = JsonOption, config: Path | None = ConfigOption
) -> None:
    """List a company's named queries."""
    settings = load_settings(config)
    out = run(lambda: invoke_admin(settings, "admin.queries.list", {"company_id": company}))
    print_listing(out, as_json=as_json, title="named queries")


@queries_app.command("create")
def queries_upsert(
    path: Path = typer.Argument(..., exists=True, help="A JSON file with one query definition."),
    company: str = typer.Option(..., "--company"),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Define or replace a named query from a JSON definition."""
    settings = load_settings(config)
    try:
        definition = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        console.print(f"[red]error[/red] cannot read {path}: {exc.__class__.__name__}")
        raise typer.Exit(2) from None
    payload = {"company_id": company, "query": definition}
    print_record(run(lambda: invoke_admin(settings, "admin.queries.upsert", payload)), as_json=as_json)


queries_app.command("upsert", hidden=True)(queries_upsert)


@queries_app.command("delete")
def queries_delete(
    query_id: str = typer.Argument(...),
    company: str = typer.Option(..., "--company"),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Delete a named query."""
    settings = load_settings(config)
    payload = {"company_id": company, "query_id": query_id}
    print_record(run(lambda: invoke_admin(settings, "admin.queries.delete", payload)), as_json=as_json)


@queries_app.command("install-examples")
def queries_install_examples(
    company: str = typer.Option(..., "--company"), as_json: bool = JsonOption, config: Path | None = ConfigOption
) -> None:
    """Define the shipped example queries for a company (existing ids are kept; an audited operator call)."""
    settings = load_settings(config)
    out = run(lambda: invoke_admin(settings, "admin.queries.install_examples", {"company_id": company}))
    if as_json:
        _print(out)
        return
    typer.echo(f"{out['added']} example queries added")
