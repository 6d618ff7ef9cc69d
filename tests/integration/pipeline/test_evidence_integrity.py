"""What the numbers rest on, end to end on the real Neo4j and the real offline models: a corpus built for it, with
known relevant passages, exact and reworded copies, one paper read twice, and off-topic documents.

* every relevant passage above the relevance floor is judged in one run, the off-topic ones are counted below it;
* the same corpus ingested as one job and file by file gives the same edges;
* evidence names only pages its own task read (a task that read only a copy is shown the copy);
* copies and the same paper count once in independent_sources;
* a claim extracted from a passage is never judged against it (nor against a copy of it);
* a task's pair budget leaves pairs pending, counted, and judge_remaining judges them;
* a run stopped while judging keeps the edges it wrote, batch by batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lyra.bootstrap import Services, build_services
from lyra.core.context import current_job
from lyra.core.errors import JobCancelled
from lyra.core.settings import Settings
from lyra.graph.connection import bind_neomodel
from lyra.models.api import GetStatusRequest, JudgeRemainingRequest, MaterialClaim
from lyra.models.ingest import IngestRequest
from lyra.services import ingest as ingest_module
from tests.support.helpers import claim_materials

pytestmark = [pytest.mark.neo4j, pytest.mark.models]

CLAIM = "Access to microcredit increases household consumption in poor villages."
THAILAND = (
    "In a randomized evaluation across 64 Thai villages, household consumption rose by 9 percent two years after "
    "the Million Baht Village Fund gave poor villagers access to microcredit loans."
)
MOROCCO = (
    "A randomized trial in rural Moroccan villages found that access to microcredit did not increase household "
    "consumption; borrowing households invested in livestock instead and total consumption was unchanged."
)
INDIA = (
    "After microfinance branches opened in poor neighbourhoods of Hyderabad, households borrowed more and bought "
    "durable goods, but average household consumption did not increase after 18 months."
)
BOSNIA = (
    "Microcredit offered to poor households in Bosnian villages reduced household consumption in the first year, "
    "as borrowers cut spending to repay their loans and to invest in small businesses."
)
MEXICO_ABSTRACT = (
    "Access to microcredit in poor villages of Sonora increased household consumption of food by 6 percent among "
    "borrowers, according to a survey of 1,800 households over three years."
)
MEXICO_SUMMARY = (
    "Summary of the Sonora study: borrowers in poor Mexican villages reported higher household consumption, "
    "mostly food, after gaining access to microcredit from a new lender."
)
MEXICO_TITLE = "Microcredit expansion and household consumption in Sonora"
CAKE = (
    "Chocolate cake recipes through the ages: from eighteenth-century drinking chocolate to the flourless cakes of "
    "modern bakeries, with notes on cocoa butter and oven temperatures."
)
FOOTBALL = (
    "The home team scored twice in the second half, and the goalkeeper saved a penalty in stoppage time to keep "
    "the league title race open until the final weekend."
)
GARDEN = "Tomato seedlings need warm soil, steady watering and at least eight hours of direct sun a day to thrive."

RELEVANT = (THAILAND, MOROCCO, INDIA, BOSNIA, MEXICO_ABSTRACT, MEXICO_SUMMARY)
OFF_TOPIC = (CAKE, FOOTBALL, GARDEN)
# one source per group: a passage and its copies, and the two records of the Sonora paper
SOURCE_OF = {THAILAND: "thailand", MOROCCO: "morocco", INDIA: "india", BOSNIA: "bosnia"}
SOURCE_OF |= {MEXICO_ABSTRACT: "sonora", MEXICO_SUMMARY: "sonora"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("integrity")
    for name, text in (
        ("r01_thailand.txt", THAILAND),
        ("r02_morocco.txt", MOROCCO),
        ("r03_india.txt", INDIA),
        ("r06_bosnia.txt", BOSNIA),
        ("dup_morocco_copy.txt", MOROCCO),  # an exact copy
        ("reword_thailand.txt", THAILAND.replace("rose by 9 percent", "went up by 9 percent")),  # a near copy
        ("x_cake.txt", CAKE),
        ("x_football.txt", FOOTBALL),
        ("x_garden.txt", GARDEN),
    ):
        (root / name).write_text(text + "\n")
    # the same paper twice, no DOI: its abstract from one source, a summary of it from another
    for name, text, url in (
        ("r04_sonora.jsonl", MEXICO_ABSTRACT, "https://journal.example.org/sonora"),
        ("r05_sonora_summary.jsonl", MEXICO_SUMMARY, "https://digest.example.net/sonora-summary"),
    ):
        record = {"title": MEXICO_TITLE, "abstract": text, "year": 2015, "url": url}
        (root / name).write_text(json.dumps(record) + "\n")
    return root


@pytest.fixture(scope="module")
def lyra(services: Services, settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    bind_neomodel(services.store.driver, services.settings)
    services.store.run("admin/wipe_all_data", {"batch_size": 10_000})
    services.store.run("admin/mark_test_database")
    state = tmp_path_factory.mktemp("state")
    svc = build_services(settings.model_copy(update={"state_dir": state}), apply_schema=False)
    yield svc
    svc.close()


def ingest(services: Services, task_id: str, paths: list[Path]) -> None:
    services.operations.ingest(IngestRequest(task_id=task_id, paths=paths, claims=[CLAIM], hypothesis=CLAIM))


def edges_by_text(services: Services, task_id: str) -> dict[str, str]:
    """The task's stance edges: fragment text -> relation."""
    records, _, _ = services.store.driver.execute_query(
        "MATCH (:Task {id: $t})-[:HAS_CLAIM]->(c:Claim {text: $claim})<-[r]-(f:Fragment) "
        "RETURN f.text AS text, type(r) AS relation",
        t=task_id,
        claim=CLAIM,
        database_=services.store.database,
    )
    return {r["text"]: r["relation"] for r in records}


