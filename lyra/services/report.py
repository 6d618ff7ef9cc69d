"""The evidence report page: one self-contained HTML document (inline CSS and SVG, no scripts, no external URLs).

:func:`render_report` turns a task's :class:`~lyra.models.api.Materials` and the rows of the ``evidence_timeline``
view into HTML. All geometry (confidence bars, credible-interval whiskers, timeline bars) is computed here, so the
template only places numbers; Jinja2 autoescaping keeps text from sources from ever becoming markup.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from lyra.models.api import Evidence, MaterialClaim, Materials
from lyra.services.report_changes import ChangesView

TEMPLATE = "report.html.j2"

# Only these schemes become links; anything else (javascript:, data:, relative paths, ...) is shown as plain text.
# Matched at position 0 of the raw string, so leading whitespace or control characters never count as a scheme.
_LINK_SCHEME = re.compile(r"(?:https?|file):", re.IGNORECASE)

# ---- confidence bar geometry (SVG user units): the 0-1 scale runs from BAR_X0 to BAR_X0 + BAR_SCALE.
BAR_X0 = 12.0
BAR_SCALE = 500.0
BAR_WIDTH = 524.0
BAR_HEIGHT = 46.0
BAR_TRACK_Y = 8.0
BAR_TRACK_H = 18.0
BAR_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)

# ---- timeline chart geometry (SVG user units).
TL_LEFT = 44.0  # room for the count labels of the y axis
TL_RIGHT = 12.0
TL_TOP = 14.0
TL_HALF = 56.0  # height of the supports half (above the axis) and of the refutes half (below it)
TL_BOTTOM = 36.0  # room for the counts under the refutes bars and for the year labels
TL_YEAR_LABEL_DY = 28.0  # year labels sit this far below the bottom of the refutes half
TL_MAX_PLOT = 640.0  # the year slots share at most this width
TL_MIN_SLOT = 6.0
TL_MAX_SLOT = 36.0
TL_UNKNOWN_W = 60.0  # the separate "unknown year" group
TL_GAP = 14.0  # between the last year and the unknown group
TL_LABEL_W = 34.0  # a year label needs about this much room
TL_MAX_SPAN = 80  # wider year ranges show only the years that have evidence


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class ConfidenceBar:
    """The confidence bar of one claim: fill to ``confidence``, whisker over the 95% credible interval."""

    fill_width: float
    mean_x: float
    low_x: float
    high_x: float
    low: str
    high: str
    mid_x: float
    ticks: tuple[Tick, ...]
    x0: float = BAR_X0
    scale: float = BAR_SCALE
    width: float = BAR_WIDTH
    height: float = BAR_HEIGHT
    track_y: float = BAR_TRACK_Y
    track_h: float = BAR_TRACK_H


@dataclass(frozen=True)
class EvidenceRow:
    relation: str
    title: str
    href: str | None  # set only for http(s) and file: URLs
    url_text: str | None  # the URL shown as plain text (under a title, or when it may not be a link)
    year: str
    category: str
    nli_confidence: str
    doi: str | None
    venue: str | None
    human_reviewed: bool
    edge_id: str
    passage: str | None = None  # the judged passage (source text: escaped by the template, never markup)
    passage_truncated: bool = False
    decisive_sentence: str | None = None
    weight: str = ""  # what the edge adds to alpha or beta (1 once a person reviewed it)
    other_pages: int = 0  # further pages this task read that carry the same passage
    withheld: str | None = None  # why source text of this item is not shown (the scanner flagged it)
    retraction: str | None = None  # a notice about the paper: retracted (counts for nothing), concern, correction


@dataclass(frozen=True)
class TimelineBar:
    kind: str  # "supports" | "refutes"
    year: str  # the year, or "unknown"
    count: int
    x: float
    y: float
    width: float
    height: float
    label_x: float  # where the count is printed (when there is room)
    label_y: float


@dataclass(frozen=True)
class TimelineChart:
    width: float
    height: float
    axis_y: float
    plot_left: float
    plot_right: float
    top_y: float
    bottom_y: float
    y_max: int
    bars: tuple[TimelineBar, ...]
    year_labels: tuple[Tick, ...]
    unknown_x: float  # centre of the unknown-year group
    separator_x: float
    show_counts: bool
    compressed: bool  # True when years without evidence are left out of the axis
    dated: bool  # False when every item of this claim has an unknown year
    year_label_y: float  # baseline of the year labels
    supports_total: int
    refutes_total: int
    unknown_supports: int
    unknown_refutes: int
    summary: str


@dataclass(frozen=True)
class ClaimView:
    index: int
    anchor: str
    claim_id: str
    text: str
    adopted: bool
    rejection_reason: str | None
    verification: str
    confidence: str
    uncertainty: str
    controversy: str
    alpha: str
    beta: str
    interval_low: str
    interval_high: str
    evidence_count: int
    supports_count: int
    refutes_count: int
    neutral_count: int
    bar: ConfidenceBar
    evidence: tuple[EvidenceRow, ...]
    evidence_truncated: bool
    evidence_years: str
    timeline: TimelineChart | None
    # the judges behind the claim's edges (judge, edges) and its confidence from the offline judge alone
    judges: tuple[tuple[str, int], ...]
    offline_only_confidence: str
    judges_effect: str  # confidence minus offline_only_confidence, signed


@dataclass(frozen=True)
class ReportView:
    task_id: str
    hypothesis: str
    status: str
    computed_at: str
    generated_at: str
    claims: tuple[ClaimView, ...]
    adopted_count: int
    not_adopted_count: int
    year_axis_compressed: bool


# ----------------------------------------------------------------------------- small helpers
def fmt(value: float) -> str:
    """A number with 3 decimals; non-finite values as an em dash."""
    return f"{value:.3f}" if math.isfinite(value) else "\u2014"


def _unit(value: float) -> float:
    """Clamp to [0, 1] for drawing (NaN draws as 0)."""
    if not math.isfinite(value):
        return 0.0 if math.isnan(value) else (1.0 if value > 0 else 0.0)
    return min(1.0, max(0.0, value))


def _r(value: float) -> float:
    return round(value, 2)


def bar_x(value: float) -> float:
    """The x coordinate of a 0-1 value on the confidence bar."""
    return _r(BAR_X0 + _unit(value) * BAR_SCALE)


def link_target(url: str | None) -> str | None:
    """The URL when it may be a link (http, https or file scheme), else None."""
    if url and _LINK_SCHEME.match(url):
        return url
    return None


def _year_range(oldest: int | None, newest: int | None) -> str:
    if oldest is None and newest is None:
        return "unknown"
    if oldest is None or newest is None or oldest == newest:
        return str(oldest if oldest is not None else newest)
    return f"{oldest}\u2013{newest}"


def _as_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# ----------------------------------------------------------------------------- confidence bar
def confidence_bar(claim: MaterialClaim) -> ConfidenceBar:
    low, high = claim.credible_interval_95
    return ConfidenceBar(
        fill_width=_r(_unit(claim.confidence) * BAR_SCALE),
        mean_x=bar_x(claim.confidence),
        low_x=bar_x(low),
        high_x=bar_x(high),
        low=fmt(low),
        high=fmt(high),
        mid_x=bar_x(0.5),
        ticks=tuple(Tick(x=bar_x(t), label=f"{t:g}") for t in BAR_TICKS),
    )


# ----------------------------------------------------------------------------- evidence list
def _withheld_note(item: Evidence) -> str | None:
    """Which of the item's source texts the scanner flagged (withheld, not shown), with its first finding."""
    parts = {"title": item.title, "venue": item.venue, "passage": item.passage, "sentence": item.decisive_sentence}
    flagged = {name: text for name, text in parts.items() if text is not None and text.withheld}
    if not flagged:
        return None
    first = next(iter(flagged.values())).findings
    why = f" ({first[0]})" if first else ""
    return f"{', '.join(flagged)} withheld: the dangerous-pattern scanner flagged it{why}"


