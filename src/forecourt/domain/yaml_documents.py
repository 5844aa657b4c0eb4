"""Reading YAML that people write (tenants files, adapter configuration files) without trusting it.

PyYAML's safe loader builds only plain data, but it still expands aliases (a 540-byte "billion laughs" file
grew ``forecourt apply --dry-run`` past 2 GB and two minutes), lets a second ``profile:`` silently replace the
first, recurses once per nesting level (a deep file ends in ``RecursionError``), lets ``"\\ud800"`` through as a
lone surrogate, and raises ``ValueError`` for a date such as ``2026-13-01``. :func:`load_yaml` refuses all of
that with one :class:`~forecourt.domain.errors.YamlRefused` that names the line and column:

- at most :data:`MAX_BYTES` of UTF-8 (a byte-order mark is allowed; other encodings are not);
- no anchors, aliases or merge keys (none of Forecourt's files needs them);
- no key twice in one mapping;
- at most :data:`MAX_DEPTH` nested collections and :data:`MAX_STRING` characters in one scalar;
- no control characters or lone surrogates, and every typed scalar (dates, integers) a valid value.

Events come from libyaml when PyYAML has it (seven times faster than PyYAML's own parser); the nodes are
composed here, in Python, so that every limit is checked before anything is built.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.error import Mark, MarkedYAMLError
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node
from yaml.parser import Parser, ParserError
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner, ScannerError

from forecourt.domain.errors import YamlRefused

MAX_BYTES = 2 * 1024 * 1024
"""The largest document read: a group's tenants file with a couple of thousand rooftops is well under 1 MiB."""
MAX_DEPTH = 32
"""The deepest nesting of mappings and lists (a tenants file nests five levels)."""
MAX_STRING = 65_536
"""The most characters one scalar may hold."""

_NON_PRINTABLE = Reader.NON_PRINTABLE
_SURROGATE = re.compile("[\ud800-\udfff]")
_MERGE_TAG = "tag:yaml.org,2002:merge"
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_SYNTAX: dict[type[MarkedYAMLError], tuple[str, str]] = {
    ScannerError: ("syntax", "the syntax is broken here"),
    ParserError: ("syntax", "the syntax is broken here"),
    ComposerError: ("syntax", "only one document is allowed"),
    ConstructorError: ("not_allowed", "a tag or key of a kind that is not allowed"),
}


def _refuse(reason: str, what: str, line: int | None = None, column: int | None = None) -> NoReturn:
    details: dict[str, Any] = {"reason": reason}
    where = ""
    if line is not None:
        details["line"] = line
        where = f" at line {line}"
        if column is not None:
            details["column"] = column
            where += f", column {column}"
    raise YamlRefused(f"not valid YAML{where}: {what}", details=details)


def _refuse_at(reason: str, what: str, mark: Any) -> NoReturn:
    """Refuse at a PyYAML or libyaml mark (``line`` and ``column`` 0-based), or nowhere in particular."""
    if mark is None:
        _refuse(reason, what)
    _refuse(reason, what, mark.line + 1, mark.column + 1)


def _key_name(key: Any) -> str:
    """A key as an error names it: a plain name is quoted, anything else is only described."""
    return f"{key!r}" if isinstance(key, str) and _PLAIN_KEY.match(key) else "a key"


