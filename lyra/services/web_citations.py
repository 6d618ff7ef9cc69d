"""Web citation detection (decision record 0011): which links of a fetched page's main text point to sources it cites.

The fetcher hands over the links of the page's main content (trafilatura's, with their anchor text). Each link is
settled by rules first, without a model:

* a link to the page itself (its address without the ``#fragment``) or to a sharing endpoint → not a citation;
* a link to a blocked domain → not kept (the gate's reason is counted);
* a link naming a paper (a DOI, arXiv or PubMed address) → a citation, no model needed;

and the rest, at most ``LYRA_WEB_CITATION_MAX_LINKS`` per page (links to other sites first, then the page's own
site, each in reading order), are asked of the local LLM with ``config/prompts/detect_citation.j2``: the page
title, the link and the passage around its anchor text, answered ``YES`` or ``NO``. An unparsable answer is a NO.

A cited link becomes a page (no fragment yet) and ``(page)-[:CITES {citation_source: "extraction"}]->(linked)``,
so it shows among the task's reference candidates and ``queue_reference_candidates`` can read it later.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

from lyra.core.errors import InvalidInputError, LyraError
from lyra.core.settings import WebSettings
from lyra.graph.evidence import EvidenceRepository
from lyra.ml.learned_rules import RuleSource
from lyra.ml.nli import prompt_environment
from lyra.ml.protocols import LLM
from lyra.services.domains import DomainGate
from lyra.sources.injection import Fence
from lyra.sources.scholarly import PaperId, find_identifiers
from lyra.sources.web.extract import Link

log = logging.getLogger(__name__)

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["YES", "NO"]}},
    "required": ["answer"],
}
PASSAGE_CHARS = 240  # of page text on each side of the anchor text shown to the LLM
SHARING = (
    ("twitter.com", "/intent"),
    ("x.com", "/intent"),
    ("twitter.com", "/share"),
    ("facebook.com", "/sharer"),
    ("www.facebook.com", "/sharer"),
    ("linkedin.com", "/sharearticle"),
    ("www.linkedin.com", "/sharearticle"),
    ("reddit.com", "/submit"),
    ("www.reddit.com", "/submit"),
    ("api.whatsapp.com", "/send"),
    ("t.me", "/share"),
)


@dataclass
class CitationRun:
    """What detection did for one page (kept in the job result under ``citations``)."""

    links: int = 0
    by_rule: int = 0  # cited because the link names a paper
    asked: int = 0  # LLM calls
    cited: list[str] = field(default_factory=list)
    not_cited: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> links settled without the LLM
    not_asked: int = 0  # past LYRA_WEB_CITATION_MAX_LINKS
    edges_new: int = 0
    seconds: float = 0.0

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "links": self.links,
            "cited": len(self.cited),
            "cited_urls": self.cited[:20],
            "by_rule": self.by_rule,
            "llm_calls": self.asked,
            "not_cited": self.not_cited,
            "dropped": self.dropped,
            "not_asked": self.not_asked,
            "edges_new": self.edges_new,
            "seconds": round(self.seconds, 3),
        }


def passage_around(text: str, anchor: str, width: int = PASSAGE_CHARS) -> str:
    """The page text around the first occurrence of the anchor text (the anchor alone when it is not found)."""
    anchor = anchor.strip()
    at = text.find(anchor) if anchor else -1
    if at < 0:
        at = text.lower().find(anchor.lower()) if anchor else -1
    if at < 0:
        return anchor
    start, end = max(at - width, 0), min(at + len(anchor) + width, len(text))
    return " ".join(text[start:end].split())


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _is_sharing(url: str) -> bool:
    parts = urlsplit(url)
    host, path = (parts.hostname or "").lower(), parts.path.lower()
    return any(host == h and path.startswith(p) for h, p in SHARING)


def _paper(url: str) -> PaperId | None:
    found = find_identifiers(url)
    return found[0] if found else None


class CitationDetector:
    """Finds the cited sources among a page's links and writes them as ``CITES {citation_source: extraction}``."""

    def __init__(
        self,
        settings: WebSettings,
        evidence: EvidenceRepository,
        gate: DomainGate | None,
        llm: Callable[[], LLM | None],
        prompts_dir: Path,
        rules: RuleSource | None = None,
    ) -> None:
        """``rules``: the approved learned rules of ``citation_detection``, read at every question."""
        self.settings = settings
        self.evidence = evidence
        self.gate = gate
        self._llm = llm
        self.rules = rules
        self._template = prompt_environment(prompts_dir).get_template("detect_citation.j2")

    def detect(
        self,
        page_id: str,
        page_url: str,
        title: str | None,
        text: str,
        links: Sequence[Link],
        check: Callable[[], None] = lambda: None,
    ) -> CitationRun:
        start = time.perf_counter()
        run = CitationRun(links=len(links))
        own = urldefrag(page_url).url
        own_host = _host(page_url)
        seen: set[str] = set()
        cited: list[tuple[str, PaperId | None]] = []
        to_ask: list[Link] = []
        rules = self.gate.active_rules() if self.gate is not None else None
        categories: dict[str, str | None] = {}  # host -> its domain category; None: blocked
        for link in links:
            href = urldefrag(link.href).url
            if href in seen:
                continue
            seen.add(href)
            if href == own:
                run.drop("the page itself")
            elif _is_sharing(href):
                run.drop("sharing link")
            elif (refused := self._refusal(_host(href), rules, categories)) is not None:
                run.drop(refused)
            elif (paper := _paper(href)) is not None:
                run.by_rule += 1
                cited.append((href, paper))
            else:
                to_ask.append(Link(href, link.text))
        # other sites first (a page's own links are mostly navigation), each in reading order
        to_ask.sort(key=lambda link: _host(link.href) == own_host)
        limit = self.settings.web_citation_max_links
        run.not_asked = max(len(to_ask) - limit, 0)
        asking = to_ask[:limit]
        llm = self._llm() if asking else None
        if asking and llm is None:
            run.dropped["no local LLM"] = len(asking)
            asking = []
        for link in asking:
            assert llm is not None
            check()
            run.asked += 1
            if self._ask(llm, title or "", link, passage_around(text, link.text)):
                cited.append((link.href, None))
            else:
                run.not_cited += 1
        run.cited = [href for href, _ in cited]
        if cited:
            run.edges_new = self._write(page_id, cited, categories)
        run.seconds = time.perf_counter() - start
        log.info(
            "citations of %s: %d links, %d cited (%d by rule, %d of %d asked), %d not asked",
            page_url,
            run.links,
            len(run.cited),
            run.by_rule,
            len(run.cited) - run.by_rule,
            run.asked,
            run.not_asked,
        )
        return run

    def _ask(self, llm: LLM, title: str, link: Link, passage: str) -> bool:
        prompt = self._template.render(
            title=title,
            anchor=link.text,
            href=link.href,
            passage=passage,
            fence=Fence.new(),
            learned_rules=list(self.rules().guidelines) if self.rules else [],
        )
        try:
            answer = llm.generate_json([{"role": "user", "content": prompt}], ANSWER_SCHEMA, max_tokens=8)
        except LyraError as exc:
            log.warning("citation check of %s not answered (%s); counted as NO", link.href, exc)
            return False
        return isinstance(answer, dict) and answer.get("answer") == "YES"

    def _refusal(self, host: str, rules: list[dict[str, Any]] | None, categories: dict[str, str | None]) -> str | None:
        """Why the link's host is not kept (a blocked domain, a host the gate cannot name), or None when the domain
        gate lets it in; the answer is remembered, and an allowed host's category goes on the page row."""
        if host not in categories:
            if self.gate is None:
                categories[host] = "unverified"
            else:
                try:
                    decision = self.gate.decide(host, rules)
                except InvalidInputError:
                    return "not a domain name"
                categories[host] = decision.domain_category if decision.allowed else None
        return None if categories[host] is not None else "blocked domain"

    def _write(
        self, page_id: str, cited: Sequence[tuple[str, PaperId | None]], categories: dict[str, str | None]
    ) -> int:
        rows = [
            {
                "url": href,
                "doi": paper.value if paper is not None and paper.kind == "doi" else None,
                "page_type": "web",
                "domain_category": categories.get(_host(href)) or "unverified",
            }
            for href, paper in cited
        ]
        written = self.evidence.upsert_pages(rows)
        targets = sorted({pid for pid in written.ids if pid != page_id})
        if not targets:
            return 0
        result = self.evidence.merge_citations(
            [{"citing_page_id": page_id, "cited_page_id": t, "citation_source": "extraction"} for t in targets]
        )
        return result.created
