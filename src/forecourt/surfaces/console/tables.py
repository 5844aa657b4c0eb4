"""Server-side tables: a page's search, filters, sort and paging as query parameters, and the links between pages.

A :class:`Listing` is one table of a page: it reads its parameters (``q``, its filters, ``sort``, ``order``,
``offset``; with a prefix when a page shows several tables), calls the table's ``console.<name>.page`` action
through the gateway, and builds the links of its sort headers and pager, keeping every other parameter of the
page as it is. Templates draw it with the macros of ``_table.html``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from forecourt.surfaces.console.core import Page

PAGE_SIZE = 25
MAX_OFFSET = 10_000


def _int(value: str, default: int, low: int, high: int) -> int:
    try:
        return max(low, min(high, int(value)))
    except ValueError:
        return default


@dataclass
class Listing:
    """One table of a page, read a page at a time."""

    page: Page
    path: str
    prefix: str = ""
    filters: tuple[str, ...] = ()
    values: dict[str, str] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)

    def param(self, name: str) -> str:
        """This table's parameter ``name`` of the request."""
        return self.page.request.query_params.get(self.prefix + name, "").strip()

    @property
    def q(self) -> str:
        """The search text."""
        return self.values.get("q", "")

    @property
    def items(self) -> list[dict[str, Any]]:
        """The rows of this page."""
        return list(self.result.get("items", []))

    @property
    def offset(self) -> int:
        """Where this page starts."""
        return int(self.result.get("offset", 0))

    def url(self, **changes: Any) -> str:
        """This page's URL with this table's parameters changed (every other parameter kept)."""
        params = dict(self.page.request.query_params)
        for key, value in changes.items():
            name = self.prefix + key
            if value in (None, "", 0) and key != "order":
                params.pop(name, None)
            else:
                params[name] = str(value)
        query = urlencode(sorted(params.items()))
        return self.page.url(self.path) + (f"?{query}" if query else "")

    def sort_url(self, key: str) -> str:
        """The header link: sort by ``key``, the other way round when already sorted by it."""
        same = self.values.get("sort") == key
        order = "asc" if same and self.values.get("order") == "desc" else "desc" if same else "asc"
        return self.url(sort=key, order=order, offset=0)

    def sorted_by(self, key: str) -> str:
        """``ascending``/``descending`` when sorted by ``key`` (``aria-sort``), else ``none``."""
        if self.values.get("sort") != key:
            return "none"
        return "descending" if self.values.get("order") == "desc" else "ascending"

    @property
    def prev_url(self) -> str | None:
        """The previous page, if any."""
        if self.offset <= 0:
            return None
        return self.url(offset=max(0, self.offset - int(self.result.get("limit", PAGE_SIZE))))

    @property
    def next_url(self) -> str | None:
        """The next page, if any."""
        if not self.result.get("has_next"):
            return None
        return self.url(offset=self.offset + int(self.result.get("limit", PAGE_SIZE)))

    @property
    def summary(self) -> str:
        """``26-50 of 1,000`` (``of 10,000+`` past the count's cap)."""
        shown = len(self.items)
        if not shown:
            return "No rows match." if self.q or any(self.values.get(f) for f in self.filters) else "No rows yet."
        span = f"{self.offset + 1:,}-{self.offset + shown:,}"
        if "total" not in self.result:
            return f"Rows {span}"
        total = f"{self.result['total']:,}" + ("+" if self.result.get("total_capped") else "")
        return f"{span} of {total}"


async def listing(
    page: Page,
    name: str,
    path: str,
    *,
    prefix: str = "",
    filters: tuple[str, ...] = (),
    limit: int = PAGE_SIZE,
    extra: dict[str, Any] | None = None,
) -> Listing:
    """Read one page of table ``name`` (``console.<name>.page``) as the request's parameters ask."""
    table = Listing(page, path, prefix, filters)
    values = {k: table.param(k) for k in ("q", "sort", "order", *filters)}
    table.values = {k: v for k, v in values.items() if v}
    payload: dict[str, Any] = {"company_id": page.company, "limit": limit, **(extra or {})}
    payload["offset"] = _int(table.param("offset"), 0, 0, MAX_OFFSET)
    for key, value in table.values.items():
        if key == "order" and value not in ("asc", "desc"):
            continue
        payload[key] = value[:100]
    table.result = await page.call(f"console.{name}.page", payload)
    return table