class _Strict(Composer, SafeConstructor):
    """The composer and constructor of :func:`load_yaml` (events come from the parser it is mixed with)."""

    def _start_strict(self) -> None:
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)  # type: ignore[arg-type]
        self.depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()  # type: ignore[attr-defined]
        if isinstance(event, AliasEvent) or getattr(event, "anchor", None) is not None:
            _refuse_at("alias", "anchors and aliases are not allowed", event.start_mark)
        if isinstance(event, ScalarEvent) and len(event.value) > MAX_STRING:
            _refuse_at("string_too_long", f"a value is longer than {MAX_STRING:,} characters", event.start_mark)
        nested = isinstance(event, MappingStartEvent | SequenceStartEvent)
        if nested:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                _refuse_at("too_deep", f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            if nested:
                self.depth -= 1
        assert node is not None  # a node starts at every event but an alias, refused above
        return node

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            data = super().construct_object(node, deep)
        except (ValueError, OverflowError):
            # A date such as 2026-13-01, or an integer too long to convert: YAML typed it, Python cannot.
            _refuse_at("bad_value", "a value of its type cannot be read", node.start_mark)
        if isinstance(data, str) and _SURROGATE.search(data):
            _refuse_at("surrogate", "a value holds a lone surrogate (not a character)", node.start_mark)
        return data

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                _refuse_at("alias", "merge keys (<<) are not allowed", key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            try:
                earlier = first.get(key)
            except TypeError:
                continue  # an unhashable key: PyYAML's own error, with its mark, follows
            if earlier is not None:
                where = f" (first at line {earlier.line + 1})"
                _refuse_at("duplicate_key", f"{_key_name(key)} appears twice{where}", key_node.start_mark)
            first[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


class _PyLoader(Reader, Scanner, Parser, _Strict, Resolver):
    """PyYAML's own parser: where PyYAML was built without libyaml."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        self._start_strict()


if yaml.__with_libyaml__:
    from yaml.cyaml import CParser  # type: ignore[attr-defined]

    class _CLoader(_Strict, CParser, Resolver):
        """libyaml's parser, this module's composer and constructor."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            self._start_strict()

    LOADERS: tuple[type[Any], ...] = (_CLoader, _PyLoader)
else:  # pragma: no cover - PyYAML wheels ship libyaml
    LOADERS = (_PyLoader,)
"""The loaders :func:`load_yaml` may use, fastest first (the tests run each)."""


def _text(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if len(data) > MAX_BYTES:
        _refuse("too_large", f"larger than {MAX_BYTES:,} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        _refuse("not_utf8", "not UTF-8 text", line, exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1)
    bad = _NON_PRINTABLE.search(text)
    if bad is not None:
        start = bad.start()
        line, column = text.count("\n", 0, start) + 1, start - (text.rfind("\n", 0, start) + 1) + 1
        _refuse("control_character", f"character U+{ord(bad.group()):04X} is not allowed", line, column)
    return text


def _within(text: str, mark: Mark) -> tuple[int, int]:
    """A mark's line and column (1-based); libyaml marks the end of a cut-off document on the line after it."""
    last = text.count("\n") + (0 if text.endswith("\n") else 1)
    if mark.line + 1 <= last:
        return mark.line + 1, mark.column + 1
    return max(last, 1), len(text.rstrip("\n").rsplit("\n", 1)[-1]) + 1


def load_yaml(data: bytes | str, *, loader: type[Any] | None = None) -> Any:
    """The one document in ``data`` as plain data (dicts, lists, strings, numbers, booleans, dates, ``None``).

    Args:
        data: The document's bytes (UTF-8), or its text.
        loader: One of :data:`LOADERS` (the fastest by default).

    Raises:
        YamlRefused: the document breaks a rule of the module docstring or is not YAML; ``details`` holds
            ``reason`` and, where known, ``line`` and ``column``.
    """
    text = _text(data)
    parser = (loader or LOADERS[0])(text)
    try:
        return parser.get_single_data()
    except MarkedYAMLError as exc:
        reason, what = _SYNTAX.get(type(exc), _SYNTAX[ScannerError])
        mark = exc.problem_mark or exc.context_mark
        if mark is None:
            _refuse(reason, what)
        _refuse(reason, what, *_within(text, mark))
    except yaml.YAMLError:
        _refuse("syntax", "the syntax is broken")
    except RecursionError:  # pragma: no cover - MAX_DEPTH stops composition long before
        _refuse("too_deep", f"nested deeper than {MAX_DEPTH} levels")
    finally:
        parser.dispose()
