"""Web citation detection's rules, order and limits, with declared fakes (no Neo4j, no model): a scripted LLM that
answers from the link address, and an evidence repository that records the rows it is given. The real LLM and
Neo4j run in tests/integration/web/test_web_citations.py."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, cast

from lyra.core.errors import InvalidInputError, LLMError
from lyra.core.settings import Settings
from lyra.graph.evidence import EvidenceRepository
from lyra.ml.protocols import TokenChoice
from lyra.models.graph import WriteResult
from lyra.services.domains import DomainGate
from lyra.services.web_citations import CitationDetector, passage_around
from lyra.sources.web.extract import Link

PAGE = "https://news.example.org/story"


class AddressLLM:
    """Fake LLM: YES when the link address in the prompt contains "cited", an error for "broken", else NO."""

    model_id = "fake-llm"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def choose(self, messages: Sequence[dict[str, str]], options: Sequence[str]) -> TokenChoice:
        raise AssertionError("not used")

    def choose_raw(self, prompt: str, options: Sequence[str]) -> TokenChoice:
        raise AssertionError("not used")

    def generate_json(self, messages: Sequence[dict[str, str]], schema: dict[str, Any], max_tokens: int = 512) -> Any:
        prompt = messages[0]["content"]
        address = prompt.split("Link address: ", 1)[1].split("\n", 1)[0]
        self.asked.append(address)
        if "broken" in address:
            raise LLMError("the model answered nothing")
        return {"answer": "YES" if "cited" in address else "NO"}


class RecordingEvidence:
    """Fake repository: page ids are positions; rows are kept for the assertions."""

    def __init__(self) -> None:
        self.pages: list[dict[str, Any]] = []
        self.citations: list[dict[str, Any]] = []

    def upsert_pages(self, rows: Sequence[dict[str, Any]]) -> WriteResult:
        self.pages.extend(rows)
        return WriteResult(ids=[f"pg{i}" for i in range(len(rows))], created=len(rows))

    def merge_citations(self, rows: Sequence[dict[str, Any]]) -> WriteResult:
        self.citations.extend(rows)
        return WriteResult(ids=[], created=len(rows))


def detector(max_links: int, llm: AddressLLM | None) -> tuple[CitationDetector, RecordingEvidence]:
    settings = Settings(web_citation_max_links=max_links)
    evidence = RecordingEvidence()
    found = CitationDetector(
        settings.web, cast(EvidenceRepository, evidence), None, lambda: llm, settings.paths.prompts_dir
    )
    return found, evidence


def test_rules_settle_the_page_itself_sharing_and_paper_links_without_the_llm() -> None:
    llm = AddressLLM()
    found, evidence = detector(10, llm)
    links = [
        Link(f"{PAGE}#comments", "comments"),
        Link("https://twitter.com/intent/tweet?url=x", "Tweet"),
        Link("https://doi.org/10.1000/ABC.1", "the trial"),
        Link("https://arxiv.org/abs/2101.00001v2", "preprint"),
        Link("https://other.example.net/cited-report", "report"),
        Link("https://other.example.net/cited-report#section-2", "report, section 2"),  # the same address
    ]
    run = found.detect("pg-src", PAGE, "A story", "The story cites a report and a trial.", links)
    assert run.dropped == {"the page itself": 1, "sharing link": 1}
    assert run.by_rule == 2 and llm.asked == ["https://other.example.net/cited-report"]
    assert run.cited == [
        "https://doi.org/10.1000/ABC.1",
        "https://arxiv.org/abs/2101.00001v2",
        "https://other.example.net/cited-report",
    ]
    assert [row["doi"] for row in evidence.pages] == ["10.1000/abc.1", None, None]
    assert {row["citation_source"] for row in evidence.citations} == {"extraction"}
    assert {row["citing_page_id"] for row in evidence.citations} == {"pg-src"}


class NamingGate:
    """Fake domain gate: blocks one domain, cannot name an IPv6 literal (as DomainGate refuses one)."""

    def active_rules(self) -> list[dict[str, Any]]:
        return []

    def decide(self, domain: str, rules: list[dict[str, Any]] | None = None) -> Any:
        if ":" in domain:
            raise InvalidInputError("domain", f"{domain!r} is not a domain name")
        return SimpleNamespace(allowed=domain != "ads.example.com", domain_category="trusted")


def test_blocked_and_unnamed_hosts_are_dropped_and_kept_ones_carry_their_category() -> None:
    settings = Settings()
    evidence = RecordingEvidence()
    gate = cast(DomainGate, NamingGate())
    found = CitationDetector(
        settings.web, cast(EvidenceRepository, evidence), gate, lambda: None, settings.paths.prompts_dir
    )
    links = [
        Link("https://ads.example.com/doi/10.1000/x", "ad"),
        Link("http://[::1]:8080/doi/10.1000/y", "local"),
        Link("https://doi.org/10.1000/z", "paper"),
    ]
    run = found.detect("pg-src", PAGE, None, "text", links)
    assert run.dropped == {"blocked domain": 1, "not a domain name": 1}
    assert run.cited == ["https://doi.org/10.1000/z"]
    assert [row["domain_category"] for row in evidence.pages] == ["trusted"]


def test_other_sites_are_asked_first_and_at_most_the_limit() -> None:
    llm = AddressLLM()
    found, evidence = detector(2, llm)
    links = [
        Link("https://news.example.org/section/health", "Health"),
        Link("https://a.example.net/cited-1", "one"),
        Link("https://b.example.net/other", "two"),
        Link("https://c.example.net/cited-3", "three"),
    ]
    run = found.detect("pg-src", PAGE, "A story", "text", links)
    assert llm.asked == ["https://a.example.net/cited-1", "https://b.example.net/other"]
    assert run.not_asked == 2 and run.asked == 2 and run.not_cited == 1
    assert run.cited == ["https://a.example.net/cited-1"]
    assert len(evidence.citations) == 1


def test_an_unanswered_question_is_a_no_and_no_llm_leaves_only_the_rules() -> None:
    llm = AddressLLM()
    found, _ = detector(10, llm)
    run = found.detect("pg-src", PAGE, None, "text", [Link("https://x.example.net/broken-cited", "x")])
    assert run.asked == 1 and run.cited == [] and run.not_cited == 1

    found, evidence = detector(10, None)
    links = [Link("https://x.example.net/cited", "x"), Link("https://doi.org/10.1000/xyz", "y")]
    run = found.detect("pg-src", PAGE, None, "text", links)
    assert run.dropped == {"no local LLM": 1} and run.cited == ["https://doi.org/10.1000/xyz"]
    assert len(evidence.pages) == 1


def test_the_passage_is_the_text_around_the_anchor() -> None:
    text = "A" * 300 + " the national report found lower pressure " + "B" * 300
    passage = passage_around(text, "national report", width=20)
    assert "national report" in passage and len(passage) <= 20 * 2 + len("national report")
    assert passage_around("no such words", "missing anchor") == "missing anchor"
