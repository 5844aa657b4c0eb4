"""The YAML people write is read strictly: no aliases, no key twice, bounded size, depth and strings, a line number
for every refusal, and never a traceback (domain/yaml_documents.py)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from forecourt.domain.errors import YamlRefused
from forecourt.domain.yaml_documents import LOADERS, MAX_BYTES, MAX_DEPTH, MAX_STRING, load_yaml

from .conftest import EXAMPLE

BILLION_LAUGHS = b"""a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""

DEEP_BLOCK = ("".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n").encode()

HOSTILE: dict[str, tuple[bytes, str, int | None]] = {
    # name: (document, reason, line)
    "billion laughs": (BILLION_LAUGHS, "alias", 1),
    "a plain alias": (b"profile: {id: p}\nother: &x 1\ncopy: *x\n", "alias", 2),
    "a merge key": (b"a: {x: 1}\nb:\n  <<: {x: 2}\n", "alias", 3),
    "a second profile": (b"profile: {id: first}\ncompanies: []\nprofile: {id: second}\n", "duplicate_key", 3),
    "a key twice deep inside": (b"companies:\n  - id: c\n    name: A\n    name: B\n", "duplicate_key", 4),
    "deep flow nesting": (b"a: " + b"[" * 50_000 + b"]" * 50_000 + b"\n", "too_deep", 1),
    "deep block nesting": (DEEP_BLOCK, "too_deep", MAX_DEPTH + 1),
    "invalid UTF-8": (b"profile:\n  id: p\n  name: \xff\xfe\n", "not_utf8", 3),
    "a lone surrogate escape": (b'profile:\n  name: "\\ud800"\n', "", 2),
    "a control character": (b"profile:\n  name: a\x01b\n", "control_character", 2),
    "an impossible date": (b"profile:\n  id: p\nwhen: 2026-13-01\n", "bad_value", 3),
    "an integer too long to convert": (b"n: " + b"9" * 5_000 + b"\n", "bad_value", 1),
    "a string too long": (b"name: " + b"x" * (MAX_STRING + 1) + b"\n", "string_too_long", 1),
    "a file too large": (b"# " + b"x" * MAX_BYTES + b"\n", "too_large", None),
    "broken syntax": (b"profile: [unclosed", "syntax", 1),
    "a Python object tag": (b"a: !!python/object/apply:os.system [true]\n", "not_allowed", 1),
    "two documents": (b"a: 1\n---\nb: 2\n", "syntax", 2),
}


def _refusal(data: bytes, loader: type[Any]) -> YamlRefused:
    with pytest.raises(YamlRefused) as caught:
        load_yaml(data, loader=loader)
    return caught.value


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_document_is_refused_at_once_with_its_reason_and_line(case: str, loader: type[Any]) -> None:
    data, reason, line = HOSTILE[case]
    started = time.perf_counter()
    refused = _refusal(data, loader)
    assert time.perf_counter() - started < 5.0
    assert refused.code == "yaml.refused"
    assert refused.http_status == 422
    if reason:  # a surrogate escape: libyaml refuses it as syntax, PyYAML's parser builds it and it is refused
        assert refused.details["reason"] == reason
    else:
        assert refused.details["reason"] in ("syntax", "surrogate")
    assert refused.details.get("line") == line
    if line is not None:
        assert f"at line {line}, column " in refused.message


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
def test_a_duplicate_key_is_named_with_the_line_of_its_first_appearance(loader: type[Any]) -> None:
    refused = _refusal(HOSTILE["a second profile"][0], loader)
    assert "'profile' appears twice (first at line 1)" in refused.message


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
def test_a_refusal_never_repeats_the_documents_values(loader: type[Any]) -> None:
    secret = b"ana.lopez@example.com"
    for data in (b"a: " + secret + b"\na: " + secret + b"\n", b"k: " + secret + b"\x01\n", b"k: [" + secret + b"\n"):
        refused = _refusal(data, loader)
        assert secret.decode() not in refused.message + repr(refused.details)


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
def test_an_honest_tenants_file_reads_as_it_always_did(loader: type[Any]) -> None:
    import yaml

    data = EXAMPLE.read_bytes()
    assert load_yaml(data, loader=loader) == yaml.safe_load(data)
    assert load_yaml(b"\xef\xbb\xbf" + data, loader=loader) == yaml.safe_load(data)
    assert load_yaml(b"", loader=loader) is None
    levels = "".join("  " * i + f"k{i}:\n" for i in range(1, MAX_DEPTH - 1))  # with the top and "a": MAX_DEPTH
    nested = ("a:\n" + levels + "  " * (MAX_DEPTH - 1) + "v: 1\n").encode()
    assert load_yaml(nested, loader=loader) is not None
