"""Dealer documents → chunks: front matter, heading-aware sections, size-bounded windows with overlap.

A document is Markdown (or plain text) with optional YAML-like front matter::

    ---
    title: Service department FAQ
    kind: faq
    ---
    # Service department FAQ
    ## Do I need an appointment for an oil change?
    No. Our express lane takes walk-ins ...

Every heading starts a section, and a section keeps the path of headings above it (``Service
department FAQ > Do I need an appointment for an oil change?``), so an answer carries its question
with it. A section longer than ``max_chars`` is cut at paragraph, then sentence boundaries into
windows that overlap by about ``overlap_chars``, so a fact on a boundary is found from either side.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
HEADING_SEPARATOR = " > "


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a document."""

    ordinal: int
    heading: str
    text: str

    @property
    def sha256(self) -> str:
        """Digest of what gets embedded (heading and text)."""
        return hashlib.sha256(self.embed_text.encode("utf-8")).hexdigest()

    @property
    def embed_text(self) -> str:
        """The text given to embedders: the heading path, then the body."""
        return f"{self.heading}\n{self.text}" if self.heading else self.text


@dataclass(frozen=True)
class ParsedDocument:
    """A document's front matter and body."""

    title: str
    kind: str
    body: str
    meta: dict[str, Any] = field(default_factory=dict)


def parse_document(content: str, *, default_title: str = "", default_kind: str = "document") -> ParsedDocument:
    """Split front matter (``key: value`` lines between ``---`` fences) from the body.

    The title falls back to the first heading, then to ``default_title``. Front-matter keys other
    than ``title`` and ``kind`` are kept as metadata (string values; ``[a, b]`` becomes a list).
    """
    text = content.replace("\r\n", "\n").lstrip("\ufeff")
    meta: dict[str, Any] = {}
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            for line in text[4:end].splitlines():
                key, sep, value = line.partition(":")
                if sep and key.strip():
                    meta[key.strip().lower()] = _front_value(value.strip())
            text = text[end + 4 :].lstrip("\n")
    title = str(meta.pop("title", "") or "") or _first_heading(text) or default_title
    kind = str(meta.pop("kind", "") or default_kind)
    return ParsedDocument(title=title.strip()[:300], kind=kind.strip().lower()[:64], body=text, meta=meta)


def _front_value(value: str) -> Any:
    if value.startswith("[") and value.endswith("]"):
        return [v.strip().strip("\"'") for v in value[1:-1].split(",") if v.strip()]
    return value.strip("\"'")


def _first_heading(text: str) -> str:
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            return match.group(2)
    return ""


def chunk_document(body: str, *, max_chars: int = 1200, overlap_chars: int = 200) -> list[Chunk]:
    """Heading-aware chunks of a Markdown body.

    Args:
        body: The document text (front matter already removed).
        max_chars: Upper bound of a chunk's body (a single longer sentence is kept whole).
        overlap_chars: About how much text neighbouring windows of one section share.

    Returns:
        Chunks in document order; sections without text are skipped.
    """
    chunks: list[Chunk] = []
    for heading, text in _sections(body):
        for window in _windows(text, max_chars, overlap_chars):
            chunks.append(Chunk(ordinal=len(chunks), heading=heading, text=window))
    return chunks


def _sections(body: str) -> list[tuple[str, str]]:
    path: list[tuple[int, str]] = []
    sections: list[tuple[str, str]] = []
    lines: list[str] = []

    def flush() -> None:
        text = "\n".join(lines).strip()
        if text:
            sections.append((HEADING_SEPARATOR.join(h for _, h in path), text))
        lines.clear()

    in_code = False
    for line in body.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
        match = None if in_code else _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        flush()
        level = len(match.group(1))
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, match.group(2)))
    flush()
    return sections


def _windows(text: str, max_chars: int, overlap_chars: int) -> list[str]:
    if len(text) <= max_chars:
        return [text]
    pieces = _pieces(text, max_chars)
    windows: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        if current and size + len(piece) + 1 > max_chars:
            windows.append(" ".join(current))
            current, size = _tail(current, overlap_chars)
        current.append(piece)
        size += len(piece) + 1
    if current:
        windows.append(" ".join(current))
    return windows


def _pieces(text: str, max_chars: int) -> list[str]:
    """Paragraphs, with over-long paragraphs cut into sentences."""
    pieces: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        paragraph = " ".join(block.split())
        if not paragraph:
            continue
        if len(paragraph) <= max_chars:
            pieces.append(paragraph)
        else:
            pieces.extend(s for s in _SENTENCE_END.split(paragraph) if s)
    return pieces


def _tail(pieces: list[str], overlap_chars: int) -> tuple[list[str], int]:
    """The last pieces of a window, up to about ``overlap_chars``, to start the next window with."""
    kept: list[str] = []
    size = 0
    for piece in reversed(pieces):
        if size + len(piece) > overlap_chars and kept:
            break
        if len(piece) > overlap_chars:
            break
        kept.insert(0, piece)
        size += len(piece) + 1
    return kept, size