def evidence_row(item: Evidence) -> EvidenceRow:
    href = link_target(item.url)
    if item.title is not None and item.title.text:
        title = item.title.text
        url_text = item.url
    elif item.url:
        title = item.url
        url_text = None
    else:
        title = "(no title or URL)"
        url_text = None
    return EvidenceRow(
        relation=item.relation,
        title=title,
        href=href,
        url_text=url_text,
        year=str(item.year) if item.year is not None else "year unknown",
        category=item.source_domain_category or "uncategorised",
        nli_confidence=fmt(item.nli_confidence),
        doi=item.doi or None,
        venue=item.venue.text if item.venue is not None and item.venue.text else None,
        human_reviewed=item.edge_human_corrected,
        edge_id=item.edge_id,
        passage=item.passage.text if item.passage else None,
        passage_truncated=bool(item.passage and item.passage.truncated),
        decisive_sentence=item.decisive_sentence.text if item.decisive_sentence else None,
        weight=fmt(item.weight),
        other_pages=max(0, item.pages_total - 1),
        withheld=_withheld_note(item),
        retraction=_retraction_note(item),
    )


def _retraction_note(item: Evidence) -> str | None:
    """What the retraction check found about the item's paper (refresh_task): shown, and only a retraction
    changes what the item counts for."""
    if item.retracted or item.retraction == "retracted":
        return "retracted paper: this item no longer counts toward confidence"
    if item.superseded:
        return "no longer on its page (the page changed): this item does not count toward confidence"
    if item.retraction == "has_concern":
        return "expression of concern about this paper (shown, not counted)"
    if item.retraction == "corrected":
        return "this paper was corrected (shown, not counted)"
    return None


