"""Take the documentation's screenshots with Debian's chromium (through Playwright; `playwright install` is never run).

    .venv/bin/python scripts/screenshots.py [--task demo_corpus] [--instance default]    (`make screenshots`)

Needs the task in Neo4j (`lyra demo` builds ``demo_corpus``) and a running managed instance, or ``NEO4J_URI`` /
``NEO4J_USERNAME`` / ``NEO4J_PASSWORD`` with ``LYRA_NEO4J_HTTP_URL`` (the Browser's address). Writes:

* ``docs/images/report-page.png``: the task's report page (``lyra report``), as a browser shows it;
* ``docs/images/neo4j-browser.png``: Neo4j Browser logged in, showing the task's evidence graph;
* ``docs/images/neo4j-browser-query.png``: the claims with both supporting and refuting evidence, as a table.

chromium is found as the web fetcher finds it: ``LYRA_CHROMIUM_PATH`` (default ``/usr/bin/chromium``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
GRAPH_QUERY = (
    "MATCH (t:Task {{id: '{task}'}})-[:HAS_CLAIM]->(c:Claim)<-[r:SUPPORTS|REFUTES]-(f:Fragment)"
    "-[:EXTRACTED_FROM]->(p:Page)-[:IN_DOMAIN]->(d:Domain) RETURN t, c, r, f, p, d LIMIT 60"
)
HIDE_USAGE_NOTICE = """() => {
  for (const el of document.querySelectorAll("div")) {
    const text = el.textContent.trim();
    if (text.startsWith("To help make Neo4j Browser better") && text.length < 300) el.style.display = "none";
  }
}"""
TABLE_QUERY = (
    "MATCH (c:Claim:Task_{task})<-[s:SUPPORTS]-(), (c)<-[r:REFUTES]-() "
    "RETURN c.text AS claim, count(DISTINCT s) AS supporting, count(DISTINCT r) AS refuting, "
    "collect(DISTINCT s.source_domain_category) AS supporting_categories"
)


def lyra(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "lyra", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def connection(instance: str) -> tuple[str, str, str, str]:
    """(bolt host:port, user, password, Browser http address) of the instance, or of NEO4J_URI."""
    if os.environ.get("NEO4J_URI"):
        http = os.environ.get("LYRA_NEO4J_HTTP_URL", "")
        if not http:
            raise SystemExit("with NEO4J_URI set, LYRA_NEO4J_HTTP_URL must name the Browser's address")
        uri = os.environ["NEO4J_URI"]
        user, password = os.environ.get("NEO4J_USERNAME", "neo4j"), os.environ.get("NEO4J_PASSWORD", "")
    else:
        env = dict(
            line.removeprefix("export ").split("=", 1)
            for line in lyra("neo4j", "env", "--instance", instance).splitlines()
            if "=" in line
        )
        env = {k: v.strip("'\"") for k, v in env.items()}
        uri, user, password = env["NEO4J_URI"], env.get("NEO4J_USERNAME", "neo4j"), env.get("NEO4J_PASSWORD", "")
        status = lyra("neo4j", "status", "--instance", instance)
        http = next(line.split(": ", 1)[1] for line in status.splitlines() if line.startswith("browser_url: "))
        http = http.removesuffix("/browser/")
    return uri.split("://", 1)[1], user, password, http.rstrip("/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="demo_corpus")
    parser.add_argument("--instance", default=os.environ.get("LYRA_NEO4J_INSTANCE", "default"))
    args = parser.parse_args(argv)
    chromium = os.environ.get("LYRA_CHROMIUM_PATH", "/usr/bin/chromium")
    if not Path(chromium).exists():
        raise SystemExit(f"no chromium at {chromium}: apt-get install chromium, or set LYRA_CHROMIUM_PATH")
    from playwright.sync_api import expect, sync_playwright

    bolt, user, password, http = connection(args.instance)
    if not os.environ.get("NEO4J_URI"):
        os.environ["LYRA_NEO4J_INSTANCE"] = args.instance
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.html"
        lyra("report", args.task, "--out", str(report))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                page.goto(report.as_uri(), wait_until="load")
                page.screenshot(path=str(IMAGES / "report-page.png"))

                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(f"{http}/browser/", wait_until="networkidle", timeout=90_000)
                page.select_option("[data-testid=bolt-scheme-select]", "bolt://")
                page.fill("[data-testid=boltaddress]", bolt)
                page.fill("[data-testid=username]", user)
                page.fill("[data-testid=password]", password)
                page.click("[data-testid=connect]")
                expect(page.get_by_text("You are connected as user")).to_be_visible(timeout=60_000)
                for query, name in (
                    (TABLE_QUERY.format(task=args.task), "neo4j-browser-query.png"),
                    (GRAPH_QUERY.format(task=args.task), "neo4j-browser.png"),
                ):
                    editor = page.locator("[data-testid=activeEditor] textarea, .monaco-editor textarea").first
                    editor.click()
                    editor.fill(query)
                    page.click("[data-testid=editor-Run]")
                    page.wait_for_timeout(6_000)  # the graph view lays itself out
                    page.evaluate(HIDE_USAGE_NOTICE)  # the usage-data notice is not part of what the pages show
                    page.screenshot(path=str(IMAGES / name))
            finally:
                browser.close()
    for name in ("report-page.png", "neo4j-browser.png", "neo4j-browser-query.png"):
        print(f"docs/images/{name}: {(IMAGES / name).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
