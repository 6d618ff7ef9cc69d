"""The scholarly literature as a source: DOI and query targets, and budgeted citation expansion (decision record 0011).

A job resolves its target to *seed papers* (a DOI or a paper URL: one paper; a query: the academic search of both
APIs, ranked by similarity to the query and the task's claims), then, for the top ``citation_top_n_papers`` seeds,
gathers the papers they cite and the papers citing them from both APIs and keeps the few worth reading:

- Stage 0: no abstract → dropped (nothing to embed or judge); one paper seen in both APIs → one candidate (the
  DOI-first index); fewer than ``citation_min_count`` citations → dropped.
- Stage 1: ``w_e·similarity + w_i·impact`` where similarity is the mean of the cosine to the task's claims (and
  the query) and the cosine to the seed's abstract, and ``impact_score`` is the percentile rank of
  ``log1p(citation_count)`` within the candidate set (0.5 for a lone candidate); top ``citation_stage1_top_k``.
- Stage 2: a rater (``citation_stage2_rater``, :mod:`lyra.ml.usefulness`) scores each Stage-1 survivor's
  usefulness for the task's claims in 0..1 (never whether it supports or refutes anything);
  ``w_r·usefulness + w_e·similarity + w_i·impact``; top ``citation_stage2_top_k``. The default rater, ``ranker``
  (BM25 + cosine to the claims over the Stage-1 cut), makes no LLM call: the LLM's 0-10 rating it replaced gave
  nearly every paper 5 (the measured separation: docs/guides/academic.md). With an LLM rater, LLM
  calls = the Stage-1 cut, never the candidate count, and an unusable answer counts as 0.5.

Seeds and selected papers become abstract pages (``page_type = academic_abstract``; DOI-unique, decision record 0002)
that go through the same ingest path as local files (domain gate, dangerous-pattern scan, fragments, judged stance
edges). Every paper seen gets a page, and every citation pair seen a ``CITES`` edge (``citation_source`` = the API it
came from, Semantic Scholar preferred when both report it), so a new paper is never an isolated node and the cited but
unread ones are the task's *reference candidates*. ``is_influential`` is never requested or stored (decision record
0011).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from lyra.core.errors import NotFoundError, SourceUnavailable
from lyra.core.settings import AcademicSettings
from lyra.graph.evidence import EvidenceRepository
from lyra.ml.learned_rules import RuleSource
from lyra.ml.protocols import LLM, Embedder
from lyra.ml.ranking import CandidateRanker
from lyra.ml.usefulness import UNPARSABLE_USEFULNESS, MemoEmbedder, PaperText, build_rater
from lyra.models.ingest import IngestReport
from lyra.services.paper_freshness import remember_paper_versions
from lyra.sources.injection import detect_injection
from lyra.sources.local_files import SourceDocument
from lyra.sources.scholarly import Citation, Paper, PaperId, PaperIndex, find_identifiers
from lyra.sources.untrusted import source_text

if TYPE_CHECKING:
    from lyra.sources.scholarly.provider import ScholarlySources

log = logging.getLogger(__name__)

Direction = Literal["references", "citations", "both"]

# Words that mark a question as one the scholarly literature answers (decision record 0011: this only decides whether
# the academic search runs first; a paper met any other way takes the same path afterwards).
_ACADEMIC_WORDS = frozenset(
    """study studies trial trials randomized randomised placebo cohort meta-analysis metaanalysis systematic review
    reviews efficacy effect effects association associated risk risks incidence prevalence mortality patients
    patient clinical disease diseases treatment therapy therapies dose doses vaccine vaccines infection infections
    gene genes genetic protein proteins cell cells cancer tumor tumour mice mouse rats vitro vivo
    supplementation deficiency biomarker biomarkers outcome outcomes symptoms syndrome disorder disorders
    hypothesis evidence journal paper papers preprint arxiv pubmed doi peer-reviewed literature
    algorithm algorithms neural network model models dataset datasets benchmark experiment experiments
    quantum molecular molecule chemistry physics biology neuroscience epidemiology pharmacology statistically
    significant significance""".split()
)
_WORD = re.compile(r"[a-z][a-z0-9\-\.]*")


def is_academic_query(query: str) -> bool:
    """Whether a query is one for the academic APIs first: a paper identifier, or two or more scholarly words (one
    is enough for a short query of at most four words)."""
    if find_identifiers(query):
        return True
    words = _WORD.findall(query.lower())
    hits = sum(1 for w in words if w.strip(".") in _ACADEMIC_WORDS)
    return hits >= 2 or (hits >= 1 and len(words) <= 4)


def impact_scores(citation_counts: Sequence[int | None]) -> list[float]:
    """Percentile rank (0..1) of ``log1p(citation_count)`` within the candidate set; ties share their mean rank; a
    lone candidate gets 0.5 (nothing to compare it with); an unknown count counts as 0."""
    n = len(citation_counts)
    if n == 0:
        return []
    if n == 1:
        return [0.5]
    values = np.log1p(np.asarray([max(c or 0, 0) for c in citation_counts], dtype=np.float64))
    order = np.argsort(values, kind="stable")
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.arange(n, dtype=np.float64)
    for value in np.unique(values):  # ties: the mean of their ranks
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return [float(r / (n - 1)) for r in ranks]


@dataclass
class ScoredPaper:
    paper: Paper
    similarity: float
    impact: float
    stage1: float
    usefulness: float | None = None
    stage2: float | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.paper.key(),
            "title": source_text(self.paper.title, 120),  # the API's record: marked as data
            "year": self.paper.year,
            "similarity": round(self.similarity, 3),
            "impact": round(self.impact, 3),
            "usefulness": None if self.usefulness is None else round(self.usefulness, 3),
            "score": round(self.stage2 if self.stage2 is not None else self.stage1, 3),
        }


@dataclass
class StageCounts:
    candidates: int = 0
    after_stage0: int = 0
    after_stage1: int = 0
    final: int = 0
    llm_calls: int = 0
    # wall seconds per stage (for `lyra bench citations`); not in as_dict(), whose values are all ints
    stage0_seconds: float = 0.0
    stage1_seconds: float = 0.0
    stage2_seconds: float = 0.0

    def add(self, other: StageCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, int]:
        """The counts (ints only: get_status sums them over jobs)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.type == "int"}


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class CitationFilter:
    """Stages 0-2 of budgeted citation expansion over one seed paper's candidates (decision record 0011)."""

    def __init__(
        self,
        settings: AcademicSettings,
        embedder: Embedder,
        llm: Callable[[], LLM | None],
        prompts_dir: Path,
        rules: RuleSource | None = None,
        ranker: CandidateRanker | None = None,
    ):
        """``rules``: the approved learned rules of ``citation_usefulness``, read at every rating by an LLM rater;
        ``ranker``: the candidate ranker the ``ranker`` rater scores with (default: the default weights)."""
        self.settings = settings
        self.ranker = ranker or CandidateRanker()
        self.embedder = embedder
        self._llm = llm
        self.prompts_dir = prompts_dir
        self.rules = rules

    def select(
        self, seed: Paper, candidates: Sequence[Paper], topics: Sequence[str], warnings: list[str] | None = None
    ) -> tuple[list[ScoredPaper], StageCounts]:
        s = self.settings
        start = time.perf_counter()
        counts = StageCounts(candidates=len(candidates))
        index = PaperIndex()
        for paper in candidates:
            index.add(paper)
        kept: list[Paper] = []
        for p in index:
            if not (p.abstract and p.abstract.strip()) or (p.citation_count or 0) < s.citation_min_count:
                continue
            if p.key() == seed.key():
                continue
            # an LLM rater reads these abstracts in Stage 2, before the ingest path would scan them
            findings = detect_injection(f"{p.title}\n{p.abstract}")
            if findings:
                if warnings is not None:
                    kinds = ", ".join(sorted({f.kind for f in findings}))
                    warnings.append(f"candidate {p.key()} dropped: dangerous pattern ({kinds})")
                continue
            kept.append(p)
        counts.after_stage0 = len(kept)
        counts.stage0_seconds = time.perf_counter() - start
        start = time.perf_counter()
        if not kept:
            self._log(seed, counts)
            return [], counts

        texts = [f"{p.title}. {p.abstract}" for p in kept]
        references = [t for t in topics if t.strip()]
        seed_text = f"{seed.title}. {seed.abstract}" if seed.abstract else None
        embedder = MemoEmbedder(self.embedder)  # Stage 2 reads the same texts: embedded once
        vectors = _unit(np.asarray(embedder.embed(texts + references + ([seed_text] if seed_text else []))))
        cand, rest = vectors[: len(kept)], vectors[len(kept) :]
        topic_vectors, seed_vector = rest[: len(references)], rest[len(references) :]
        parts = []
        if len(topic_vectors):
            parts.append((cand @ topic_vectors.T).max(axis=1))
        if len(seed_vector):
            parts.append(cand @ seed_vector[0])
        similarity = np.clip(np.mean(parts, axis=0), 0.0, 1.0) if parts else np.full(len(kept), 0.5)
        impact = impact_scores([p.citation_count for p in kept])
        scored = [
            ScoredPaper(
                paper=p,
                similarity=float(sim),
                impact=imp,
                stage1=s.citation_stage1_weight_embedding * float(sim) + s.citation_stage1_weight_impact * imp,
            )
            for p, sim, imp in zip(kept, similarity, impact, strict=True)
        ]
        scored.sort(key=lambda x: (-x.stage1, x.paper.key()))
        stage1 = scored[: s.citation_stage1_top_k]
        counts.after_stage1 = len(stage1)
        counts.stage1_seconds = time.perf_counter() - start
        start = time.perf_counter()

        rater = build_rater(
            s.citation_stage2_rater,
            embedder,
            self._llm,
            self.prompts_dir,
            ranker=self.ranker,
            abstract_chars=s.citation_abstract_chars,
            rules=self.rules,
        )
        if rater is None and warnings is not None:
            warnings.append(
                f"citation expansion: no LLM configured for the {s.citation_stage2_rater} rater; "
                "Stage 2 ranked by Stage-1 scores alone"
            )
        if rater is not None:
            rated = rater.rate([PaperText(i.paper.title, i.paper.abstract or "") for i in stage1], topics)
            for item, value in zip(stage1, rated, strict=True):
                item.usefulness = value
            if rater.calls_llm:
                counts.llm_calls += len(stage1)
        for item in stage1:
            usefulness = item.usefulness if item.usefulness is not None else UNPARSABLE_USEFULNESS
            item.stage2 = (
                s.citation_stage2_weight_rater * usefulness
                + s.citation_stage2_weight_embedding * item.similarity
                + s.citation_stage2_weight_impact * item.impact
            )
        stage1.sort(key=lambda x: (-(x.stage2 or 0.0), x.paper.key()))
        final = stage1[: s.citation_stage2_top_k]
        counts.final = len(final)
        counts.stage2_seconds = time.perf_counter() - start
        self._log(seed, counts)
        return final, counts

    @staticmethod
    def _log(seed: Paper, counts: StageCounts) -> None:
        log.info(
            "citation filter for %s: candidates=%d after_stage0=%d after_stage1=%d final=%d llm_calls=%d",
            seed.key(),
            counts.candidates,
            counts.after_stage0,
            counts.after_stage1,
            counts.final,
            counts.llm_calls,
        )