def main_claim(services: Services, task_id: str) -> MaterialClaim:
    (claim,) = [c for c in claim_materials(services, task_id, evidence_limit=100) if c.text == CLAIM]
    return claim


def test_one_run_judges_every_relevant_passage_and_counts_the_off_topic_ones_below_the_floor(
    lyra: Services, corpus: Path
) -> None:
    ingest(lyra, "integrity_one", [corpus])
    edges = edges_by_text(lyra, "integrity_one")
    assert set(edges) == set(RELEVANT)  # copies share their original's fragment
    claim = main_claim(lyra, "integrity_one")
    assert claim.coverage is not None
    assert (claim.coverage.candidates, claim.coverage.judged, claim.coverage.pending) == (6, 6, 0)
    assert claim.coverage.below_floor == len(OFF_TOPIC)
    status = lyra.operations.get_status(GetStatusRequest(task_id="integrity_one"))
    assert status.metrics.pairs is not None and status.metrics.pairs.pending == 0
    assert status.metrics.pages_read == 11


def test_the_same_corpus_split_into_one_job_per_file_gives_the_same_edges(lyra: Services, corpus: Path) -> None:
    for path in sorted(corpus.iterdir()):
        ingest(lyra, "integrity_split", [path])
    assert edges_by_text(lyra, "integrity_split") == edges_by_text(lyra, "integrity_one")


def test_evidence_names_only_the_pages_its_own_task_read(lyra: Services, corpus: Path) -> None:
    ingest(lyra, "integrity_copy_only", [corpus / "dup_morocco_copy.txt"])
    (item,) = main_claim(lyra, "integrity_copy_only").evidence
    assert item.url is not None and item.url.endswith("dup_morocco_copy.txt")
    assert [p.url for p in item.pages] == [item.url] and item.pages_total == 1
    assert item.passage is not None and item.passage.text == MOROCCO and item.passage.untrusted
    # the trained judge reads sentences: the one it found decisive is kept with the edge
    assert item.decisive_sentence is not None and item.decisive_sentence.text in MOROCCO
    # the task that read both files names both, and nothing another task read
    (both,) = [e for e in main_claim(lyra, "integrity_one").evidence if e.passage and e.passage.text == MOROCCO]
    assert sorted(Path(str(p.url)).name for p in both.pages) == ["dup_morocco_copy.txt", "r02_morocco.txt"]


