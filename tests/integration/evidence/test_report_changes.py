"""The report page's "What changed" section against the real Neo4j, through the REST door: after a run that adds
evidence, the claim that crossed the confidence threshold is listed first with its move and its causes (new
evidence, a correction) newest first, the claim that moved without crossing after it, an unmoved claim not at all;
each listed claim carries its whole timeline collapsed; `since` and the thresholds come from the page's address; a
bad `since` is refused naming the field; source text stays text."""

from __future__ import annotations

from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import anyio
import httpx
import pytest

from lyra.bootstrap import Services, build_http_app
from lyra.models.trust import FeedbackRequest
from tests.support.helpers import seed_task

pytestmark = pytest.mark.neo4j
TASK = "report_changes"


class Section(HTMLParser):
    """The 'What changed' section as data: each listed claim's id, crossings, causes and timeline events."""

    def __init__(self) -> None:
        super().__init__()
        self.claims: list[dict[str, Any]] = []
        self.inside = False
        self.depth = 0
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section" and a.get("id") == "what-changed":
            self.inside = True
        if not self.inside:
            return
        if tag == "div" and "change" in (a.get("class") or "").split():
            self.claims.append(
                {"claim_id": a["data-claim-id"], "crossed": [], "causes": [], "events": [], "details": False}
            )
        elif tag == "tr" and a.get("data-kind") and self.claims:
            self.claims[-1]["causes"].append(a["data-kind"])
        elif tag == "li" and a.get("data-kind") and self.claims:
            self.claims[-1]["events"].append(a["data-kind"])
        elif tag == "details" and self.claims:
            self.claims[-1]["details"] = True
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.inside and tag == "section":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.text.append(data)


def page(services: Services, query: str = "") -> httpx.Response:
    app = build_http_app(services, workers=False, mcp=False)

    async def run() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.get(f"/tasks/{TASK}/report{query}")

    return anyio.run(run)


def edges_on(services: Services, claim: str, prefix: str, relation: str, confidences: list[float]) -> list[str]:
    pages = services.evidence.upsert_pages(
        [{"url": f"https://changes.invalid/{prefix}/{i}", "title": f"<b>{prefix}</b> study {i}",
          "domain_category": "academic"} for i in range(len(confidences))]
    ).ids  # fmt: skip
    services.evidence.record_task_reads(TASK, pages, "report test")
    fragments = services.evidence.upsert_fragments(
        [{"page_id": pages[i], "text": f"{prefix} passage {i}"} for i in range(len(confidences))]
    ).ids
    rows = [
        {"fragment_id": f, "claim_id": claim, "relation": relation, "nli_confidence": c}
        for f, c in zip(fragments, confidences, strict=True)
    ]
    return services.evidence.create_stance_edges(rows).ids


def parse(html: str) -> Section:
    section = Section()
    section.feed(html)
    return section


def test_what_changed_lists_crossings_first_with_causes_and_timelines(graph: Services) -> None:
    services = graph
    crossing, drifting, still = seed_task(
        services, TASK, ["the drug lowers pressure", "the drug is well tolerated", "the drug is cheap"]
    )
    edges_on(services, crossing, "first", "REFUTES", [0.6])
    edges_on(services, drifting, "first-d", "SUPPORTS", [0.9])
    edges_on(services, still, "first-s", "SUPPORTS", [0.8])
    services.timeline.record_run(TASK, "ingest")
    before = datetime.now(UTC)

    started = datetime.now(UTC)
    added = edges_on(services, crossing, "later", "SUPPORTS", [0.9, 0.8])
    edges_on(services, drifting, "later-d", "SUPPORTS", [0.2])
    services.timeline.record_run(TASK, "research", "job_x", started)
    # a person's correction of the crossing claim's newest edge: a run of its own, after the research run
    services.operations.feedback(
        FeedbackRequest(task_id=TASK, action="edge_correct", args={"edge_id": added[0], "correct_relation": "supports"})
    )

    # since a moment before both runs: crossing claim first, then the drifting one; the unmoved one not listed
    response = page(services, f"?since={before.isoformat().replace('+00:00', 'Z')}")
    assert response.status_code == 200, response.text
    section = parse(response.text)
    assert [c["claim_id"] for c in section.claims] == [crossing, drifting]
    first = section.claims[0]
    assert first["causes"][0] == "correction" and first["causes"].count("new_evidence") == 2
    assert first["details"] and "snapshot" in first["events"] and "edge_added" in first["events"]
    text = " ".join(section.text)
    assert "confidence above 0.5" in text and "a correction" in text and "new evidence" in text
    assert "<b>later</b> study" in text  # a page title is text: escaped in the HTML, never a tag
    assert "<b>later</b>" not in response.text

    # a threshold set in the address: 0.66 is crossed only by the drifting claim (about 0.655 -> 0.677), which now
    # comes first although the other claim moved further (about 0.385 -> 0.636)
    drift = parse(page(services, f"?since={before.isoformat().replace('+00:00', 'Z')}&confidence_threshold=0.66").text)
    assert [c["claim_id"] for c in drift.claims] == [drifting, crossing]
    assert "confidence above 0.66" in " ".join(drift.text)

    # default: since the latest run (the correction): only the corrected claim moved
    latest = parse(page(services).text)
    assert [c["claim_id"] for c in latest.claims] == [crossing]
    assert latest.claims[0]["causes"] == ["correction"]

    bad = page(services, "?since=yesterday")
    assert bad.status_code == 422 and "since" in bad.text
