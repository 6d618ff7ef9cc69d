"""Identifiers, papers, merging and the canonical index of lyra/sources/scholarly/papers.py (no I/O)."""

from __future__ import annotations

import pytest

from lyra.sources.scholarly import Paper, PaperId, PaperIndex, find_identifiers, merge_papers, parse_identifier


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10.1093/MIND/LIX.236.433", PaperId("doi", "10.1093/mind/lix.236.433")),
        ("doi:10.1000/xyz123", PaperId("doi", "10.1000/xyz123")),
        ("DOI: 10.1000/xyz123.", PaperId("doi", "10.1000/xyz123")),
        ("https://doi.org/10.1016/S0140-6736(20)30183-5", PaperId("doi", "10.1016/s0140-6736(20)30183-5")),
        ("http://dx.doi.org/10.1000%2Fabc", PaperId("doi", "10.1000/abc")),
        ("10.1/x", PaperId("doi", "10.1/x")),
        ("PMID:31234567", PaperId("pmid", "31234567")),
        ("pmid 123", PaperId("pmid", "123")),
        ("https://pubmed.ncbi.nlm.nih.gov/31234567/", PaperId("pmid", "31234567")),
        ("arXiv:2101.00001v2", PaperId("arxiv", "2101.00001")),
        ("2101.00001", PaperId("arxiv", "2101.00001")),
        ("https://arxiv.org/abs/1402.0030", PaperId("arxiv", "1402.0030")),
        ("https://arxiv.org/pdf/2101.00001v3.pdf", PaperId("arxiv", "2101.00001")),
        ("arXiv:hep-th/9901001v1", PaperId("arxiv", "hep-th/9901001")),
        ("math.GT/0309136", PaperId("arxiv", "math.GT/0309136")),
        ("W2741809807", PaperId("openalex", "W2741809807")),
        ("https://openalex.org/w2741809807", PaperId("openalex", "W2741809807")),
        ("2D5673CAA9E6AF3A7B82A43F19EE920992DB07AD", PaperId("s2", "2d5673caa9e6af3a7b82a43f19ee920992db07ad")),
        (
            "https://www.semanticscholar.org/paper/Computing-Machinery/2d5673caa9e6af3a7b82a43f19ee920992db07ad",
            PaperId("s2", "2d5673caa9e6af3a7b82a43f19ee920992db07ad"),
        ),
        ("https://link.springer.com/article/10.1007/s11192-020-03690-4", PaperId("doi", "10.1007/s11192-020-03690-4")),
    ],
)
def test_parse_identifier_reads_each_spelling_a_user_types(text: str, expected: PaperId) -> None:
    assert parse_identifier(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "12345", "caffeine and sleep", "W", "10.abc/x"])
def test_parse_identifier_gives_none_for_what_is_not_an_identifier(text: str) -> None:
    assert parse_identifier(text) is None


def test_find_identifiers_strips_trailing_punctuation_and_keeps_balanced_parentheses() -> None:
    text = (
        "See doi:10.1000/xyz123. Also (https://doi.org/10.1016/S0140-6736(20)30183-5), "
        'and "10.5555/abc-def"; then 10.5555/end,'
    )
    assert find_identifiers(text) == [
        PaperId("doi", "10.1000/xyz123"),
        PaperId("doi", "10.1016/s0140-6736(20)30183-5"),
        PaperId("doi", "10.5555/abc-def"),
        PaperId("doi", "10.5555/end"),
    ]


def test_find_identifiers_finds_pmids_and_both_arxiv_styles_deduplicated_in_order() -> None:
    text = (
        "PMID: 31234567 ... arXiv:1402.0030v2 and https://arxiv.org/pdf/1402.0030.pdf; "
        "old style arXiv:hep-th/9901001; https://pubmed.ncbi.nlm.nih.gov/31234567/ again; 10.1000/XYZ and 10.1000/xyz"
    )
    assert find_identifiers(text) == [
        PaperId("pmid", "31234567"),
        PaperId("arxiv", "1402.0030"),
        PaperId("arxiv", "hep-th/9901001"),
        PaperId("doi", "10.1000/xyz"),
    ]


def test_find_identifiers_ignores_bare_numbers_and_reads_url_escaped_dois() -> None:
    assert find_identifiers("in 2101.00001 cases, 31234567 times") == []
    assert find_identifiers("href=https://doi.org/10.1000%2Fabc%28x%29") == [PaperId("doi", "10.1000/abc(x)")]
    assert find_identifiers('{"doi": "10.1000/j.x.2020.01.001"}\n{"doi": "10.1000/j.x.2020.01.001"}') == [
        PaperId("doi", "10.1000/j.x.2020.01.001")
    ]


def test_paper_id_gives_each_api_its_own_spelling() -> None:
    assert PaperId("doi", "10.1/x").s2() == "DOI:10.1/x"
    assert PaperId("pmid", "123").s2() == "PMID:123"
    assert PaperId("arxiv", "2101.00001").s2() == "ARXIV:2101.00001"
    assert PaperId("s2", "ab" * 20).s2() == "ab" * 20
    with pytest.raises(ValueError, match="OpenAlex"):
        PaperId("openalex", "W1").s2()
    assert PaperId("arxiv", "2101.00001").openalex() == "doi:10.48550/arxiv.2101.00001"
    assert PaperId("s2", "ab" * 20).openalex() is None


