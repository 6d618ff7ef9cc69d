"""The evidence report page opened in headless chromium: claims visible, one bar per claim, charts drawn, no
network access and no script execution. Saves a screenshot to artifacts/report.png.

Needs Debian's chromium at /usr/bin/chromium; skipped without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lyra.models.api import Evidence, EvidenceYears, MaterialClaim, Materials
from lyra.services.report import render_report

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INJECTION = 'Injected <img src="x" onerror="window.__pwned = 1"> text'


def _evidence(edge_id: str, relation: str, year: int | None, url: str | None, **kw: Any) -> Evidence:
    values: dict[str, Any] = {
        "edge_id": edge_id,
        "relation": relation,
        "fragment_id": f"f_{edge_id}",
        "source_id": f"s_{edge_id}",
        "url": url,
        "title": f"Study {edge_id}",
        "year": year,
        "doi": None,
        "venue": None,
        "nli_confidence": 0.8,
        "source_domain_category": "academic",
        "edge_human_corrected": False,
    }
    values.update(kw)
    values.setdefault("weight", 1.0 if values["edge_human_corrected"] else values["nli_confidence"])
    for field in ("title", "venue"):  # text from the source: a SourceText object
        if isinstance(values[field], str):
            values[field] = {"text": values[field]}
    return Evidence(**values)


def _materials() -> Materials:
    adopted = MaterialClaim(
        claim_id="c_fracture",
        text="Vitamin D supplementation reduces hip fractures in older adults",
        confidence=0.712,
        uncertainty=0.118,
        controversy=0.31,
        alpha=5.6,
        beta=2.264,
        evidence_count=8,
        supports_count=5,
        refutes_count=3,
        neutral_count=2,
        claim_adoption_status="adopted",
        claim_rejection_reason=None,
        credible_interval_95=(0.451, 0.915),
        source_verification_status="pending",
        verification_reason="conflicting_evidence",
        independent_sources=4,
        evidence=[
            _evidence("e1", "supports", 2014, "https://example.org/e1", doi="10.1000/e1", venue="BMJ"),
            _evidence("e2", "refutes", 2019, "javascript:alert(1)", edge_human_corrected=True),
            _evidence("e3", "neutral", None, "file:///data/papers/e3.pdf"),
        ],
        evidence_truncated=True,
        evidence_years=EvidenceYears(oldest=2012, newest=2021),
    )
    rejected = MaterialClaim(
        claim_id="c_rejected",
        text=INJECTION,
        confidence=0.5,
        uncertainty=0.289,
        controversy=0.0,
        alpha=1.0,
        beta=1.0,
        evidence_count=0,
        supports_count=0,
        refutes_count=0,
        neutral_count=0,
        claim_adoption_status="not_adopted",
        claim_rejection_reason="Out of scope for this review",
        credible_interval_95=(0.025, 0.975),
        source_verification_status="pending",
        verification_reason="insufficient_evidence",
        independent_sources=0,
        evidence=[],
        evidence_truncated=False,
        evidence_years=EvidenceYears(oldest=None, newest=None),
    )
    unknown_years = adopted.model_copy(
        update={
            "claim_id": "c_undated",
            "text": "Sun exposure raises serum vitamin D",
            "evidence_count": 4,
            "supports_count": 3,
            "refutes_count": 1,
            "neutral_count": 0,
            "evidence": [],
            "evidence_truncated": False,
            "evidence_years": EvidenceYears(oldest=None, newest=None),
        }
    )
    return Materials(
        task_id="vitamin_d",
        hypothesis="Vitamin D prevents fractures",
        status="active",
        claims=[adopted, rejected, unknown_years],
        computed_at="2025-01-02T03:04:05+00:00",
    )


TIMELINE: list[dict[str, Any]] = [
    {"claim_id": "c_fracture", "year": 2012, "supports": 1, "refutes": 0},
    {"claim_id": "c_fracture", "year": 2014, "supports": 2, "refutes": 1},
    {"claim_id": "c_fracture", "year": 2019, "supports": 1, "refutes": 2},
    {"claim_id": "c_fracture", "year": 2021, "supports": 1, "refutes": 0},
    {"claim_id": "c_fracture", "year": None, "supports": 0, "refutes": 0},
    {"claim_id": "c_undated", "year": None, "supports": 3, "refutes": 1},
]


def test_report_page_renders_in_chromium(tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian's chromium at {CHROMIUM} for the headless check")
    from playwright.sync_api import expect, sync_playwright

    materials = _materials()
    page_file = tmp_path / "report.html"
    page_file.write_text(render_report(materials, TIMELINE, generated_at="2025-01-02T03:05:00+00:00"), "utf-8")
    shots = ROOT / "artifacts"
    shots.mkdir(exist_ok=True)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            page.goto(page_file.as_uri(), wait_until="load")

            for claim in materials.claims:
                section = page.locator(f"article[data-claim-id='{claim.claim_id}']")
                expect(section).to_have_count(1)
                expect(section.get_by_text(claim.text, exact=True)).to_be_visible()
                expect(section.locator("svg.confidence-bar")).to_have_count(1)
                expect(section.locator("svg.confidence-bar")).to_be_visible()
            expect(page.locator("svg.confidence-bar")).to_have_count(len(materials.claims))
            expect(page.get_by_text("Vitamin D prevents fractures", exact=True)).to_be_visible()

            # the text that looked like markup stayed text: no image element, nothing executed
            assert page.locator("article img").count() == 0
            assert page.evaluate("() => window.__pwned === undefined")
            expect(page.locator("article[data-claim-id='c_rejected'] .rejection-reason")).to_have_text(
                "Out of scope for this review"
            )

            # timeline charts: one for each claim with dated or undated supports/refutes, drawn with real size
            charts = page.locator("svg.timeline")
            expect(charts).to_have_count(2)
            expect(charts.first).to_be_visible()
            box = charts.first.bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 100
            expect(charts.first.locator("rect.bar-supports")).to_have_count(4)
            expect(charts.first.locator("rect.bar-refutes")).to_have_count(2)
            undated = page.locator("svg.timeline[data-claim-id='c_undated']")
            expect(undated.locator("rect[data-year='unknown']")).to_have_count(2)

            # the interval whisker lies inside the drawn bar, left of its right end
            whisker = page.locator("article[data-claim-id='c_fracture'] svg.confidence-bar line.ci").bounding_box()
            track = page.locator("article[data-claim-id='c_fracture'] svg.confidence-bar rect.track").bounding_box()
            assert whisker is not None and track is not None
            assert track["x"] < whisker["x"] < whisker["x"] + whisker["width"] < track["x"] + track["width"]

            # links only for http(s) and file URLs
            rows = page.locator("article[data-claim-id='c_fracture'] tr.evidence-item")
            expect(rows.nth(0).locator("a")).to_have_attribute("href", "https://example.org/e1")
            expect(rows.nth(1).locator("a")).to_have_count(0)
            expect(rows.nth(1).get_by_text("human-reviewed")).to_be_visible()
            expect(rows.nth(2).locator("a")).to_have_attribute("href", "file:///data/papers/e3.pdf")
            expect(page.locator("article[data-claim-id='c_fracture'] .truncated")).to_be_visible()

            page.screenshot(path=str(shots / "report.png"), full_page=True)
        finally:
            browser.close()

    assert requested == [page_file.as_uri()], f"the page must load nothing else: {requested}"
    assert (shots / "report.png").stat().st_size > 10_000
