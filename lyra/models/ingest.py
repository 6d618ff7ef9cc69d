"""Requests and the report of a synchronous ingest (the CLI's `lyra ingest` / `lyra research` / `lyra demo`;
background jobs keep a summary of the same report)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lyra.models.api import ClaimText, TaskId, Text


class IngestRequest(BaseModel):
    """Read local files or folders into a task and judge its claims against the new fragments.

    The task is created when missing: its hypothesis is ``hypothesis``, else the first claim."""

    model_config = ConfigDict(extra="forbid")

    task_id: TaskId
    paths: list[Path] = Field(min_length=1, description="files or folders (HTML, Markdown, text, JSONL abstracts)")
    claims: list[ClaimText] = Field(default_factory=list, max_length=100, description="statements, never questions")
    hypothesis: Text | None = Field(
        default=None, description="names the task; its first claim too unless it is a question (then claims are needed)"
    )
    extract_claims: bool = False


class ResearchRequest(BaseModel):
    """A question researched over a local corpus (and, from the CLI, the web and the academic APIs); the task id is
    derived from the question unless given. A question is never judged: its claims are ``claims`` or, without them,
    extracted from it by the LLM; a statement given as ``question`` is the first claim itself."""

    model_config = ConfigDict(extra="forbid")

    question: Text
    claims: list[ClaimText] = Field(
        default_factory=list, max_length=100, description="the statements to judge (never questions)"
    )
    corpus: list[Path] = Field(default_factory=list, description="local files or folders to read (may be empty)")
    task_id: TaskId | None = None
    extract_claims: bool = False


class ResearchStart(BaseModel):
    """How ``lyra research`` read its question: the task, and the claims it judges (a question is never one)."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    created: bool = Field(description="the task was created now (else an existing one is continued)")
    question: bool = Field(description="the text reads as a question: it names the task and is never judged")
    claims_added: list[str] = Field(description="the claims added to the task now")
    claims_from: Literal["question", "given", "llm", "existing"] = Field(
        description="question: the text is a statement, the task's first claim; given: --claim / claims; llm: "
        "extracted from the question by the LLM; existing: the task's claims already there"
    )
    claims: list[str] = Field(description="every claim of the task after this step")


class SkippedItem(BaseModel):
    item: str
    reason: str


class IdentifierMention(BaseModel):
    """A paper identifier (``doi:…``, ``pmid:…``, ``arxiv:…``) a read document carries: its own (``own``: the
    DOI in its metadata or a JSONL record's ``doi``) or one its text names (a citation). Research jobs send them
    to the academic resolver (identifier enrichment, decision record 0011)."""

    page_id: str | None = Field(description="the page that names it; None for a search result")
    identifier: str
    own: bool


class PassagesMoved(BaseModel):
    """What a read did to the passages of pages read before (decision record 0016): passages a page no longer
    carries (superseded on it) or carries again (restored), and the claims' stance edges that stopped counting or
    count again because of them."""

    superseded: int = 0
    restored: int = 0
    edges_superseded: int = 0
    edges_restored: int = 0

    @property
    def any(self) -> bool:
        """Whether a passage left a page or came back to it."""
        return bool(self.superseded or self.restored)

    def add(self, other: PassagesMoved) -> None:
        self.superseded += other.superseded
        self.restored += other.restored
        self.edges_superseded += other.edges_superseded
        self.edges_restored += other.edges_restored


class IngestReport(BaseModel):
    task_id: str
    cause_id: str
    claims: list[str]
    documents: int = 0
    pages_new: int = 0
    pages_existing: int = 0
    fragments_new: int = 0
    fragments_existing: int = 0
    fragments_near_duplicate: int = 0
    # the task's candidate pairs after this run's ranking (all its claims against all fragments of the pages it
    # read): at or above the relevance floor (pairs_ranked), below it, left out as a claim's own source, and above
    # the floor but not judged (the task's pair budget ran out, or the run was stopped): judge_remaining judges those
    pairs_ranked: int = 0
    pairs_below_floor: int = 0
    pairs_own_source: int = 0
    pairs_pending: int = 0
    pair_budget_left: int | None = None  # judged pairs the task may still have after this run (None: not judged)
    ranking_rules_version: int = Field(
        default=0, description="the evidence-ranking learned rule-set version the pairs were ranked under"
    )
    pairs_judged: int = 0  # judged in this run (a pair with a stance edge, from any worker, is never judged again)
    pairs_from_cache: int = 0  # of pairs_judged, answered from the NLI cache
    edges: dict[str, int] = Field(default_factory=dict)  # relations of the candidates' edges, old and new
    edges_existing: int = 0  # candidates that already had their stance edge
    skipped: list[SkippedItem] = Field(default_factory=list)
    # what the task is told besides the skipped items: a domain it stops using (a page carried a dangerous pattern)
    notices: list[str] = Field(default_factory=list)
    extracted_claims: list[str] = Field(default_factory=list)
    passages: PassagesMoved = Field(
        default_factory=PassagesMoved,
        description="pages read before and read again by this run: their passages that left them stop counting, "
        "those back on them count again (decision record 0016)",
    )
    seconds_total: float = 0.0
    seconds_in_models: float = 0.0
    # for jobs, not serialised: the identifiers the read documents carry, and each read document's page id by URL
    identifiers: list[IdentifierMention] = Field(default_factory=list, exclude=True)
    page_ids: dict[str, str] = Field(default_factory=dict, exclude=True)
    # page id -> the fragments this read found on it (a page read again: the rest left it, decision record 0016)
    page_fragments: dict[str, list[str]] = Field(default_factory=dict, exclude=True)
    new_page_ids: set[str] = Field(default_factory=set, exclude=True)  # pages this read created (nothing to compare)