def _s2(**fields: object) -> Paper:
    base: dict[str, object] = {"title": "Caffeine and sleep", "sources": ("semantic_scholar",)}
    return Paper.model_validate(base | fields)


def _oa(**fields: object) -> Paper:
    base: dict[str, object] = {"title": "Caffeine and sleep", "sources": ("openalex",)}
    return Paper.model_validate(base | fields)


def test_paper_key_is_the_doi_else_title_first_author_and_year() -> None:
    assert _s2(doi="10.1/x").key() == "doi:10.1/x"
    paper = _s2(title="Caffeine & Sleep: a Trial!", authors=("Ana M. Okafor", "B. Other"), year=2019)
    assert paper.key() == "tay:caffeine sleep a trial|okafor|2019"
    assert _s2(title="Über Schlaf").key() == "tay:uber schlaf||"


def test_paper_url_prefers_the_doi_then_s2_then_openalex() -> None:
    assert _s2(doi="10.1/x", s2_id="a" * 40).url() == "https://doi.org/10.1/x"
    assert _s2(s2_id="a" * 40, openalex_id="W1").url() == f"https://www.semanticscholar.org/paper/{'a' * 40}"
    assert _oa(openalex_id="W1").url() == "https://openalex.org/W1"
    assert _oa(doi="10.1/x", openalex_id="W1", pmid="5").identifiers() == [
        PaperId("doi", "10.1/x"),
        PaperId("openalex", "W1"),
        PaperId("pmid", "5"),
    ]


def test_merge_prefers_semantic_scholar_fills_gaps_takes_the_larger_count_and_unions_sources() -> None:
    s2 = _s2(title="Caffeine and sleep", venue="Sleep Med", citation_count=50, s2_id="a" * 40, abstract=None)
    oa = _oa(title="CAFFEINE AND SLEEP", venue="Sleep Medicine", citation_count=61, openalex_id="W9", abstract="Text")
    for merged in (merge_papers(s2, oa), merge_papers(oa, s2)):
        assert merged.title == "Caffeine and sleep"
        assert merged.venue == "Sleep Med"
        assert merged.abstract == "Text"
        assert merged.citation_count == 61
        assert (merged.s2_id, merged.openalex_id) == ("a" * 40, "W9")
        assert merged.sources == ("semantic_scholar", "openalex")


def test_merge_keeps_a_journal_doi_over_arxivs_record_doi() -> None:
    preprint = _s2(doi="10.48550/arxiv.2101.00001", arxiv_id="2101.00001")
    journal = _oa(doi="10.1/journal")
    assert merge_papers(preprint, journal).doi == "10.1/journal"


def test_index_merges_on_a_shared_doi() -> None:
    index = PaperIndex()
    index.add(_s2(doi="10.1/x", s2_id="a" * 40))
    merged = index.add(_oa(title="Another title spelling", doi="10.1/x", openalex_id="W1"))
    assert len(index) == 1
    assert (merged.s2_id, merged.openalex_id, merged.title) == ("a" * 40, "W1", "Caffeine and sleep")


def test_index_merges_on_title_first_author_and_year_when_one_side_lacks_the_doi() -> None:
    index = PaperIndex()
    index.add(_s2(title="Caffeine and Sleep.", authors=("Ana Okafor",), year=2019, doi="10.1/x"))
    merged = index.add(_oa(title="caffeine and sleep", authors=("A. Okafor", "J. Larsen"), year=2019, openalex_id="W1"))
    assert len(index) == 1 and merged.doi == "10.1/x" and merged.openalex_id == "W1"
    index.add(_oa(title="caffeine and sleep", authors=("A. Okafor",), year=2020, openalex_id="W2"))
    assert len(index) == 2  # another year: another paper


def test_index_never_merges_two_different_dois_even_with_the_same_title() -> None:
    index = PaperIndex()
    index.add(_s2(authors=("Ana Okafor",), year=2019, doi="10.1/preprint"))
    index.add(_oa(authors=("Ana Okafor",), year=2019, doi="10.1/journal"))
    assert len(index) == 2


def test_index_matches_on_any_shared_id_and_joins_entries_a_newcomer_links() -> None:
    index = PaperIndex()
    index.add(_s2(title="First spelling", s2_id="a" * 40, pmid="5"))
    index.add(_oa(title="Second spelling", openalex_id="W1", arxiv_id="2101.00001"))
    assert len(index) == 2
    merged = index.add(_oa(title="Third", pmid="5", openalex_id="W1"))
    assert len(index) == 1
    assert merged.title == "First spelling" and merged.arxiv_id == "2101.00001"
    assert index.get(_oa(title="x", openalex_id="W1")) == merged
    assert list(index) == [merged]


def test_index_matches_a_bare_title_record_to_the_single_entry_with_that_title() -> None:
    index = PaperIndex()
    index.add(_oa(title="Energy drinks, caffeine and adolescent sleep", authors=("K. M",), year=2016, openalex_id="W6"))
    merged = index.add(_s2(title="Energy Drinks, Caffeine and Adolescent Sleep"))  # S2's unresolved reference
    assert len(index) == 1 and merged.openalex_id == "W6"
    index.add(_s2(title="Introduction"))
    index.add(_oa(title="Introduction", authors=("X. Y",), year=2001))
    assert len(index) == 3  # short titles never match on the title alone
