"""docs/tenants.md, generated from the models ``forecourt apply`` validates with (so the two cannot differ).

.venv/bin/python -m forecourt.cli.tenants_doc --write docs/tenants.md   # regenerate
.venv/bin/python -m forecourt.cli.tenants_doc                           # print
"""

from __future__ import annotations

import enum
import inspect
import json
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from forecourt.domain.approvals import ApprovalRule
from forecourt.domain.protections import AfterUntrusted, Budget, Budgets, Protections
from forecourt.domain.tenancy import one_or_many
from forecourt.domain.tenants_file import (
    AddressSpec,
    CompanySpec,
    CrmSpec,
    HoursSpec,
    MemberSpec,
    OidcSpec,
    PolicySpec,
    ProfileSpec,
    RooftopSpec,
    TenantsFile,
)

_IDENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "tenants.yaml"

# (model, YAML path of its objects, section title)
SECTIONS: list[tuple[type[BaseModel], str, str]] = [
    (TenantsFile, "(the file)", "File"),
    (ProfileSpec, "profile", "Profile"),
    (CompanySpec, "companies[]", "Company"),
    (OidcSpec, "companies[].oidc", "OIDC issuer"),
    (RooftopSpec, "companies[].rooftops[]", "Rooftop"),
    (AddressSpec, "companies[].rooftops[].address", "Address"),
    (HoursSpec, "companies[].rooftops[].hours", "Hours"),
    (CrmSpec, "companies[].rooftops[].crm", "CRM delivery"),
    (MemberSpec, "companies[].members[]", "Member"),
    (PolicySpec, "companies[].policies[]", "Policy"),
    (ApprovalRule, "companies[].policies[].require_approval[]", "Approval rule"),
    (Protections, "companies[].policies[].protections", "Protections"),
    (AfterUntrusted, "companies[].policies[].protections.after_untrusted", "After untrusted output"),
    (Budgets, "companies[].policies[].protections.budgets", "Budgets"),
    (Budget, "companies[].policies[].protections.budgets.member", "Budget"),
]
# Meanings of fields whose model (shared with the gateway) carries no descriptions.
_MEANINGS = {
    ("ApprovalRule", "action"): "Action name or glob, e.g. `leads.update_status` or `deals.*`.",
    ("ApprovalRule", "field"): "Dotted path into the call's input, e.g. `mileage.value` (not needed for `always`).",
    ("ApprovalRule", "op"): "How the field is compared with `value`; `always` needs approval for every call.",
    ("ApprovalRule", "value"): "What the field is compared with (a list for `in`).",
    ("ApprovalRule", "note"): "Shown to the approver.",
    ("Protections", "after_untrusted"): "Once a session has read untrusted output: actions that then need approval.",
    ("Protections", "budgets"): "Limits per member and per API key, per period (none by default).",
    ("Protections", "auto_accept_upstreams"): "Upstream server ids (globs) whose changed tools need no approval.",
    ("AfterUntrusted", "require_approval"): "Side-effect action names or globs that then wait for a person.",
    ("AfterUntrusted", "refuse"): "Side-effect action names or globs that are then refused.",
    ("Budgets", "period"): "`day` or `month` (calendar, UTC).",
    ("Budgets", "currency"): "ISO 4217 currency of `spend_minor`.",
    ("Budgets", "member"): "Every member's budget, unless `members` names it.",
    ("Budgets", "key"): "Every API key's budget, unless `keys` names it.",
    ("Budgets", "members"): "Budgets by member id.",
    ("Budgets", "keys"): "Budgets by API key id.",
    ("Budget", "calls"): "Calls per period.",
    ("Budget", "tokens_in"): "Model input tokens per period.",
    ("Budget", "tokens_out"): "Model output tokens per period.",
    ("Budget", "spend_minor"): "Model spend per period, in minor units of the currency.",
}
_TITLES = {model: title for model, _, title in SECTIONS}


def _anchor(title: str) -> str:
    return title.lower().replace(" ", "-")


def _constrained(annotation: Any, metadata: list[Any]) -> str | None:
    """The wording for a constrained string or integer (pattern, one-or-many list, bounds), else ``None``."""
    if any(getattr(m, "func", None) is one_or_many for m in metadata):
        return "list of strings (one string = a list of one)"
    patterns = [str(m.pattern) for m in metadata if getattr(m, "pattern", None)]
    if patterns:
        return (
            "id (letters, digits, `.` `_` `-`; up to 128)"
            if patterns[0] == _IDENT_PATTERN
            else f"string matching `{patterns[0]}`"
        )
    bounds = [f"≥ {m.ge}" for m in metadata if getattr(m, "ge", None) is not None]
    bounds += [f"≤ {m.le}" for m in metadata if getattr(m, "le", None) is not None]
    if bounds and annotation is int:
        return f"integer ({', '.join(bounds)})"
    return None


def _named(annotation: Any) -> str:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of " + ", ".join(f"`{m.value}`" for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        title = _TITLES[annotation]
        return f"[{title}](#{_anchor(title)})"
    names = {str: "string", int: "integer", bool: "boolean", float: "number"}
    return names.get(annotation, "any value") if isinstance(annotation, type) else "any value"