def paper_document(paper: Paper) -> SourceDocument:
    """A paper's abstract as a document for the ingest path."""
    return SourceDocument(
        url=paper.url(),
        title=paper.title,
        text=paper.abstract or "",
        page_type="academic_abstract",
        origin=f"{'+'.join(paper.sources) or 'paper'}:{paper.key()}",
        doi=paper.doi,
        year=paper.year,
        venue=paper.venue,
        extraction_method="abstract",
    )


def paper_page(paper: Paper) -> dict[str, Any]:
    """A page row for a paper (known from an API; read or not)."""
    return {
        "url": paper.url(),
        "doi": paper.doi,
        "title": paper.title,
        "year": paper.year if paper.year is None or 1000 <= paper.year <= 2200 else None,
        "venue": paper.venue,
        "page_type": "academic_abstract",
    }


@dataclass
class AcademicRun:
    """What one academic job did (kept in its result, summed by get_status)."""

    seeds: list[str] = field(default_factory=list)
    selected: list[dict[str, Any]] = field(default_factory=list)
    stages: StageCounts = field(default_factory=StageCounts)
    papers_seen: int = 0
    citations: int = 0
    citations_new: int = 0
    pages_read: int = 0
    budget_skipped: int = 0
    warnings: list[str] = field(default_factory=list)
    api: dict[str, dict[str, int]] = field(default_factory=dict)
    identifiers: list[str] = field(default_factory=list)  # sent to the resolver by identifier enrichment
    not_found: list[str] = field(default_factory=list)  # of those, unknown to both APIs
    pages_new: int = 0  # page nodes of papers seen that this job created (read or not)
    # the ids of the pages this job created for papers it then reads: the ingest finds them existing, but they are
    # new to the graph (a doi job once reported pages_new 0 for the pages it had just discovered)
    created_pages: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {
            "seeds": self.seeds,
            "selected": self.selected,
            "stages": self.stages.as_dict(),
            "papers_seen": self.papers_seen,
            "citations": self.citations,
            "citations_new": self.citations_new,
            "pages_read": self.pages_read,
            "budget_skipped": self.budget_skipped,
            "warnings": self.warnings,
            "api": self.api,
            "identifiers": self.identifiers,
            "not_found": self.not_found,
            "pages_new": self.pages_new,
        }