# ----------------------------------------------------------------------------- timeline
Counts = dict[int | None, tuple[int, int]]  # year (None = unknown) -> (supports, refutes)


def timeline_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, Counts]:
    """Per claim id, the supports/refutes counts per year; rows of one claim and year are added up."""
    out: dict[str, Counts] = {}
    for row in rows:
        claim_id = row.get("claim_id")
        if claim_id is None:
            continue
        supports = max(0, _as_int(row.get("supports")) or 0)
        refutes = max(0, _as_int(row.get("refutes")) or 0)
        if supports == 0 and refutes == 0:
            continue
        year = _as_int(row.get("year"))
        per_year = out.setdefault(str(claim_id), {})
        s, r = per_year.get(year, (0, 0))
        per_year[year] = (s + supports, r + refutes)
    return out


def year_slots(counts: Iterable[Counts]) -> tuple[list[int], bool]:
    """The years on the shared x axis of every chart, and whether years without evidence were left out."""
    years = sorted({year for per_year in counts for year in per_year if year is not None})
    if not years:
        return [], False
    if years[-1] - years[0] + 1 <= TL_MAX_SPAN:
        return list(range(years[0], years[-1] + 1)), False
    return years, True


def timeline_chart(per_year: Counts, slots: list[int], compressed: bool) -> TimelineChart:
    """Supports above the axis, refutes below it, one slot per year, the unknown year as a separate group."""
    n = len(slots)
    slot_w = min(TL_MAX_SLOT, max(TL_MIN_SLOT, TL_MAX_PLOT / n)) if n else 0.0
    bar_w = max(2.0, slot_w * 0.72)
    plot_left = TL_LEFT
    years_right = plot_left + n * slot_w
    separator_x = years_right + TL_GAP / 2 if n else plot_left
    unknown_left = years_right + TL_GAP if n else plot_left
    unknown_x = unknown_left + TL_UNKNOWN_W / 2
    plot_right = unknown_left + TL_UNKNOWN_W
    width = plot_right + TL_RIGHT
    top_y = TL_TOP
    axis_y = TL_TOP + TL_HALF
    bottom_y = axis_y + TL_HALF
    height = bottom_y + TL_BOTTOM

    y_max = max([1, *(max(s, r) for s, r in per_year.values())])
    show_counts = slot_w >= 16 or n == 0

    def bars_at(year: int | None, centre: float, bar_width: float) -> list[TimelineBar]:
        supports, refutes = per_year.get(year, (0, 0))
        label = str(year) if year is not None else "unknown"
        out: list[TimelineBar] = []
        for kind, count in (("supports", supports), ("refutes", refutes)):
            if not count:
                continue
            h = _r(count / y_max * TL_HALF)
            above = kind == "supports"
            out.append(
                TimelineBar(
                    kind=kind,
                    year=label,
                    count=count,
                    x=_r(centre - bar_width / 2),
                    y=_r(axis_y - h) if above else axis_y,
                    width=_r(bar_width),
                    height=h,
                    label_x=_r(centre),
                    label_y=_r(axis_y - h - 3) if above else _r(axis_y + h + 11),
                )
            )
        return out

    bars: list[TimelineBar] = []
    for i, year in enumerate(slots):
        bars.extend(bars_at(year, plot_left + (i + 0.5) * slot_w, bar_w))
    bars.extend(bars_at(None, unknown_x, min(TL_MAX_SLOT * 0.72, max(bar_w, 14.0))))

    step = max(1, math.ceil(TL_LABEL_W / slot_w)) if n else 1
    labels = [Tick(_r(plot_left + (i + 0.5) * slot_w), str(year)) for i, year in enumerate(slots) if i % step == 0]

    supports_total = sum(s for s, _ in per_year.values())
    refutes_total = sum(r for _, r in per_year.values())
    unknown_s, unknown_r = per_year.get(None, (0, 0))
    known = sorted(year for year in per_year if year is not None)
    span = _year_range(known[0], known[-1]) if known else "no known year"
    summary = (
        f"Evidence timeline: {supports_total} supporting and {refutes_total} refuting items, "
        f"publication years {span}; {unknown_s} supporting and {unknown_r} refuting items of unknown year."
    )
    return TimelineChart(
        width=_r(width),
        height=_r(height),
        axis_y=axis_y,
        plot_left=plot_left,
        plot_right=_r(plot_right),
        top_y=top_y,
        bottom_y=bottom_y,
        y_max=y_max,
        bars=tuple(bars),
        year_labels=tuple(labels),
        unknown_x=_r(unknown_x),
        separator_x=_r(separator_x),
        show_counts=show_counts,
        compressed=compressed,
        dated=bool(known),
        year_label_y=_r(bottom_y + TL_YEAR_LABEL_DY),
        supports_total=supports_total,
        refutes_total=refutes_total,
        unknown_supports=unknown_s,
        unknown_refutes=unknown_r,
        summary=summary,
    )


