"""The report page's "What changed" section (docs/concepts/living-evidence.md): get_changes as the page shows it.

Per claim that moved: its confidence before and now, the thresholds it crossed (those claims first, as get_changes
orders them), and each cause in words, newest first: new evidence, a correction, an assistant's judgment, a judge
upgrade, a retraction or a rule change; under it the claim's whole timeline (get_claim_timeline), collapsed. Only
numbers and words are computed here; the template (report_changes.html.j2) places them, and Jinja2's autoescaping
keeps source text (page titles, claim text, rationales) from ever becoming markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lyra.models.timeline import Cause, Changes, ClaimMove, ClaimTimeline, TimelineEvent

CAUSE_LABELS = {
    "new_evidence": "new evidence",
    "correction": "a correction",
    "assistant_judgment": "an assistant's judgment",
    "judge_change": "a judge upgrade",
    "retraction": "a retraction",
    "page_changed": "a changed page",
    "rule_change": "a rule change",
}
TIMELINE_EVENTS = 50  # events per claim shown on the page (get_claim_timeline has them all)
CLAIMS_SHOWN = 100  # moved claims listed on the page at most


@dataclass(frozen=True)
class CauseRow:
    kind: str
    label: str
    at: str
    detail: str


@dataclass(frozen=True)
class EventRow:
    at: str
    kind: str
    detail: str


@dataclass(frozen=True)
class ClaimChange:
    claim_id: str
    text: str
    new_claim: bool
    before: str  # confidence before ("prior" for a claim without a snapshot)
    now: str
    change: str  # signed, e.g. "+0.214"
    uncertainty_before: str
    uncertainty_now: str
    crossed: tuple[str, ...]
    causes: tuple[CauseRow, ...]
    events: tuple[EventRow, ...]
    events_total: int


@dataclass(frozen=True)
class ChangesView:
    since: str | None
    confidence_threshold: str
    uncertainty_threshold: str
    runs: int
    run_kinds: str  # e.g. "2 research, 1 rule"
    claims: tuple[ClaimChange, ...]
    crossed_count: int
    unchanged: int
    more: int  # moved claims not shown


def _num(value: float) -> str:
    return f"{value:.3f}"


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def _page_text(cause: Cause) -> str:
    if cause.page is None:
        return ""
    title = cause.page.title.text if cause.page.title is not None else None
    where = title or cause.page.doi or cause.page.url or cause.page.source_id
    return f" from {where}"


def cause_text(cause: Cause) -> str:
    """One cause in words (source text included as text, escaped by the template)."""
    if cause.kind == "new_evidence":
        weight = f", weight {_num(cause.weight)}" if cause.weight is not None else ""
        judge = f" by {cause.judge}" if cause.judge else ""
        return f"{cause.relation or 'stance'} edge {cause.edge_id}{judge}{weight}{_page_text(cause)}"
    if cause.kind in ("correction", "assistant_judgment", "judge_change"):
        change = f"{cause.previous_relation or '?'} -> {cause.relation or '?'}"
        who = f" by {cause.judge}" if cause.judge else ""
        was = f" (was {cause.previous_judge})" if cause.previous_judge else ""
        reason = f": {cause.rationale.text}" if cause.rationale is not None and cause.rationale.text else ""
        return f"edge {cause.edge_id} {change}{who}{was}{reason}"
    if cause.kind == "retraction":
        notice = f", notice {cause.notice_doi}" if cause.notice_doi else ""
        return f"{len(cause.edge_ids)} edge(s) stopped counting{_page_text(cause)}{notice}"
    if cause.kind == "page_changed":
        back = f", {len(cause.restored_edge_ids)} count again" if cause.restored_edge_ids else ""
        return f"{len(cause.edge_ids)} edge(s) stopped counting{back}{_page_text(cause)}"
    return f"{cause.rule or 'a learned-rule deployment'} (run {cause.run_id})"


def event_text(event: TimelineEvent) -> str:
    d: Mapping[str, Any] = event.detail
    if event.kind == "snapshot":
        return (
            f"after a {d.get('run_kind')} run: confidence {_num(float(d.get('confidence', 0.0)))}, "
            f"uncertainty {_num(float(d.get('uncertainty', 0.0)))} ({d.get('supports', 0)} supporting, "
            f"{d.get('refutes', 0)} refuting, {d.get('neutrals', 0)} neutral)"
        )
    if event.kind == "edge_added":
        return f"{d.get('relation')} edge {d.get('edge_id')} by {d.get('judge') or 'the offline judge'}"
    if event.kind == "judgment":
        change = f"{d.get('previous_relation') or '?'} -> {d.get('relation') or '?'}"
        return f"edge {d.get('edge_id')} {change} by {d.get('judge')}"
    if event.kind == "passage_superseded":
        return f"edge {d.get('edge_id')} stopped counting: its passage left {d.get('page') or 'its page'}"
    if event.kind == "passage_restored":
        return f"edge {d.get('edge_id')} counts again: its passage is back on {d.get('page') or 'its page'}"
    return f"page {d.get('doi') or d.get('url') or d.get('page_id')} retracted"


def claim_change(move: ClaimMove, timeline: ClaimTimeline | None) -> ClaimChange:
    before = move.before
    events = timeline.events[:TIMELINE_EVENTS] if timeline is not None else []
    return ClaimChange(
        claim_id=move.claim_id,
        text=move.text,
        new_claim=move.new_claim,
        before=_num(before.confidence) if before is not None else "prior 0.500",
        now=_num(move.now.confidence),
        change=_signed(move.confidence_change),
        uncertainty_before=_num(before.uncertainty) if before is not None else "-",
        uncertainty_now=_num(move.now.uncertainty),
        crossed=tuple(move.crossed),
        causes=tuple(
            CauseRow(kind=c.kind, label=CAUSE_LABELS.get(c.kind, c.kind), at=c.at, detail=cause_text(c))
            for c in move.causes
        ),
        events=tuple(EventRow(at=e.at or "", kind=e.kind, detail=event_text(e)) for e in events),
        events_total=timeline.total if timeline is not None else 0,
    )


def changes_view(
    changes: Changes,
    timelines: Mapping[str, ClaimTimeline],
    confidence_threshold: float,
    uncertainty_threshold: float,
) -> ChangesView:
    """The section's view: the claims in get_changes' order (threshold crossings first), each with its timeline."""
    kinds: dict[str, int] = {}
    for run in changes.runs:
        kinds[run.kind] = kinds.get(run.kind, 0) + 1
    shown = changes.claims[:CLAIMS_SHOWN]
    return ChangesView(
        since=changes.since,
        confidence_threshold=f"{confidence_threshold:g}",
        uncertainty_threshold=f"{uncertainty_threshold:g}",
        runs=len(changes.runs),
        run_kinds=", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())),
        claims=tuple(claim_change(move, timelines.get(move.claim_id)) for move in shown),
        crossed_count=sum(1 for move in changes.claims if move.crossed),
        unchanged=changes.unchanged,
        more=len(changes.claims) - len(shown),
    )
