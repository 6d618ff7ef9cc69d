"""The evidence pipeline end to end on the real Neo4j and the real offline models (embedder + local LLM).

Kept small (a handful of documents) because every judged pair costs about a second of LLM time.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lyra.bootstrap import Services, build_services
from lyra.core.settings import Settings
from lyra.core.text import is_question
from lyra.services.fragment_index import open_fragment_index
from tests.support.helpers import claim_materials, neo4j_env, run_lyra
from tests.support.stance_texts import CLAIM, NULL, OFF_TOPIC, SUPPORT

pytestmark = [pytest.mark.neo4j, pytest.mark.models]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "trial.txt").write_text(f"{SUPPORT}\n")
    (root / "garden.txt").write_text(OFF_TOPIC + "\n")
    (root / "news.html").write_text(
        "<html><head><title>Drug Q news</title></head><body><nav>Home | About | Contact</nav>"
        f"<article><h1>Second trial of drug Q</h1><p>{NULL}</p></article>"
        "<footer>Copyright 2026. We use cookies.</footer></body></html>"
    )
    (root / "abstracts.jsonl").write_text(
        json.dumps(
            {
                "title": "Drug Q trial",
                "abstract": SUPPORT,
                "doi": "10.5555/test.q1",
                "year": 2024,
                "venue": "Example Journal",
                "url": "https://journals.example.org/q1",
            }
        )
        + "\n"
    )
    (root / "broken.txt").write_bytes(b"\xff\xfe broken \x80")
    return root


@pytest.fixture(scope="module")
def pipeline(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    state = tmp_path_factory.mktemp("state")
    svc = build_services(settings.model_copy(update={"state_dir": state}), apply_schema=False)
    yield svc
    svc.close()


def edges_of(services: Services, task_id: str) -> list[dict[str, object]]:
    records, _, _ = services.store.driver.execute_query(
        "MATCH (:Task {id: $t})-[:HAS_CLAIM]->(c:Claim)<-[r]-(f:Fragment)-[:EXTRACTED_FROM]->(p:Page) "
        "RETURN type(r) AS relation, r.nli_label AS label, r.nli_confidence AS confidence, "
        "r.source_domain_category AS category, r.cause_id AS cause, f.text AS text, collect(p.url) AS urls",
        t=task_id,
        database_=services.store.database,
    )
    return [r.data() for r in records]


def test_ingest_builds_stance_edges_and_reports_skips(graph: Services, pipeline: Services, corpus: Path) -> None:
    report = pipeline.ingest.ingest([corpus], "drug_q", [CLAIM])
    assert report.documents == 4
    assert any("broken.txt" in s.item and "UTF-8" in s.reason for s in report.skipped)
    assert report.fragments_new == 3  # the abstract repeats the Markdown passage: one fragment, two pages
    # the garden passage is below the relevance floor: counted, not judged
    assert (report.pairs_ranked, report.pairs_below_floor, report.pairs_pending) == (2, 1, 0)
    assert report.pairs_judged == 2
    edges = edges_of(pipeline, "drug_q")
    assert len(edges) == 2

    def relation_of(passage: str) -> object:
        (edge,) = [e for e in edges if passage in str(e["text"])]
        return edge["relation"]

    assert relation_of(SUPPORT) == "SUPPORTS"
    assert relation_of(NULL) == "REFUTES"
    assert not [e for e in edges if OFF_TOPIC in str(e["text"])]
    assert all("cookies" not in str(e["text"]) for e in edges)  # HTML boilerplate was dropped
    for edge in edges:
        assert 0.0 < float(edge["confidence"]) <= 1.0  # type: ignore[arg-type]
        assert edge["cause"] == report.cause_id
        assert edge["category"] in ("academic", "unverified")
    (claim,) = claim_materials(pipeline, "drug_q")
    assert claim.supports_count == 1 and claim.refutes_count == 1 and claim.neutral_count == 0


def test_rerunning_an_ingest_creates_nothing_new_and_judges_nothing_again(pipeline: Services, corpus: Path) -> None:
    again = pipeline.ingest.ingest([corpus], "drug_q")
    assert again.pages_new == 0 and again.fragments_new == 0
    assert again.pairs_judged == 0 and again.pairs_ranked == 2
    assert again.edges_existing == 2
    assert len(edges_of(pipeline, "drug_q")) == 2


def test_near_duplicate_passage_links_the_existing_fragment(pipeline: Services, tmp_path: Path) -> None:
    (tmp_path / "mirror.txt").write_text(SUPPORT.replace("640 adults", "640 adult patients") + "\n")
    report = pipeline.ingest.ingest([tmp_path], "drug_q")
    assert report.fragments_near_duplicate == 1 and report.fragments_new == 0
    records, _, _ = pipeline.store.driver.execute_query(
        "MATCH (f:Fragment {text: $t})-[:EXTRACTED_FROM]->(p:Page) RETURN count(p) AS pages",
        t=SUPPORT,
        database_=pipeline.store.database,
    )
    assert records[0]["pages"] == 3  # the text file, the abstract, and now the mirror


def test_faiss_index_is_rebuilt_from_neo4j_when_lost(pipeline: Services) -> None:
    index = pipeline.ingest.index
    before = len(index)
    assert before >= 3
    shutil.rmtree(index.path.parent)  # type: ignore[union-attr]
    rebuilt = open_fragment_index(pipeline.store, index.path, index.dimension)  # type: ignore[arg-type]
    assert len(rebuilt) == before
    records, _, _ = pipeline.store.driver.execute_query(
        "MATCH (f:Fragment) WHERE f.text CONTAINS $t RETURN f.id AS id, f.text AS text",
        t=NULL,
        database_=pipeline.store.database,
    )
    (fragment,) = records
    (best,) = rebuilt.search(pipeline.models.embedder.embed([fragment["text"]]), k=1)[0]
    assert best[0] == fragment["id"]
    assert best[1] > 0.999


def test_research_command_states_the_question_as_claims_extracts_more_and_prints_materials(
    graph: Services, settings: Settings, corpus: Path, tmp_path: Path
) -> None:
    env = {
        **neo4j_env(settings),
        "LYRA_STATE_DIR": str(tmp_path),
        "LYRA_MODELS_DIR": str(settings.paths.models_dir),
        "LYRA_NLI_TOP_K": "2",
    }
    result = run_lyra(
        "research",
        "Does drug Q lower blood pressure?",
        "--corpus",
        str(corpus),
        "--task",
        "research_q",
        "--extract-claims",
        env=env,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "research_q: 4 documents" in result.stdout
    assert "broken.txt" in result.stdout  # the skipped file is listed with its reason
    assert "the question names it and is not judged itself" in result.stdout
    assert "claims judged (stated by the LLM from the question)" in result.stdout
    claims = pipeline_claims(graph, "research_q")
    # the question is never judged: the LLM stated it as claims, and proposed more from the corpus
    assert "Does drug Q lower blood pressure?" not in claims and not any(is_question(c) for c in claims)
    assert len(claims) >= 2  # JSON-schema constrained
    assert all(10 <= len(c) <= 300 for c in claims)
    # provenance: every claim extracted from the corpus names the fragments it came from; the claims
    # stated for the question come from none
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (:Task {id: 'research_q'})-[:HAS_CLAIM]->(c:Claim) "
        "RETURN c.text AS text, COUNT { (c)-[:EXTRACTED_FROM]->(:Fragment) } AS sources ORDER BY c.created_at",
        database_=graph.store.database,
    )
    assert records[0]["sources"] == 0  # stated for the question, before the corpus was read
    assert any(r["sources"] >= 1 for r in records[1:])


def pipeline_claims(services: Services, task_id: str) -> list[str]:
    return [c.text for c in claim_materials(services, task_id, evidence_limit=0)]


def test_domain_category_weights_decide_which_fragment_reaches_the_judge(
    graph: Services, settings: Settings, tmp_path: Path
) -> None:
    blog = f"{CLAIM} Readers of this blog have said so for years, and we agree with them."
    journal = "Among 300 hypertensive adults, drug Q reduced systolic pressure by 9 mmHg against placebo."
    rows = [
        {"title": "A blog", "abstract": blog, "url": "https://blog.example.net/drug-q"},
        {"title": "A trial", "abstract": journal, "url": "https://journals.example.org/q7", "year": 2025},
    ]
    (tmp_path / "two.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # a budget of one judged pair: the priority (relevance times category weight) decides which pair it is
    svc = build_services(settings.model_copy(update={"state_dir": tmp_path / "state", "task_pair_budget": 1}))
    try:
        # without weights the blog passage is the more relevant one (it repeats the claim) ...
        vectors = svc.models.embedder.embed([blog, journal])
        claim_vector = svc.models.embedder.embed([CLAIM])[0]
        unweighted = svc.ingest.ranker.rank(CLAIM, claim_vector, [blog, journal], vectors, 1)
        assert unweighted[0].index == 0
        # ... but the pipeline weighs an unverified blog (0.30) below an academic journal (0.90)
        report = svc.ingest.ingest([tmp_path / "two.jsonl"], "weighted", [CLAIM])
        assert report.pairs_judged == 1 and report.pairs_pending == 1
        (edge,) = edges_of(svc, "weighted")
        assert journal in str(edge["text"]) and edge["category"] == "academic"
    finally:
        svc.close()