def test_copies_and_the_same_paper_count_once_among_independent_sources(lyra: Services) -> None:
    claim = main_claim(lyra, "integrity_one")
    supporting = [e for e in claim.evidence if e.relation == "supports"]
    assert len(supporting) == claim.supports_count
    expected = {SOURCE_OF[e.passage.text] for e in supporting if e.passage is not None}
    assert claim.independent_sources == len(expected)
    pages = {p.source_id for e in supporting for p in e.pages}
    # the old count (distinct supporting pages) is larger whenever a copy or the second Sonora record supports
    copies = {THAILAND, MOROCCO, MEXICO_ABSTRACT, MEXICO_SUMMARY} & {e.passage.text for e in supporting if e.passage}
    if copies:
        assert len(pages) > claim.independent_sources


def test_a_claim_extracted_from_a_passage_is_not_judged_against_it_or_its_copy(lyra: Services, corpus: Path) -> None:
    ingest(lyra, "integrity_extracted", [corpus])
    (source,) = lyra.store.run("evidence/fragments_by_ids", {"ids": [fragment_id(lyra, THAILAND)]})
    extracted = "The Million Baht Village Fund raised household consumption in Thai villages."
    lyra.tasks.add_claims("integrity_extracted", [extracted], [[source["id"]]])
    result = lyra.operations.judge_remaining(JudgeRemainingRequest(task_id="integrity_extracted", max_pairs=100))
    assert result.pairs_pending == 0 and result.pairs_own_source == 1
    records, _, _ = lyra.store.driver.execute_query(
        "MATCH (c:Claim {text: $t})<-[r]-(f:Fragment) RETURN f.text AS text",
        t=extracted,
        database_=lyra.store.database,
    )
    texts = {r["text"] for r in records}
    assert THAILAND not in texts  # its own source (the reworded copy is the same fragment)
    assert texts, "the extracted claim is judged against the other relevant passages"


def fragment_id(services: Services, text: str) -> str:
    records, _, _ = services.store.driver.execute_query(
        "MATCH (f:Fragment {text: $t}) RETURN f.id AS id", t=text, database_=services.store.database
    )
    (record,) = records
    return str(record["id"])


def test_a_spent_pair_budget_leaves_pairs_pending_until_judge_remaining(
    lyra: Services, settings: Settings, corpus: Path, tmp_path: Path
) -> None:
    tight = build_services(
        settings.model_copy(update={"state_dir": tmp_path / "tight", "task_pair_budget": 2}), apply_schema=False
    )
    try:
        report = tight.operations.ingest(
            IngestRequest(task_id="integrity_budget", paths=[corpus], claims=[CLAIM], hypothesis=CLAIM)
        )
        assert (report.pairs_judged, report.pairs_pending, report.pair_budget_left) == (2, 4, 0)
        status = tight.operations.get_status(GetStatusRequest(task_id="integrity_budget"))
        assert status.metrics.pairs is not None
        assert (status.metrics.pairs.pending, status.metrics.pairs.pair_budget_left) == (4, 0)
        nothing = tight.operations.judge_remaining(JudgeRemainingRequest(task_id="integrity_budget"))
        assert nothing.pairs_judged == 0 and nothing.pairs_pending == 4
    finally:
        tight.close()
        bind_neomodel(lyra.store.driver, lyra.settings)  # neomodel's connection is process-wide: take it back
    # the budget raised (the default): the rest is judged, three at a time
    first = lyra.operations.judge_remaining(JudgeRemainingRequest(task_id="integrity_budget", max_pairs=3))
    assert (first.pairs_judged, first.pairs_pending) == (3, 1)
    second = lyra.operations.judge_remaining(JudgeRemainingRequest(task_id="integrity_budget", max_pairs=3))
    assert (second.pairs_judged, second.pairs_pending) == (1, 0)
    assert edges_by_text(lyra, "integrity_budget") == edges_by_text(lyra, "integrity_one")
    claim = main_claim(lyra, "integrity_budget")
    assert claim.coverage is not None and claim.coverage.pending == 0


