"""Pydantic models for what goes into the evidence graph (validated before any write)."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from lyra.core.ids import TASK_ID_PATTERN
from lyra.core.text import question_cue

StanceRelation = Literal["SUPPORTS", "REFUTES", "NEUTRAL"]
NLILabel = Literal["entailment", "contradiction", "neutral"]
CitationSource = Literal["semantic_scholar", "openalex", "extraction"]
DomainCategory = Literal["primary", "government", "academic", "trusted", "low", "unverified", "blocked"]
TaskStatus = Literal["created", "running", "paused", "completed", "failed", "cancelled"]
PageType = Literal["web", "academic", "academic_abstract", "local", "pdf"]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

RELATION_FOR_LABEL: dict[str, StanceRelation] = {
    "entailment": "SUPPORTS",
    "contradiction": "REFUTES",
    "neutral": "NEUTRAL",
}


# Judges: every stance edge names the judge that drew it and carries its rank. A lower rank never
# overwrites a higher one; the same rank replaces. ``offline:<stance judge model id>`` is Lyra's own judge,
# ``assistant:<client>/<model>`` an MCP client's (or a REST/CLI caller's) model, ``human:<reviewer>`` a person (the
# feedback edge correction only).
JudgeKind = Literal["offline", "assistant", "human"]
JUDGE_RANK: dict[str, int] = {"offline": 0, "assistant": 1, "human": 2}
IMPORTED_JUDGE = "offline:import"  # an edge written by an import that does not name its judge
UNKNOWN_OFFLINE_JUDGE = "offline:unknown"  # an offline edge from before judges were recorded
JUDGE_PATTERN = r"^(offline|assistant|human):[^\x00-\x1f\x7f]{1,200}$"


def judge_rank(judge: str) -> int:
    """The rank of a judge name (``offline:…`` 0, ``assistant:…`` 1, ``human:…`` 2)."""
    kind = judge.split(":", 1)[0]
    if kind not in JUDGE_RANK or ":" not in judge:
        raise ValueError(f"a judge is offline:<id>, assistant:<client>/<model> or human:<reviewer>, not {judge!r}")
    return JUDGE_RANK[kind]


def offline_judge_name(model_id: str) -> str:
    """``offline:<the stance judge's model id>`` (its artifact hash and combiner weights; see
    lyra.ml.stance_judge.TrainedStanceJudge.model_id), control characters dropped, at most 200 characters."""
    clean = "".join(ch for ch in model_id if ch.isprintable()) or "unknown"
    return f"offline:{clean[:200]}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskCreate(_Strict):
    id: str = Field(pattern=TASK_ID_PATTERN.pattern)
    hypothesis: NonEmpty = Field(max_length=4000)
    status: TaskStatus = "created"


class PageIn(_Strict):
    url: NonEmpty
    doi: str | None = None
    title: str | None = None
    domain: str | None = None
    domain_category: DomainCategory = "unverified"
    year: int | None = Field(default=None, ge=1000, le=2200)
    venue: str | None = None
    page_type: PageType = "web"

    @field_validator("doi")
    @classmethod
    def _doi(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip().lower().removeprefix("https://doi.org/").removeprefix("doi:")
        if not value.startswith("10.") or "/" not in value:
            raise ValueError("a DOI looks like 10.<registrant>/<suffix>")
        return value

    @model_validator(mode="after")
    def _domain_from_url(self) -> PageIn:
        if self.domain:
            return self
        parsed = urlparse(self.url)
        if parsed.scheme in ("http", "https") and parsed.hostname:
            host = parsed.hostname.lower().removeprefix("www.")
        elif parsed.scheme == "file" or self.page_type == "local":
            host = "local"
        else:
            raise ValueError("url must be http(s):// or file://, or give `domain` explicitly")
        object.__setattr__(self, "domain", host)
        return self


class FragmentIn(_Strict):
    page_id: NonEmpty
    text: NonEmpty = Field(max_length=100_000)
    extraction_method: str = "text"
    position: int = Field(default=0, ge=0)
    embedding: list[float] | None = Field(default=None, max_length=4096)
    scanned_with: str | None = Field(
        default=None,
        max_length=64,
        description="the dangerous-pattern scanner's version (lyra.sources.untrusted.scanner_version) that passed "
        "this text's whole source just before it was written; None when it was not scanned",
    )


class ClaimIn(_Strict):
    """A claim to create. ``source_fragment_ids``: the fragments it was extracted from (by the LLM); empty for a
    claim a person wrote. They make the claim one of its sources' domains' claims (decision record 0008)."""

    text: NonEmpty = Field(max_length=4000)
    source_fragment_ids: list[NonEmpty] = Field(default_factory=list, max_length=100)
    extraction_rules_version: int | None = Field(
        default=None, ge=0, description="the claim-extraction learned rule-set version it was extracted under"
    )

    @field_validator("source_fragment_ids")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("text")
    @classmethod
    def _a_statement(cls, value: str) -> str:
        """The last guard of decision record 0010: whatever door a claim came through, a question is never stored as one
        (the doors refuse it earlier, naming their own field)."""
        cue = question_cue(value)
        if cue is not None:
            raise ValueError(f"is a question, not a claim ({cue})")
        return value


class StanceEdgeIn(_Strict):
    fragment_id: NonEmpty
    claim_id: NonEmpty
    relation: StanceRelation
    nli_confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    nli_label: NLILabel | None = None
    nli_confidence_raw: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)  # before calibration
    nli_calibrator_version: int | None = Field(default=None, ge=1)
    source_domain_category: DomainCategory | None = None
    target_domain_category: DomainCategory | None = None
    cause_id: str | None = None
    # the premise sentence the judge found decisive (the trained judge reads sentences); shown with the passage
    nli_evidence_sentence: str | None = Field(default=None, max_length=1000)
    # the offline judge that drew it (``offline:<model id>``; None: ``offline:import`` / ``offline:unknown``) and the
    # version of the instructions it judged under (for the offline judge: its learned rule-set version)
    judge: str | None = Field(default=None, pattern=r"^offline:[^\x00-\x1f\x7f]{1,200}$")
    instructions_version: str | None = Field(default=None, max_length=100)

    @model_validator(mode="after")
    def _label_matches_relation(self) -> StanceEdgeIn:
        if self.nli_label is None:
            label = {v: k for k, v in RELATION_FOR_LABEL.items()}[self.relation]
            object.__setattr__(self, "nli_label", label)
        elif RELATION_FOR_LABEL[self.nli_label] != self.relation:
            raise ValueError(f"nli_label {self.nli_label!r} does not match relation {self.relation!r}")
        return self


class CitationIn(_Strict):
    citing_page_id: NonEmpty
    cited_page_id: NonEmpty
    citation_source: CitationSource


class WriteResult(BaseModel):
    """Ids in input order, and how many were new (re-discovered ones keep their existing id), and which."""

    ids: list[str]
    created: int
    created_ids: list[str] = Field(default_factory=list)