# ----------------------------------------------------------------------------- assembly
def claim_view(index: int, claim: MaterialClaim, chart: TimelineChart | None) -> ClaimView:
    low, high = claim.credible_interval_95
    return ClaimView(
        index=index,
        anchor=f"claim-{index}",
        claim_id=claim.claim_id,
        text=claim.text,
        adopted=claim.claim_adoption_status == "adopted",
        rejection_reason=claim.claim_rejection_reason,
        verification=(
            f"{claim.source_verification_status} ({claim.verification_reason.replace('_', ' ')}), "
            f"{claim.independent_sources} independent supporting source{'s' if claim.independent_sources != 1 else ''}"
        ),
        confidence=fmt(claim.confidence),
        uncertainty=fmt(claim.uncertainty),
        controversy=fmt(claim.controversy),
        alpha=fmt(claim.alpha),
        beta=fmt(claim.beta),
        interval_low=fmt(low),
        interval_high=fmt(high),
        evidence_count=claim.evidence_count,
        supports_count=claim.supports_count,
        refutes_count=claim.refutes_count,
        neutral_count=claim.neutral_count,
        bar=confidence_bar(claim),
        evidence=tuple(evidence_row(item) for item in claim.evidence),
        evidence_truncated=claim.evidence_truncated,
        evidence_years=_year_range(claim.evidence_years.oldest, claim.evidence_years.newest),
        timeline=chart,
        **judge_view(claim),
    )


def judge_view(claim: MaterialClaim) -> dict[str, Any]:
    """The report's judges line: edges per judge (most first) and the confidence the offline judge alone would give,
    with the other judges' effect (the claim's confidence minus that)."""
    effect = claim.confidence - claim.offline_only_confidence
    return {
        "judges": tuple(sorted(claim.judges.items(), key=lambda kv: (-kv[1], kv[0]))),
        "offline_only_confidence": fmt(claim.offline_only_confidence),
        "judges_effect": f"{'+' if effect >= 0 else '-'}{fmt(abs(effect))}",
    }


def build_view(materials: Materials, timeline: list[dict[str, Any]], generated_at: str) -> ReportView:
    counts = timeline_counts(timeline)
    shown = {claim.claim_id for claim in materials.claims}
    slots, compressed = year_slots(per_year for claim_id, per_year in counts.items() if claim_id in shown)
    claims: list[ClaimView] = []
    for index, claim in enumerate(materials.claims, start=1):
        per_year = counts.get(claim.claim_id)
        chart = timeline_chart(per_year, slots, compressed) if per_year else None
        claims.append(claim_view(index, claim, chart))
    adopted = sum(1 for c in claims if c.adopted)
    return ReportView(
        task_id=materials.task_id,
        hypothesis=materials.hypothesis,
        status=materials.status,
        computed_at=materials.computed_at,
        generated_at=generated_at,
        claims=tuple(claims),
        adopted_count=adopted,
        not_adopted_count=len(claims) - adopted,
        year_axis_compressed=compressed,
    )


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("lyra", "templates"),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_report(
    materials: Materials,
    timeline: list[dict[str, Any]],
    *,
    generated_at: str | None = None,
    rules: list[dict[str, Any]] | None = None,
    changes: ChangesView | None = None,
) -> str:
    """The evidence report page of a task as one self-contained HTML document.

    ``timeline`` holds rows ``{"claim_id", "year", "supports", "refutes"}`` (year None = unknown); rows of
    claims not in ``materials`` are ignored. ``generated_at`` defaults to now (UTC, ISO 8601). ``rules``: the learned
    rules in force (``{"id", "component", "rule_type", "content", "predicted", "observed"}``), listed when any.
    ``changes``: the "What changed" section (lyra.services.report_changes), shown when given.
    """
    stamp = generated_at if generated_at is not None else datetime.now(UTC).isoformat(timespec="seconds")
    view = build_view(materials, timeline, stamp)
    return _environment().get_template(TEMPLATE).render(report=view, rules=rules or [], changes=changes)