def _type(annotation: Any, metadata: list[Any]) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        base, *extra = args
        described = [e.description for e in extra if isinstance(e, FieldInfo) and e.description]
        return described[0] if described else _type(base, [*metadata, *extra])
    constrained = _constrained(annotation, metadata)
    if constrained is not None:
        return constrained
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join(_type(a, []) for a in inner) + (" or null" if len(inner) < len(args) else "")
    if origin is list:
        return f"list of {_type(args[0], [])}"
    if origin is dict:
        return f"mapping of {_type(args[0], [])} to {_type(args[1], [])}"
    if origin is Literal:
        return " or ".join(f"`{a}`" for a in args)
    return _named(annotation)


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "**required**"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "empty"
    if isinstance(value, enum.Enum):
        value = value.value
    return f"`{json.dumps(value)}`"


def _section(model: type[BaseModel], path: str, title: str) -> list[str]:
    summary = " ".join(inspect.cleandoc(model.__doc__ or "").split())
    lines = [f"### {title}", "", f"`{path}` — {summary}", ""]
    lines += ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        kind = _type(field.annotation, list(field.metadata))
        meaning = field.description or _MEANINGS.get((model.__name__, name), "")
        lines.append(f"| `{name}` | {kind} | {_default(field)} | {meaning} |")
    return [*lines, ""]


INTRO = """\
# Tenants files: onboarding a dealer group with `forecourt apply`

<!-- Generated by `python -m forecourt.cli.tenants_doc --write docs/tenants.md` from the models in
     src/forecourt/domain/tenants_file.py; edit those (or this generator), not this file. -->

One YAML file describes a **profile** (the account), its **companies** (a dealer or dealer group), their
**rooftops** (dealerships), **members** (agents and people, with the tools, scopes and rooftops they may
use), **policies** and **adapter settings**. `forecourt apply` makes the database match it:

```sh
forecourt apply examples/tenants.yaml --dry-run   # validate the whole file and print the plan; write nothing
forecourt apply examples/tenants.yaml             # the same plan, applied in one transaction
forecourt apply examples/tenants.yaml             # again: "no changes"
forecourt export-tenants --profile lonestar > tenants.yaml   # the current state, in the same format
```

- **Validated whole, applied whole.** Every problem in the file is reported at once, each with its YAML path
  (`companies[0].rooftops[2].timezone: not an IANA time zone [timezone]`: the rule named as the admin API, the
  console and the CLI name it for the same value), together with what the file would collide
  with in the database (a rooftop id or domain another company already uses). If anything is wrong, nothing
  is written; otherwise the plan is written in one database transaction.
- **A plan first.** Each record is `create` (`+`), `change` (`~`, with the fields that differ), `unchanged`
  (listed with `--show-unchanged`) or `delete` (`-`, only with `--prune`). `--json` prints the plan as JSON.
- **Idempotent.** Applying the same file again changes nothing and says `no changes`.
- **Nothing is deleted unless `--prune`.** With it, members, policies, adapter settings and rooftops of the
  file's companies that the file leaves out are deleted, and so are companies of the file's profile that it
  leaves out (with their members, keys, policies and settings). A rooftop or company that still holds data
  (vehicles, leads, ...) is not deleted: the whole apply is refused with `tenancy.in_use` and nothing changes.
- **A rooftop's `id` is its identity.** Renaming an id creates a new rooftop; ids appear in URLs
  (`/dealers/{id}/...`) and in every record, so pick them once.
- **Who can apply.** The operator: the command line (it runs as the operator through the gateway, and every
  apply is audited like any call), or an operator key over the wire (`POST /mcp/admin.tenants.apply` with
  `{"payload": {"document": {...}, "dry_run": true}}`).
- **Wherever a list of strings is expected, one string is accepted** (`brands: Toyota`).
- **Plain YAML only.** The file is UTF-8, at most 2 MiB, nested at most 32 levels, with no value over 65,536
  characters; anchors, aliases (`&a`, `*a`) and merge keys (`<<`) are refused, and so is a key given twice in one
  mapping (a second `profile:` would otherwise silently replace the first). Each refusal names its line and
  column and applies nothing.

## An operator's first day

1. `make run` (or `forecourt db upgrade` and `forecourt serve`): the first start on a database without operator
   keys prints an **operator key** once. Keep it: it authenticates the admin API (`/admin/v1/...`) for every
   company. `forecourt operator keys create --name NAME` makes more; `forecourt operator keys list` and
   `delete` manage them. The command line needs no key; every command runs as the operator through the
   gateway and is audited under the company it touched.
2. Copy `examples/tenants.yaml`, change the profile, company, rooftops and members to your group's, and run
   `forecourt apply my-group.yaml --dry-run`, then without `--dry-run`.
3. Give each agent its key: `forecourt keys create --company <company> --member <member>` (printed once).
4. Load each rooftop's inventory: `forecourt inventory import FEED.csv --dealership <rooftop>`.
5. Keep the file in version control; edit and apply it again for every change (`--prune` to remove things).

Single records can also be made with commands, each with `--json` and a table without it:
`forecourt companies create|list|show|update`, `forecourt dealerships create|list|show|update`,
`forecourt members create|list|show|update`. A command naming a company that does not exist says which command
creates it.

## Reference

Every field of the file, generated from the schema `forecourt apply` validates with.

"""


def render() -> str:
    """The whole of docs/tenants.md."""
    lines = [INTRO]
    for model, path, title in SECTIONS:
        lines += _section(model, path, title)
    lines += [
        "## Example: a three-rooftop group",
        "",
        "`examples/tenants.yaml`:",
        "",
        "```yaml",
        EXAMPLE.read_text(encoding="utf-8").rstrip("\n"),
        "```",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``--write PATH`` writes the document; no argument prints it."""
    text = render()
    if len(argv) == 2 and argv[0] == "--write":
        Path(argv[1]).write_text(text, encoding="utf-8")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