def test_a_run_stopped_while_judging_keeps_the_edges_of_the_batches_it_finished(
    lyra: Services, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_module, "JUDGE_BATCH", 2)
    written: list[int] = []

    def stop_after_the_first_batch(counter: str, n: int) -> None:
        if counter == "edges":
            written.append(n)
            raise JobCancelled("stopped by the test")

    with pytest.raises(JobCancelled):
        lyra.ingest.ingest([corpus], "integrity_stopped", [CLAIM], progress=stop_after_the_first_batch)
    assert written == [2]
    assert len(edges_by_text(lyra, "integrity_stopped")) == 2  # the first batch is in the graph
    claim = main_claim(lyra, "integrity_stopped")
    assert claim.coverage is not None and (claim.coverage.judged, claim.coverage.pending) == (2, 4)
    rest = lyra.operations.judge_remaining(JudgeRemainingRequest(task_id="integrity_stopped"))
    assert (rest.pairs_judged, rest.pairs_pending) == (4, 0)
    assert edges_by_text(lyra, "integrity_stopped") == edges_by_text(lyra, "integrity_one")


def test_a_pair_another_worker_is_judging_is_left_to_it_until_its_lease_expires(lyra: Services, corpus: Path) -> None:
    lyra.tasks.create_task("integrity_leased", CLAIM)
    lyra.evidence.record_task_reads(
        "integrity_leased",
        [r["page_id"] for r in lyra.store.run("evidence/fragments_by_ids", {"ids": [fragment_id(lyra, INDIA)]})],
        "test",
    )
    (claim,) = [c for c in claim_materials(lyra, "integrity_leased", evidence_limit=0)]
    key = f"{fragment_id(lyra, INDIA)}|{claim.claim_id}"
    lyra.store.driver.execute_query(
        "CREATE (:PairLease {key: $key, holder: 'another worker', task_id: 'integrity_leased', "
        "until: datetime() + duration({minutes: 10})})",
        key=key,
        database_=lyra.store.database,
    )
    busy = lyra.operations.judge_remaining(JudgeRemainingRequest(task_id="integrity_leased"))
    assert (busy.pairs_judged, busy.pairs_pending) == (0, 1)
    lyra.store.driver.execute_query(
        "MATCH (l:PairLease {key: $key}) SET l.until = datetime() - duration({seconds: 1})",
        key=key,
        database_=lyra.store.database,
    )
    freed = lyra.operations.judge_remaining(JudgeRemainingRequest(task_id="integrity_leased"))
    assert (freed.pairs_judged, freed.pairs_pending) == (1, 0)


def test_a_job_run_again_after_its_worker_died_takes_back_the_leases_of_its_first_attempt(
    lyra: Services, corpus: Path
) -> None:
    lyra.tasks.create_task("integrity_rerun", CLAIM)
    (row,) = lyra.store.run("evidence/fragments_by_ids", {"ids": [fragment_id(lyra, BOSNIA)]})
    lyra.evidence.record_task_reads("integrity_rerun", [row["page_id"]], "test")
    (claim,) = claim_materials(lyra, "integrity_rerun", evidence_limit=0)
    for key in (f"{row['id']}|{claim.claim_id}", "frg_gone|clm_gone"):  # the second: a pair judged since
        lyra.store.driver.execute_query(
            "CREATE (:PairLease {key: $key, holder: 'job_first', task_id: 'integrity_rerun', "
            "until: datetime() + duration({minutes: 10})})",
            key=key,
            database_=lyra.store.database,
        )
    token = current_job.set("job_first")  # what the job runner sets around a job's executor
    try:
        again = lyra.operations.judge_remaining(JudgeRemainingRequest(task_id="integrity_rerun"))
    finally:
        current_job.reset(token)
    assert (again.pairs_judged, again.pairs_pending) == (1, 0)
    records, _, _ = lyra.store.driver.execute_query(
        "MATCH (l:PairLease) RETURN count(l) AS n", database_=lyra.store.database
    )
    assert records[0]["n"] == 0  # released after the batch was written
    records, _, _ = lyra.store.driver.execute_query(
        "MATCH (l:PairLease) RETURN count(l) AS n", database_=lyra.store.database
    )
    assert records[0]["n"] == 0  # both of the first attempt's leases are gone with the run
