"""Document parsing and heading-aware chunking."""

from __future__ import annotations

import itertools

from forecourt.adapters.knowledge.chunking import chunk_document, parse_document


def test_front_matter_gives_title_kind_and_metadata_and_is_removed_from_the_body() -> None:
    doc = parse_document("---\ntitle: Service FAQ\nkind: FAQ\ntags: [service, oil]\n---\n# Heading\nBody text.")
    assert doc.title == "Service FAQ"
    assert doc.kind == "faq"
    assert doc.meta == {"tags": ["service", "oil"]}
    assert doc.body.startswith("# Heading")


def test_the_title_falls_back_to_the_first_heading_then_to_the_default() -> None:
    assert parse_document("intro\n## Returns\ntext").title == "Returns"
    assert parse_document("just text", default_title="notes.txt").title == "notes.txt"


def test_each_section_becomes_a_chunk_carrying_its_heading_path() -> None:
    body = "# Service FAQ\n\n## Do I need an appointment?\nNo, walk-ins welcome.\n\n## Loaners?\nYes.\n"
    chunks = chunk_document(body)
    assert [c.heading for c in chunks] == ["Service FAQ > Do I need an appointment?", "Service FAQ > Loaners?"]
    assert chunks[0].text == "No, walk-ins welcome."
    assert chunks[0].embed_text.startswith("Service FAQ > Do I need an appointment?\n")


def test_a_deeper_heading_nests_and_a_shallower_one_pops_back() -> None:
    body = "# A\n## B\n### C\ntext c\n## D\ntext d\n"
    assert [c.heading for c in chunk_document(body)] == ["A > B > C", "A > D"]


def test_hashes_inside_code_blocks_are_not_headings() -> None:
    body = "# Setup\n```\n# not a heading\n```\nafter\n"
    chunks = chunk_document(body)
    assert len(chunks) == 1
    assert "# not a heading" in chunks[0].text


def test_a_long_section_is_cut_into_bounded_windows_that_overlap() -> None:
    sentences = [f"Sentence number {i} says something about the warranty terms." for i in range(60)]
    body = "## Long\n" + " ".join(sentences)
    chunks = chunk_document(body, max_chars=400, overlap_chars=120)
    assert len(chunks) > 3
    assert all(len(c.text) <= 400 for c in chunks)
    for before, after in itertools.pairwise(chunks):
        last_sentence = before.text.split(". ")[-1]
        assert last_sentence in after.text
    joined = " ".join(c.text for c in chunks)
    assert all(s in joined for s in sentences)


def test_empty_sections_give_no_chunks() -> None:
    assert chunk_document("# A\n\n# B\n\n") == []
