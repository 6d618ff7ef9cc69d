"""The evidence pipeline: documents → pages → fragments (exact + near-duplicate dedup) → candidate pairs →
NLI stance edges. Failures of one document or one pair are recorded and the run goes on.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import numpy as np

from lyra.core.context import current_job
from lyra.core.errors import ConfigError, InvalidInputError, LyraError
from lyra.core.ids import new_id, text_hash, validate_task_id
from lyra.core.settings import PipelineSettings
from lyra.graph.evidence import EvidenceRepository
from lyra.graph.store import GraphStore
from lyra.ml.cache import CachedJudge
from lyra.ml.learned_rules import LearnedRules, RuleSource, domain_penalties
from lyra.ml.protocols import LLM, Embedder, NLIJudge, NLIResult
from lyra.ml.ranking import CandidateRanker
from lyra.ml.relevance import relevance
from lyra.ml.vector_index import FragmentIndex
from lyra.models.graph import RELATION_FOR_LABEL, PageIn, PageType, offline_judge_name
from lyra.models.ingest import IdentifierMention, IngestReport, SkippedItem
from lyra.services.coverage import (
    ClaimToJudge,
    FragmentToJudge,
    PairPlan,
    PendingPair,
    own_source_mask,
    plan_pairs,
)
from lyra.services.domains import LOCAL_DOMAIN, skip_notice
from lyra.services.freshness import compare_versions
from lyra.services.tasks import TaskService
from lyra.sources.chunking import chunk_text
from lyra.sources.injection import detect_injection
from lyra.sources.local_files import SkippedDocument, SourceDocument, WalkLimits, iter_documents
from lyra.sources.scholarly.papers import PaperId, find_identifiers, normalise_doi
from lyra.sources.untrusted import scanner_version

if TYPE_CHECKING:
    from lyra.ml.calibration import Calibrator
    from lyra.services.domains import DomainGate

log = logging.getLogger(__name__)


class CategorySource(Protocol):
    def category(self, domain: str) -> str: ...

    def weight(self, category: str) -> float: ...


T = TypeVar("T")
Progress = Callable[[str, int], None]  # (counter name, increment)
EXACT_COSINE = 0.9999
JUDGE_BATCH = 16  # pairs given to the judge at once
PAIR_LEASE_SECONDS = 900  # how long a worker holds the pairs of the batch it judges (a dead worker's lease expires)


@dataclass
@dataclass
class _Guard:
    """One ingest run's page blocks (by the document's URL) and the domains its task skips (domain -> notice); a
    finding during the run adds to both."""

    pages: dict[str, dict[str, Any]] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)


class _Timer:
    model_seconds: float = 0.0

    def run(self, fn: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            self.model_seconds += time.perf_counter() - start


MAX_MENTIONS_PER_DOCUMENT = 50
MAX_EVIDENCE_SENTENCE = 1000  # characters of the judge's decisive sentence kept on an edge


def _bounded_sentence(sentence: str | None) -> str | None:
    """The judge's decisive sentence as stored on the edge: stripped, at most MAX_EVIDENCE_SENTENCE characters."""
    if not sentence or not sentence.strip():
        return None
    text = " ".join(sentence.split())
    return text if len(text) <= MAX_EVIDENCE_SENTENCE else text[: MAX_EVIDENCE_SENTENCE - 1] + "…"


def _mentions(doc: SourceDocument, page_id: str) -> list[IdentifierMention]:
    """The paper identifiers a read document carries: its own DOI first, then those its text names."""
    own_doi = normalise_doi(doc.doi) if doc.doi else None
    own = PaperId("doi", own_doi) if own_doi else None
    named = [pid for pid in find_identifiers(doc.text) if pid != own][:MAX_MENTIONS_PER_DOCUMENT]
    mentions = [IdentifierMention(page_id=page_id, identifier=str(own), own=True)] if own is not None else []
    mentions.extend(IdentifierMention(page_id=page_id, identifier=str(pid), own=False) for pid in named)
    return mentions


def _page_type(doc: SourceDocument) -> PageType:
    if doc.page_type in ("academic", "academic_abstract", "pdf"):
        return cast(PageType, doc.page_type)
    return "local" if doc.url.startswith("file:") else "web"


