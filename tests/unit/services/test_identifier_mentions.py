"""Which identifiers a read document hands to identifier enrichment, and in which order (no I/O)."""

from __future__ import annotations

from lyra.models.ingest import IdentifierMention
from lyra.services.ingest import MAX_MENTIONS_PER_DOCUMENT, _mentions
from lyra.services.research import _unique_identifiers
from lyra.sources.local_files import SourceDocument
from lyra.sources.scholarly import PaperId


def document(text: str, doi: str | None = None) -> SourceDocument:
    return SourceDocument(url="https://example.org/a", title="A", text=text, page_type="web", origin="test", doi=doi)


def test_the_own_doi_comes_first_and_is_not_repeated_as_a_citation() -> None:
    text = "We build on doi:10.1000/XYZ.1 and PMID: 123456, and on our own work https://doi.org/10.1000/own.7."
    mentions = _mentions(document(text, doi="https://doi.org/10.1000/OWN.7"), "page1")
    assert [(m.identifier, m.own) for m in mentions] == [
        ("doi:10.1000/own.7", True),
        ("doi:10.1000/xyz.1", False),
        ("pmid:123456", False),
    ]
    assert {m.page_id for m in mentions} == {"page1"}


def test_a_document_without_identifiers_gives_none_and_a_long_list_is_capped() -> None:
    assert _mentions(document("Nothing to resolve here, only 10 numbers and a year 2020."), "p") == []
    many = " ".join(f"doi:10.1000/item.{n}" for n in range(MAX_MENTIONS_PER_DOCUMENT + 20))
    assert len(_mentions(document(many), "p")) == MAX_MENTIONS_PER_DOCUMENT


def test_unique_identifiers_put_own_identifiers_first_and_keep_every_page_naming_one() -> None:
    mentions = [
        IdentifierMention(page_id="a", identifier="doi:10.1000/x", own=False),
        IdentifierMention(page_id="b", identifier="arxiv:2101.00001", own=False),
        IdentifierMention(page_id="b", identifier="doi:10.1000/b", own=True),
        IdentifierMention(page_id="c", identifier="doi:10.1000/x", own=False),
        IdentifierMention(page_id=None, identifier="not an identifier", own=False),
    ]
    found = _unique_identifiers(mentions)
    assert list(found) == [PaperId("doi", "10.1000/b"), PaperId("doi", "10.1000/x"), PaperId("arxiv", "2101.00001")]
    assert [m.page_id for m in found[PaperId("doi", "10.1000/x")]] == ["a", "c"]