IngestDocuments = Callable[[Sequence[SourceDocument]], IngestReport]


class AcademicResearch:
    """Runs one academic target (a DOI, a paper URL, or a query) within a page budget."""

    def __init__(
        self,
        settings: AcademicSettings,
        evidence: EvidenceRepository,
        sources: ScholarlySources,
        citation_filter: CitationFilter,
        embedder: Embedder,
    ) -> None:
        self.settings = settings
        self.evidence = evidence
        self.sources = sources
        self.filter = citation_filter
        self.embedder = embedder

    def __enter__(self) -> AcademicResearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sources.close()  # the HTTP client and the response cache

    # ------------------------------------------------------------------ seeds
    def seeds_for_identifier(self, pid: PaperId, run: AcademicRun) -> list[Paper]:
        found = self.sources.resolve(pid)
        run.warnings.extend(found.warnings)
        if found.value is None:
            raise NotFoundError(f"no paper with {pid.kind} {pid.value!r} in Semantic Scholar or OpenAlex")
        return [found.value]

    def seeds_for_query(self, query: str, topics: Sequence[str], run: AcademicRun) -> list[Paper]:
        found = self.sources.search(query, self.settings.academic_search_limit)
        run.warnings.extend(found.warnings)
        papers = [p for p in found.value if p.title]
        if not papers:
            return []
        # the APIs' own relevance orders differ; rank the merged list by similarity to the query and the claims
        texts = [f"{p.title}. {p.abstract or ''}" for p in papers]
        vectors = _unit(np.asarray(self.embedder.embed([*texts, query, *topics])))
        cand, ref = vectors[: len(papers)], vectors[len(papers) :]
        score = (cand @ ref.T).max(axis=1) + np.asarray([0.0 if p.abstract else -1.0 for p in papers])
        order = sorted(range(len(papers)), key=lambda i: (-float(score[i]), papers[i].key()))
        return [papers[i] for i in order[: self.settings.academic_query_top_k]]

    def resolve_identifiers(
        self, pids: Sequence[PaperId], run: AcademicRun, check: Callable[[], None]
    ) -> list[tuple[PaperId, Paper]]:
        """Identifier enrichment (decision record 0011): each identifier through the resolver a doi target uses. Unknown
        ones are listed in the run; when every API is down the rest are not tried (one warning, never a failure)."""
        found: list[tuple[PaperId, Paper]] = []
        for n, pid in enumerate(pids):
            check()
            try:
                got = self.sources.resolve(pid)
            except SourceUnavailable as exc:
                run.warnings.append(f"identifier enrichment stopped after {n} of {len(pids)}: {exc.message}")
                break
            run.warnings.extend(got.warnings)
            if got.value is None:
                run.not_found.append(str(pid))
            else:
                found.append((pid, got.value))
        return found

    # -------------------------------------------------------------- expansion
    def expand(
        self, seeds: Sequence[Paper], topics: Sequence[str], run: AcademicRun, check: Callable[[], None]
    ) -> tuple[list[ScoredPaper], list[Citation], list[Paper]]:
        """Citation expansion of the top seeds (depth 1): the selected papers, every citation pair seen, and every
        paper seen (for their pages)."""
        s = self.settings
        selected: list[ScoredPaper] = []
        citations: list[Citation] = []
        seen: list[Paper] = []
        if s.citation_depth < 1:
            return selected, citations, seen
        for seed in seeds[: s.citation_top_n_papers]:
            check()
            try:
                found = self.sources.neighbours(seed, s.citation_direction, s.citation_candidates_per_paper)
            except SourceUnavailable as exc:
                run.warnings.append(f"citations of {seed.key()} not gathered: {exc.message}")
                continue
            run.warnings.extend(found.warnings)
            citations.extend(found.value)
            this = PaperIndex()
            this.add(seed)
            others = [c.cited if this.get(c.citing) is not None else c.citing for c in found.value]
            seen.extend(others)
            check()
            chosen, counts = self.filter.select(seed, others, topics, run.warnings)
            run.stages.add(counts)
            selected.extend(chosen)
        return selected, citations, seen

    # ------------------------------------------------------------------ writes
    def write_graph(
        self,
        papers: Sequence[Paper],
        citations: Sequence[Citation],
        run: AcademicRun,
        to_read: Sequence[Paper] | None = None,
    ) -> Callable[[Paper], str | None]:
        """A page for every paper seen and a CITES edge for every pair (idempotent: re-runs find them). Returns the
        page id of a paper seen (None for one without an address). ``run.pages_new`` counts the pages created; the
        pages of ``to_read`` (default: ``papers``) that have an abstract are written first, one by one, so that
        ``run.created_pages`` knows which of them are new when :meth:`read` ingests them."""
        index = PaperIndex()
        for paper in papers:
            index.add(paper)
        for c in citations:
            index.add(c.citing)
            index.add(c.cited)
        canonical = [p for p in index if p.url()]
        run.papers_seen = len(canonical)
        page_of: dict[str, str] = {}

        def page_id(paper: Paper) -> str | None:
            found = index.get(paper)
            return page_of.get(found.key()) if found is not None else None

        if not canonical:
            return page_id
        readable: dict[str, Paper] = {}
        for paper in papers if to_read is None else to_read:
            found = index.get(paper) or paper
            if found.url() and found.abstract and found.abstract.strip():
                readable.setdefault(found.key(), found)
        for paper in readable.values():  # a handful (the seeds and the selected papers): which of them are new
            one = self.evidence.upsert_pages([paper_page(paper)])
            if one.created:
                run.created_pages.add(one.ids[0])
                run.pages_new += 1
        written = self.evidence.upsert_pages([paper_page(p) for p in canonical])
        run.pages_new += written.created
        page_of.update((p.key(), pid) for p, pid in zip(canonical, written.ids, strict=True))

        pairs: dict[tuple[str, str], str] = {}
        for c in citations:
            citing, cited = page_id(c.citing), page_id(c.cited)
            if citing is None or cited is None or citing == cited:
                continue
            current = pairs.get((citing, cited))
            if current is None or (c.source == "semantic_scholar" and current != "semantic_scholar"):
                pairs[(citing, cited)] = c.source
        if pairs:
            result = self.evidence.merge_citations(
                [
                    {"citing_page_id": a, "cited_page_id": b, "citation_source": source}
                    for (a, b), source in sorted(pairs.items())
                ]
            )
            run.citations += len(pairs)
            run.citations_new += result.created
        return page_id

    def read(
        self, papers: Sequence[Paper], pages_left: int | None, ingest: IngestDocuments, run: AcademicRun
    ) -> IngestReport | None:
        """Ingest the abstracts of ``papers`` (in order, at most ``pages_left``) through the ingest path."""
        readable = [p for p in papers if p.abstract and p.abstract.strip()]
        if pages_left is not None and len(readable) > pages_left:
            run.budget_skipped = len(readable) - pages_left
            readable = readable[:pages_left]
        if not readable:
            return None
        report = ingest([paper_document(p) for p in readable])
        run.pages_read = report.documents
        # what the paper's metadata said, kept on its page: a refresh re-checks it (docs/concepts/living-evidence.md)
        remember_paper_versions(self.evidence.store, report.page_ids, {p.url(): p for p in readable})
        # pages write_graph created in this job are new to the graph, although the ingest found them existing
        fresh = min(len(run.created_pages & set(report.page_ids.values())), report.pages_existing)
        report.pages_new += fresh
        report.pages_existing -= fresh
        return report

    # -------------------------------------------------------------------- a job
    def run(
        self,
        seeds: Sequence[Paper],
        topics: Sequence[str],
        pages_left: int | None,
        ingest: IngestDocuments,
        check: Callable[[], None],
        run: AcademicRun,
        *,
        expand: bool = True,
    ) -> IngestReport | None:
        """Expand the seeds' citations (unless ``expand`` is false), write every paper and citation seen, then
        read the seeds and the selected papers, seeds first, within the page budget."""
        run.seeds = [p.key() for p in seeds]
        selected, citations, seen = self.expand(seeds, topics, run, check) if expand else ([], [], [])
        run.selected = [item.summary() for item in selected]
        check()
        to_read = PaperIndex()
        for paper in [*seeds, *(item.paper for item in selected)]:
            to_read.add(paper)
        self.write_graph([*seeds, *seen], citations, run, list(to_read))
        check()
        report = self.read(list(to_read), pages_left, ingest, run)
        run.api = self.sources.usage()
        return report