@dataclass(frozen=True)
class _Verdicts:
    """What turns a judge's answers into edges for one run: the calibrator in force and the judge's identity."""

    calibrator: Calibrator | None
    calibrator_version: int | None
    judge_id: str
    rules_version: int


@dataclass
class _Passage:
    page_id: str
    text: str
    position: int
    extraction_method: str
    category: str
    vector: Any = field(default=None, repr=False)


class IngestService:
    def __init__(
        self,
        settings: PipelineSettings,
        prompts_dir: Path,
        pdf_max_pages: int,
        store: GraphStore,
        evidence: EvidenceRepository,
        tasks: TaskService,
        embedder: Embedder,
        judge: NLIJudge,
        index: FragmentIndex,
        domains: CategorySource,
        ranker: CandidateRanker,
        llm: LLM | None = None,
        gate: DomainGate | None = None,
        calibrator: Callable[[], tuple[Calibrator | None, int | None]] | None = None,
        claim_rules: RuleSource | None = None,
        ranking_rules: RuleSource | None = None,
    ) -> None:
        """``prompts_dir``: the claim extractor's prompts; ``pdf_max_pages``: pages of a local PDF read
        (LYRA_WEB_PDF_MAX_PAGES, as for fetched ones)."""
        self.settings = settings
        self.prompts_dir = prompts_dir
        self.pdf_max_pages = pdf_max_pages
        self.store = store
        self.evidence = evidence
        self.tasks = tasks
        self.embedder = embedder
        self.judge = judge
        self.index = index
        self.domains = domains
        self.ranker = ranker
        self._llm = llm
        self.gate = gate
        self.calibrator = calibrator
        self.claim_rules = claim_rules  # the approved learned rules of claim extraction (decision record 0013)
        self.ranking_rules = ranking_rules  # ... of evidence ranking: CONSTRAINT rules lowering a domain's weight

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            raise ConfigError(
                "claim extraction needs an LLM, and none is configured",
                hint="set LYRA_LLM_PROVIDER (embedded or ollama), or ingest without extract_claims",
            )
        return self._llm

    # ------------------------------------------------------------------ public
    def ingest(
        self,
        paths: Sequence[Path],
        task_id: str,
        claims: Sequence[str] = (),
        *,
        hypothesis: str | None = None,
        extract_claims: bool = False,
        progress: Progress | None = None,
        max_documents: int | None = None,
        allowed_roots: Sequence[Path] | None = None,
    ) -> IngestReport:
        """Ingest local documents into the task and judge the task's claims against the new fragments.

        ``progress`` is called after each unit of work and may raise to abort (a job's stop request or budget);
        what was written before stays consistent, and running the same ingest again completes it.
        ``max_documents`` caps the documents read (a task's page budget); the rest are listed as skipped.
        ``allowed_roots`` confines the walk (job targets): a file or folder whose real path is outside them, a
        symbolic link leading out included, is skipped with a reason. Without it (the CLI, run as the local user)
        any path is read. Either way only regular files are read, within LYRA_INGEST_MAX_FILE_BYTES and
        LYRA_INGEST_MAX_FILES.
        """
        validate_task_id(task_id)
        start = time.perf_counter()
        tick: Progress = progress or (lambda _name, _n: None)
        if not self.tasks.tasks.exists(task_id):
            if not hypothesis:
                hypothesis = claims[0] if claims else None
            if not hypothesis:
                raise InvalidInputError(
                    "claims", f"task {task_id!r} does not exist; give a hypothesis or a claim to create it"
                )
            self.tasks.create_task(task_id, hypothesis)
            claims = [c for c in claims if c != hypothesis]
        if claims:
            self.tasks.add_claims(task_id, list(claims))
        documents: list[SourceDocument] = []
        skipped: list[SkippedItem] = []
        limits = WalkLimits(
            allowed_roots=tuple(allowed_roots) if allowed_roots is not None else None,
            max_file_bytes=self.settings.ingest_max_file_bytes,
            max_files=self.settings.ingest_max_files,
            max_pdf_pages=self.pdf_max_pages,
        )
        for item in iter_documents(list(paths), limits):
            if isinstance(item, SkippedDocument):
                skipped.append(SkippedItem(item=item.origin, reason=item.reason))
                log.warning("skipped %s: %s", item.origin, item.reason)
            elif max_documents is not None and len(documents) >= max_documents:
                skipped.append(SkippedItem(item=item.origin, reason="page budget reached (max_pages)"))
            else:
                documents.append(item)
            tick("documents", 1)
        return self._ingest_read(documents, task_id, skipped, extract_claims, tick, start)

    def ingest_documents(
        self,
        documents: Sequence[SourceDocument],
        task_id: str,
        *,
        extract_claims: bool = False,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Ingest documents read elsewhere (abstracts from the academic APIs, fetched web pages) into an existing
        task, through the same path as local files: domain gate, dangerous-pattern scan, pages, fragments, judged
        edges."""
        validate_task_id(task_id)
        self.tasks.tasks.get(task_id)  # NotFoundError with a hint when the task is missing
        tick: Progress = progress or (lambda _name, _n: None)
        return self._ingest_read(list(documents), task_id, [], extract_claims, tick, time.perf_counter())

    def _ingest_read(
        self,
        documents: list[SourceDocument],
        task_id: str,
        skipped: list[SkippedItem],
        extract_claims: bool,
        tick: Progress,
        start: float,
    ) -> IngestReport:
        timer = _Timer()
        report = IngestReport(task_id=task_id, cause_id=new_id("ing"), claims=[], skipped=skipped)
        report.documents = len(documents)
        fragment_ids = self._write_documents(documents, report, timer, tick, task_id)
        # a page read before and read again, by any path: what left it stops counting (decision record 0016)
        # (a page this read created carries only what it found: not asked)
        texts = {
            page_id: doc.text
            for doc in documents
            if (page_id := report.page_ids.get(doc.url)) is not None and page_id not in report.new_page_ids
        }
        report.passages = compare_versions(self.store, texts, report.page_fragments)
        if extract_claims and fragment_ids:
            report.extracted_claims = self._extract_claims(task_id, fragment_ids, report, timer)
        self._judge_claims(task_id, report, timer, tick)
        self.index.save()
        report.seconds_total = time.perf_counter() - start
        report.seconds_in_models = timer.model_seconds
        return report

    # ------------------------------------------------------------- documents
    def _admit(
        self,
        doc: SourceDocument,
        page: PageIn,
        task_id: str,
        rules: list[dict[str, Any]] | None,
        report: IngestReport,
        guard: _Guard,
    ) -> str | None:
        """The domain decision, the page and task blocks, and the dangerous-pattern check, before any model sees the
        text. Returns the domain category when the document may be used, None when it is skipped (and reported)."""
        assert page.domain is not None
        category = self.domains.category(page.domain)
        if self.gate is not None:
            decision = self.gate.decide(page.domain, rules)
            if not decision.allowed:
                reason = f"domain {decision.domain} is blocked ({decision.domain_block_reason}): {decision.reason}"
                self._skip(report, doc, reason)
                return None
            category = decision.domain_category
            blocked = guard.pages.get(doc.url)
            if blocked is not None:
                self._skip(report, doc, self.gate.page_block_text(doc.url, blocked))
                return None
            skipped = guard.domains.get(decision.domain)
            if skipped is not None:
                self._skip(report, doc, skipped)
                return None
        # the whole fetched source is scanned (hidden spans, comments and attributes included), not only the
        # extracted text: what an extractor drops today another may keep
        text = f"{doc.title or ''}\n{doc.text}\n{doc.raw or ''}"
        findings = detect_injection(text)  # includes the prefix of the prompts' Fence delimiters
        if findings:
            kinds = sorted({f.kind for f in findings})
            detail = "; ".join(f"{f.kind}: {f.detail}" for f in findings[:3])
            self._skip(report, doc, f"dangerous pattern ({', '.join(kinds)}); not read: {detail}")
            if self.gate is not None:
                found = self.gate.record_dangerous_document(task_id, page.domain, doc.url, kinds, detail)
                report.notices.append(found.notice)
                guard.pages[doc.url] = {"kinds": kinds, "blocked_at": "now"}
                if found.domain != LOCAL_DOMAIN:
                    guard.domains.setdefault(found.domain, found.notice)
            return None
        return category

    @staticmethod
    def _skip(report: IngestReport, doc: SourceDocument, reason: str) -> None:
        report.skipped.append(SkippedItem(item=doc.origin, reason=reason))
        log.warning("skipped %s: %s", doc.origin, reason)

    def _write_documents(
        self, documents: list[SourceDocument], report: IngestReport, timer: _Timer, tick: Progress, task_id: str
    ) -> list[str]:
        if not documents:
            return []
        page_rows: list[dict[str, Any]] = []
        kept: list[SourceDocument] = []
        rules = self.gate.active_rules() if self.gate is not None else None
        guard = _Guard()
        if self.gate is not None:  # read once: pages blocked for every task, domains this task stopped using
            guard.pages = self.gate.page_blocks([doc.url for doc in documents])
            guard.domains = {
                name: skip_notice(name, row["url"] or "?", list(row["kinds"] or []))
                for name, row in self.gate.task_skips(task_id).items()
            }
        for doc in documents:
            try:
                page = PageIn(
                    url=doc.url,
                    doi=doc.doi,
                    title=doc.title,
                    year=doc.year,
                    venue=doc.venue,
                    page_type=_page_type(doc),
                )
            except ValueError as exc:
                report.skipped.append(SkippedItem(item=doc.origin, reason=f"bad metadata: {exc}"))
                continue
            category = self._admit(doc, page, task_id, rules, report, guard)
            if category is None:
                continue
            page_rows.append({**page.model_dump(), "domain_category": category})
            kept.append(doc)
        if not kept:
            return []
        written = self.evidence.upsert_pages(page_rows)
        report.new_page_ids.update(written.created_ids)
        report.pages_new += written.created
        report.pages_existing += len(set(written.ids)) - written.created
        # the task read these pages: its evidence is credited to them, never to another task's copy of a passage
        self.evidence.record_task_reads(task_id, sorted(set(written.ids)), report.cause_id)

        passages: list[_Passage] = []
        for doc, page_id, row in zip(kept, written.ids, page_rows, strict=True):
            report.identifiers.extend(_mentions(doc, page_id))
            report.page_ids[doc.url] = page_id
            pieces = chunk_text(doc.text, max_chars=self.settings.chunk_max_chars)
            if not pieces:
                report.skipped.append(SkippedItem(item=doc.origin, reason="no passage long enough to judge"))
                continue
            passages.extend(
                _Passage(page_id, p.text, p.position, doc.extraction_method, row["domain_category"]) for p in pieces
            )
        if not passages:
            return []
        vectors = timer.run(lambda: self.embedder.embed([p.text for p in passages]))
        for passage, vector in zip(passages, vectors, strict=True):
            passage.vector = vector

        # Near-duplicates of already indexed fragments (and of earlier passages in this run) are not new
        # fragments: the existing fragment is linked to the new page instead.
        fragment_ids: list[str] = []
        to_write: list[_Passage] = []
        links: list[dict[str, str]] = []
        threshold = self.settings.near_duplicate_threshold
        hashes_seen: dict[str, int] = {}
        batch = FragmentIndex(vectors.shape[1], None, kind="flat")  # this run's new passages, exact search
        for passage in passages:
            digest = text_hash(passage.text)
            if digest in hashes_seen:
                to_write.append(passage)  # exact duplicate: the text_hash MERGE links it
                continue
            near = self.index.near_duplicates(passage.vector[None, :], threshold)[0]
            if near is not None and near[1] >= EXACT_COSINE:
                near = None  # the same text again: the text_hash MERGE returns the existing fragment
            if near is None:
                near = batch.near_duplicates(passage.vector[None, :], threshold)[0]
            if near is not None:
                links.append({"fragment_id": near[0], "page_id": passage.page_id})
                report.fragments_near_duplicate += 1
                continue
            hashes_seen[digest] = len(to_write)
            batch.add([f"pending:{len(batch)}"], passage.vector[None, :])
            to_write.append(passage)
        result = self.evidence.upsert_fragments(
            [
                {
                    "page_id": p.page_id,
                    "text": p.text,
                    "extraction_method": p.extraction_method,
                    "position": p.position,
                    "embedding": [float(x) for x in p.vector],
                    "scanned_with": scanner_version(),  # _admit scanned each document whole before this write
                }
                for p in to_write
            ]
        )
        report.fragments_new += result.created
        report.fragments_existing += len(set(result.ids)) - result.created
        unique_first: dict[str, int] = {}
        for i, fid in enumerate(result.ids):
            unique_first.setdefault(fid, i)
        # resolve links to passages written in this run ("pending:<n>" = n-th unique passage)
        unique_order = list(unique_first)
        for link in links:
            if link["fragment_id"].startswith("pending:"):
                link["fragment_id"] = unique_order[int(link["fragment_id"].split(":", 1)[1])]
        if links:
            self.store.run("evidence/link_fragment_to_page", {"rows": links})
        self.index.add(
            unique_order, np.asarray([to_write[unique_first[f]].vector for f in unique_order], dtype=np.float32)
        )
        fragment_ids = unique_order + [link["fragment_id"] for link in links]
        for passage, fid in zip(to_write, result.ids, strict=True):
            report.page_fragments.setdefault(passage.page_id, []).append(fid)
        for link in links:
            report.page_fragments.setdefault(link["page_id"], []).append(link["fragment_id"])
        tick("fragments", len(passages))
        return list(dict.fromkeys(fragment_ids))

    # ------------------------------------------------------------ claim extraction
    def _extract_claims(
        self,
        task_id: str,
        fragment_ids: list[str],
        report: IngestReport,
        timer: _Timer,
        passages: int = 4,
        max_new: int = 6,
    ) -> list[str]:
        """Ask the LLM for claims in the passages closest to the task's hypothesis; keep new, distinct ones."""
        from lyra.ml.claims import ClaimExtractor

        task = self.tasks.get_task(task_id)
        existing = [c["text"] for c in self.store.run("tasks/task_claims", {"task_id": task_id})]
        rows = self.store.run("evidence/fragments_by_ids", {"ids": fragment_ids})
        vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        topic_vector = timer.run(lambda: self.embedder.embed([task["hypothesis"]]))[0]
        best = np.argsort(-(vectors @ topic_vector))[:passages]
        extractor = ClaimExtractor(self.llm, self.prompts_dir, rules=self.claim_rules, embed=self.embedder.embed)
        found: list[str] = []
        sources: dict[str, list[str]] = {}  # claim text -> the fragments it was extracted from (decision record 0008)
        for i in best:
            try:
                texts = timer.run(partial(extractor.extract, rows[int(i)]["text"], task["hypothesis"]))
                found.extend(texts)
                for text in texts:
                    sources.setdefault(text, []).append(rows[int(i)]["id"])
            except LyraError as exc:
                report.skipped.append(SkippedItem(item=f"claim extraction from {rows[int(i)]['id']}", reason=str(exc)))
        if not found:
            return []
        known = list(existing)
        known_vectors = timer.run(lambda: self.embedder.embed(known)) if known else np.zeros((0, len(topic_vector)))
        found_vectors = timer.run(lambda: self.embedder.embed(found))
        new: list[str] = []
        for text, vector in zip(found, found_vectors, strict=True):
            if len(known_vectors) and float(np.max(known_vectors @ vector)) >= 0.9:
                continue
            new.append(text)
            known_vectors = np.vstack([known_vectors, vector[None, :]]) if len(known_vectors) else vector[None, :]
            if len(new) == max_new:
                break
        if new:
            self.tasks.add_claims(task_id, new, [sources[t] for t in new], rules_version=extractor.rules_version)
        return new

    def _category_weight(self, category: str | None) -> float:
        """Ranking weight of a fragment's domain category (decision record 0007: ranking is the one place a category
        counts); a category this policy does not know (a graph written elsewhere) weighs as unverified."""
        try:
            return self.domains.weight(category or "unverified")
        except LyraError:
            return self.domains.weight("unverified")

    # ----------------------------------------------------------------- judging
    def _judged(
        self, pairs: list[tuple[ClaimToJudge, FragmentToJudge]], report: IngestReport, timer: _Timer
    ) -> Iterator[tuple[tuple[ClaimToJudge, FragmentToJudge], NLIResult]]:
        """Judge the (claim, fragment) pairs together (the trained judge reads a batch's sentences together); if
        that fails they are judged again pair by pair, so one bad pair is skipped with its reason, not the rest."""
        texts = [(fragment.text, claim.text) for claim, fragment in pairs]
        try:
            results: list[NLIResult] | None = timer.run(partial(self.judge.judge, texts))
        except LyraError:
            results = None
        if results is not None:
            yield from zip(pairs, results, strict=True)
            return
        for pair, text in zip(pairs, texts, strict=True):
            try:
                yield pair, timer.run(partial(self.judge.judge, [text]))[0]
            except LyraError as exc:
                claim, fragment = pair
                item = f"pair {fragment.fragment_id} / {claim.claim_id}"
                report.skipped.append(SkippedItem(item=item, reason=str(exc)))

    def _ranked_pairs(
        self,
        claims: list[dict[str, Any]],
        claim_vectors: np.ndarray,
        rows: list[dict[str, Any]],
        rules: LearnedRules | None,
        top_k: int,
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Per claim, its ``top_k`` fragments of ``rows`` (best first) by the candidate ranker; a fragment's weight
        is its domain category's, times the factor an ``evidence_ranking`` CONSTRAINT gives its domain."""
        texts = [r["text"] for r in rows]
        vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        penalties = domain_penalties(rules) if rules else {}
        weights = [
            self._category_weight(r.get("domain_category")) * penalties.get(str(r.get("domain") or "").lower(), 1.0)
            for r in rows
        ]
        pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for claim, claim_vector in zip(claims, claim_vectors, strict=True):
            ranked = self.ranker.rank(claim["text"], claim_vector, texts, vectors, top_k, weights=weights)
            pairs.extend((claim, rows[c.index]) for c in ranked)
        return pairs

    def rank_task(self, task_id: str, rule_sets: Sequence[LearnedRules]) -> list[dict[str, list[str]]]:
        """For each set of ``evidence_ranking`` rules, per claim of the task, the fragments its claims have stance
        edges from in the order ingest ranks them under those rules (to measure a ranking rule before it is
        approved; the task is read and its claims embedded once)."""
        claims = self.store.run("tasks/task_claims", {"task_id": task_id})
        fragment_ids = self.store.run("evidence/task_fragment_ids", {"task_id": task_id})[0]["ids"]
        if not claims or not fragment_ids:
            return [{} for _ in rule_sets]
        rows = self.store.run("evidence/fragments_by_ids", {"ids": fragment_ids})
        claim_vectors = self.embedder.embed([c["text"] for c in claims])
        orders: list[dict[str, list[str]]] = []
        for rules in rule_sets:
            order: dict[str, list[str]] = {}
            for claim, fragment in self._ranked_pairs(claims, claim_vectors, rows, rules, len(rows)):
                order.setdefault(str(claim["claim_id"]), []).append(str(fragment["id"]))
            orders.append(order)
        return orders

    def pending_pairs(self, task_id: str) -> list[tuple[str, str, float]]:
        """The task's ranked candidate pairs no judge has drawn an edge for (those judge_remaining would judge), best
        first: (claim id, fragment id, priority). For the ``unjudged`` queue of next_judgments."""
        validate_task_id(task_id)
        report = IngestReport(task_id=task_id, cause_id="next_judgments", claims=[])
        claims, fragments, plan = self._plan(task_id, report, _Timer())
        return [
            (claims[p.claim_index].claim_id, fragments[p.fragment_index].fragment_id, p.priority) for p in plan.pending
        ]

    def judge_remaining(
        self, task_id: str, *, max_pairs: int | None = None, progress: Progress | None = None
    ) -> IngestReport:
        """Judge the task's pending pairs (candidates above the relevance floor without a stance edge), best first,
        at most ``max_pairs`` of them and within what is left of the task's pair budget; nothing is read. Used after
        claims were added to a task, after the budget was raised, or after a job was stopped while judging."""
        validate_task_id(task_id)
        self.tasks.tasks.get(task_id)  # NotFoundError with a hint when the task is missing
        start = time.perf_counter()
        timer = _Timer()
        report = IngestReport(task_id=task_id, cause_id=new_id("ing"), claims=[])
        self._judge_claims(task_id, report, timer, progress or (lambda _name, _n: None), max_pairs)
        report.seconds_total = time.perf_counter() - start
        report.seconds_in_models = timer.model_seconds
        return report

    def _task_fragments(self, task_id: str, rules: LearnedRules | None) -> list[FragmentToJudge]:
        """The task's fragments (of the pages it read) with their embedding and the best weight among those pages."""
        penalties = domain_penalties(rules) if rules else {}
        out: list[FragmentToJudge] = []
        for row in self.store.run("coverage/task_candidate_fragments", {"task_id": task_id}):
            if row["embedding"] is None:
                log.warning("fragment %s has no embedding: it cannot be ranked and is not judged", row["id"])
                continue
            best: tuple[float, str | None] = (-1.0, None)
            for domain, category in zip(row["domains"], row["categories"], strict=True):
                weight = self._category_weight(category) * penalties.get(str(domain or "").lower(), 1.0)
                best = max(best, (weight, category), key=lambda x: x[0])
            out.append(
                FragmentToJudge(
                    row["id"], row["text"], np.asarray(row["embedding"], dtype=np.float32), best[0], best[1]
                )
            )
        return out

    def _plan(
        self, task_id: str, report: IngestReport, timer: _Timer
    ) -> tuple[list[ClaimToJudge], list[FragmentToJudge], PairPlan]:
        claims = [
            ClaimToJudge(r["claim_id"], r["text"], frozenset(r["source_ids"]), {f: rel for f, rel in r["judged"]})
            for r in self.store.run("coverage/task_claims_to_judge", {"task_id": task_id})
        ]
        report.claims = [c.claim_id for c in claims]
        rules = self.ranking_rules() if self.ranking_rules else None
        report.ranking_rules_version = rules.version if rules else 0
        fragments = self._task_fragments(task_id, rules) if claims else []
        dimension = self.embedder.dimension
        vectors = np.vstack([f.vector for f in fragments]) if fragments else np.zeros((0, dimension), dtype=np.float32)
        claim_vectors = (
            timer.run(lambda: self.embedder.embed([c.text for c in claims]))
            if claims and fragments
            else np.zeros((len(claims), dimension), dtype=np.float32)
        )
        scores = relevance(
            [c.text for c in claims],
            claim_vectors,
            [f.text for f in fragments],
            vectors,
            w_emb=self.settings.relevance_weight_embedding,
            w_terms=self.settings.relevance_weight_terms,
        )

        def source_vectors(ids: Sequence[str]) -> np.ndarray:
            rows = self.store.run("evidence/fragments_by_ids", {"ids": list(ids)})
            found = [r["embedding"] for r in rows if r["embedding"] is not None]
            return np.asarray(found, dtype=np.float32).reshape(len(found), dimension)

        own = own_source_mask(claims, fragments, vectors, source_vectors, self.settings.near_duplicate_threshold)
        return claims, fragments, plan_pairs(claims, fragments, scores, own, self.settings.relevance_floor)

    def _judge_claims(
        self, task_id: str, report: IngestReport, timer: _Timer, tick: Progress, max_pairs: int | None = None
    ) -> None:
        """Judge the task's pending candidate pairs, best first, within the task's pair budget; each batch's edges
        are written as soon as it is judged, so a stopped job keeps what it judged."""
        claims, fragments, plan = self._plan(task_id, report, timer)
        if not claims:
            return
        report.pairs_ranked = plan.candidates
        report.pairs_below_floor = plan.below_floor
        report.pairs_own_source = plan.own_source
        report.edges_existing = len(plan.existing)
        counts = Counter(plan.existing.values())
        edge_count = int(self.store.run("coverage/task_edge_count", {"task_id": task_id})[0]["edges"])
        left = max(0, self.settings.task_pair_budget - edge_count)
        report.pair_budget_left = left
        todo = plan.pending[: left if max_pairs is None else min(left, max_pairs)]
        report.pairs_pending = len(plan.pending) - len(todo)
        if len(plan.pending) > left and max_pairs is None:
            log.warning(
                "task %s: %d candidate pair(s) above the relevance floor wait: the task's pair budget "
                "(LYRA_TASK_PAIR_BUDGET=%d) has %d left; raise it and run judge_remaining",
                task_id,
                len(plan.pending) - left,
                self.settings.task_pair_budget,
                left,
            )
        judged_now: Counter[str] = Counter()
        try:
            counts.update(self._judge_pairs(claims, fragments, todo, report, timer, tick, judged_now))
        finally:
            report.pairs_pending += len(todo) - report.pairs_judged
            report.pair_budget_left = max(0, left - sum(judged_now.values()))
            coverage = [{**c.row(), "judged": c.judged + judged_now[c.claim_id]} for c in plan.coverage]
            self.store.run("coverage/set_claim_coverage", {"rows": coverage})
            if counts:
                report.edges = dict(counts)

    def _judge_pairs(
        self,
        claims: list[ClaimToJudge],
        fragments: list[FragmentToJudge],
        todo: list[PendingPair],
        report: IngestReport,
        timer: _Timer,
        tick: Progress,
        judged_now: Counter[str],
    ) -> Counter[str]:
        cache = self.judge.cache if isinstance(self.judge, CachedJudge) else None
        hits_before = cache.hits if cache else 0
        calibrator, calibrator_version = self.calibrator() if self.calibrator else (None, None)
        stamp = _Verdicts(
            calibrator, calibrator_version, self.judge.model_id, int(getattr(self.judge, "rules_version", 0))
        )
        counts: Counter[str] = Counter()
        # a job's id: a run of the job again after its worker died takes back the leases of the first attempt
        holder = current_job.get() or new_id("lease")
        for first in range(0, len(todo), JUDGE_BATCH):
            batch = todo[first : first + JUDGE_BATCH]
            pairs = [(claims[p.claim_index], fragments[p.fragment_index]) for p in batch]
            # another worker ranking the same task may be judging some of these right now: leave those to it
            keys = [f"{f.fragment_id}|{c.claim_id}" for c, f in pairs]
            rows = [
                {"key": k, "fragment_id": f.fragment_id, "claim_id": c.claim_id}
                for k, (c, f) in zip(keys, pairs, strict=True)
            ]
            held = {
                r["key"]
                for r in self.store.run(
                    "coverage/lease_pairs",
                    {"task_id": report.task_id, "pairs": rows, "holder": holder, "seconds": PAIR_LEASE_SECONDS},
                )
            }
            pairs = [pair for pair, key in zip(pairs, keys, strict=True) if key in held]
            try:
                self._judge_batch(pairs, report, timer, stamp, tick, counts, judged_now)
            finally:
                self.store.run("coverage/release_pairs", {"keys": sorted(held), "holder": holder})
            report.pairs_from_cache = (cache.hits - hits_before) if cache else 0
            tick("pairs", len(batch))
        # leases an earlier attempt of this job left on pairs that have their edges by now
        self.store.run("coverage/release_holder", {"holder": holder})
        return counts

    def _judge_batch(
        self,
        pairs: list[tuple[ClaimToJudge, FragmentToJudge]],
        report: IngestReport,
        timer: _Timer,
        stamp: _Verdicts,
        tick: Progress,
        counts: Counter[str],
        judged_now: Counter[str],
    ) -> None:
        """Judge one leased batch and write its edges (with the judge's stamp) in one go."""
        if not pairs:
            return
        calibrator, calibrator_version = stamp.calibrator, stamp.calibrator_version
        edges: list[dict[str, Any]] = []
        for (claim, fragment), result in self._judged(pairs, report, timer):
            report.pairs_judged += 1
            confidence = result.confidence
            if not 0.0 <= confidence <= 1.0:  # model output validated before it becomes evidence
                report.skipped.append(
                    SkippedItem(
                        item=f"pair {fragment.fragment_id} / {claim.claim_id}", reason=f"judge said {confidence}"
                    )
                )
                continue
            calibrated = calibrator.apply(confidence) if calibrator is not None else None
            edges.append(
                {
                    "fragment_id": fragment.fragment_id,
                    "claim_id": claim.claim_id,
                    "relation": RELATION_FOR_LABEL[result.label],
                    "nli_label": result.label,
                    "nli_confidence": round(calibrated if calibrated is not None else confidence, 6),
                    "nli_confidence_raw": round(confidence, 6) if calibrated is not None else None,
                    "nli_calibrator_version": calibrator_version if calibrated is not None else None,
                    "nli_evidence_sentence": _bounded_sentence(result.sentence),
                    "source_domain_category": fragment.category,
                    "cause_id": report.cause_id,
                    "judge": offline_judge_name(stamp.judge_id),
                    "instructions_version": f"rules:{stamp.rules_version}",
                }
            )
        if edges:
            written = self.evidence.create_stance_edges(edges)
            # which judge and learned rule set made the verdicts (decision record 0013): any edge traces to the rules in
            # force
            stamped = [{"fragment_id": e["fragment_id"], "claim_id": e["claim_id"]} for e in edges]
            self.store.run(
                "learning/stamp_edges",
                {"pairs": stamped, "judge_id": stamp.judge_id, "rules_version": stamp.rules_version},
            )
            report.edges_existing += len(edges) - written.created
            counts.update(e["relation"] for e in edges)
            judged_now.update(e["claim_id"] for e in edges)
            tick("edges", written.created)
