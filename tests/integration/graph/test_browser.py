"""Neo4j Browser served by the Neo4j under test loads in headless chromium and can log in.

Needs Debian's chromium (`.ci/run` installs it) and the Browser's HTTP address: LYRA_NEO4J_HTTP_URL, set by
`make test` for the managed test instance. A screenshot is saved to artifacts/neo4j-browser.png.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from lyra.bootstrap import Services
from lyra.core.settings import Settings
from tests.support.helpers import seed_task

pytestmark = [pytest.mark.neo4j, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def test_browser_loads_logs_in_and_runs_a_query(graph: Services, settings: Settings) -> None:
    http_url = os.environ.get("LYRA_NEO4J_HTTP_URL")
    if not http_url or not shutil.which(CHROMIUM):
        if os.environ.get("LYRA_REQUIRE_NEO4J") == "1":
            pytest.fail("the Browser check needs LYRA_NEO4J_HTTP_URL and /usr/bin/chromium in CI")
        pytest.skip("needs LYRA_NEO4J_HTTP_URL and /usr/bin/chromium")
    from playwright.sync_api import expect, sync_playwright

    seed_task(graph, "browser_task", ["a claim to find in the Browser"])
    bolt_host = str(settings.neo4j.neo4j_uri).split("://", 1)[1]
    password = settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else ""
    shots = ROOT / "artifacts"
    shots.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.goto(f"{http_url}/browser/", wait_until="networkidle", timeout=60_000)
            page.select_option("[data-testid=bolt-scheme-select]", "bolt://")
            page.fill("[data-testid=boltaddress]", bolt_host)
            page.fill("[data-testid=username]", settings.neo4j.neo4j_username)
            page.fill("[data-testid=password]", password)
            page.click("[data-testid=connect]")
            expect(page.get_by_text("You are connected as user")).to_be_visible(timeout=30_000)
            editor = page.locator("[data-testid=activeEditor] textarea, .monaco-editor textarea").first
            editor.click()
            editor.type("MATCH (c:Claim:Task_browser_task) RETURN c.text AS text")
            page.click("[data-testid=editor-Run]")
            expect(page.get_by_text("a claim to find in the Browser").first).to_be_visible(timeout=30_000)
            page.screenshot(path=str(shots / "neo4j-browser.png"))
        finally:
            browser.close()
