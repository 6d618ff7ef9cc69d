"""The report's "What changed" section from plain get_changes answers (no Neo4j): claims in get_changes' order,
causes in words, the collapsed timeline, and source text escaped."""

from __future__ import annotations

from typing import Any

from lyra.models.api import Materials
from lyra.models.timeline import Cause, Changes, ClaimMove, ClaimTimeline, RunInfo, ScorePoint, TimelineEvent
from lyra.services.report import render_report
from lyra.services.report_changes import CAUSE_LABELS, cause_text, changes_view


def point(confidence: float, uncertainty: float = 0.2) -> ScorePoint:
    return ScorePoint(
        confidence=confidence, uncertainty=uncertainty, controversy=0.0, alpha=2.0, beta=1.0, supports=1, refutes=0,
        neutrals=0,
    )  # fmt: skip


def move(claim_id: str, before: float, now: float, crossed: list[str], causes: list[Cause]) -> ClaimMove:
    return ClaimMove(
        claim_id=claim_id, text=f"claim <i>{claim_id}</i>", new_claim=False, before=point(before), now=point(now),
        confidence_change=now - before, uncertainty_change=0.0, crossed=crossed, causes=causes,
    )  # fmt: skip


def page(title: str) -> dict[str, Any]:
    return {"source_id": "src_1", "url": "https://x.invalid/1", "doi": None, "title": {"text": title}}


def test_every_cause_kind_has_words_and_a_label() -> None:
    causes = [
        Cause.model_validate({"kind": "new_evidence", "at": "t", "edge_id": "edg_1", "relation": "supports",
                              "judge": "offline:nli", "weight": 0.9, "page": page("A trial")}),
        Cause(kind="correction", at="t", edge_id="edg_1", relation="refutes", previous_relation="supports",
              judge="human:ana"),
        Cause(kind="judge_change", at="t", edge_id="edg_2", relation="neutral", previous_relation="supports",
              judge="offline:better", previous_judge="offline:nli"),
        Cause(kind="retraction", at="t", edge_ids=["edg_1", "edg_2"], notice_doi="10.1/notice"),
        Cause(kind="rule_change", at="t", run_id="run_00000000", rule="stance_llm v3: approve prp_1"),
    ]  # fmt: skip
    texts = [cause_text(c) for c in causes]
    assert texts[0] == "supports edge edg_1 by offline:nli, weight 0.900 from A trial"
    assert texts[1] == "edge edg_1 supports -> refutes by human:ana"
    assert texts[2] == "edge edg_2 supports -> neutral by offline:better (was offline:nli)"
    assert texts[3] == "2 edge(s) stopped counting, notice 10.1/notice"
    assert texts[4] == "stance_llm v3: approve prp_1 (run run_00000000)"
    assert CAUSE_LABELS["judge_change"] == "a judge upgrade" and CAUSE_LABELS["rule_change"] == "a rule change"


def test_the_section_keeps_the_order_and_escapes_source_text() -> None:
    crossed = move("c_cross", 0.4, 0.6, ["confidence above 0.5"],
                   [Cause.model_validate({"kind": "new_evidence", "at": "2026-01-02", "edge_id": "edg_9",
                                          "relation": "supports", "page": page("<script>x</script>")})])  # fmt: skip
    drifted = move("c_drift", 0.7, 0.95, [], [])
    changes = Changes(
        task_id="task_a", since="2026-01-01T00:00:00+00:00",
        runs=[RunInfo(run_id="run_00000001", kind="research", cause_id=None, started_at="s", finished_at="f",
                      claims_moved=2)],
        claims=[crossed, drifted], unchanged=3,
    )  # fmt: skip
    timeline = ClaimTimeline(
        task_id="task_a", claim_id="c_cross", text="x", total=2, truncated=False,
        events=[TimelineEvent(at="2026-01-02", kind="edge_added", detail={"relation": "supports", "edge_id": "edg_9"}),
                TimelineEvent(at="2026-01-01", kind="snapshot", detail={"run_kind": "ingest", "confidence": 0.4,
                                                                         "uncertainty": 0.2})],
    )  # fmt: skip
    view = changes_view(changes, {"c_cross": timeline}, 0.5, 0.1)
    assert [c.claim_id for c in view.claims] == ["c_cross", "c_drift"]
    assert view.crossed_count == 1 and view.unchanged == 3 and view.run_kinds == "1 research"
    assert view.claims[0].change == "+0.200" and view.claims[1].events == ()
    html = render_report(Materials(task_id="task_a", hypothesis="h", status="active", claims=[],
                                   computed_at="c"), [], changes=view)  # fmt: skip
    section = html[html.index('id="what-changed"') : html.index("</section>", html.index('id="what-changed"'))]
    assert section.index('data-claim-id="c_cross"') < section.index('data-claim-id="c_drift"')
    assert "<script>" not in section and "&lt;script&gt;x&lt;/script&gt;" in section
    assert "claim &lt;i&gt;c_cross&lt;/i&gt;" in section
    assert "<details" in section and "Timeline of this claim (2 events)" in section
    assert (
        "confidence above 0.5" in section and "1 claim moved" not in section and "2 claims moved, 3 did not" in section
    )


def test_without_changes_the_page_has_no_section() -> None:
    html = render_report(Materials(task_id="task_a", hypothesis="h", status="active", claims=[], computed_at="c"), [])
    assert 'id="what-changed"' not in html
