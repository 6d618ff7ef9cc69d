"""The per-claim sums stored on Claim nodes (evidence_support_weight, evidence_refute_weight, evidence_supports,
evidence_refutes, evidence_neutrals) always equal the same sums recomputed from the stance edges.

Random small graphs are written through the real write paths (tasks, pages, fragments, stance edges), then random
sequences of edge writes, corrections (same relation and re-typed, through the feedback tool) and clean-ups (pages by
URL prefix and by URL list, soft and hard task clean-up, the garbage collection) run on them. After every step, every
claim's stored sums are compared with an aggregation over its edges (the one claim_scores ran before the sums were
stored), and `MaterialsService.scores` must return the recomputed numbers.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lyra.bootstrap import Services
from lyra.models.api import RescoreRequest
from lyra.models.judging import NextJudgmentsRequest, SubmitJudgmentsRequest
from lyra.models.trust import FeedbackRequest
from tests.support.helpers import seed_task

pytestmark = pytest.mark.neo4j

TOLERANCE = 1e-9
RELATIONS = ("SUPPORTS", "REFUTES", "NEUTRAL")
HOST = "https://sums.invalid"

RECOMPUTED = """
MATCH (c:Claim)
OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-()
WITH c, CASE WHEN r.retracted = true THEN null ELSE type(r) END AS rel,
     CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
RETURN c.id AS claim_id, c.task_id AS task_id,
       [c.evidence_support_weight, c.evidence_refute_weight, c.evidence_supports, c.evidence_refutes,
        c.evidence_neutrals] AS stored,
       [sum(CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END), sum(CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END),
        count(CASE rel WHEN 'SUPPORTS' THEN 1 END), count(CASE rel WHEN 'REFUTES' THEN 1 END),
        count(CASE rel WHEN 'NEUTRAL' THEN 1 END)] AS recomputed
"""

counter = itertools.count()
live = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
edge_rows = st.lists(
    st.tuples(
        st.integers(0, 30),  # fragment (modulo the fragments that exist)
        st.integers(0, 30),  # claim (modulo the claims that exist)
        st.sampled_from(RELATIONS),
        st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    ),
    max_size=12,
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("edges"), edge_rows),
        st.tuples(st.just("correct"), st.integers(0, 100), st.sampled_from(RELATIONS)),
        st.tuples(
            st.just("assistant"),
            st.integers(0, 1),
            st.sampled_from(["uncertain", "impact", "disputed"]),
            st.lists(st.tuples(st.sampled_from(RELATIONS), st.floats(0.0, 1.0, allow_nan=False)), max_size=4),
        ),
        st.tuples(st.just("prefix"), st.sampled_from(["g0/", "g1/", ""])),
        st.tuples(st.just("urls"), st.lists(st.integers(0, 5), max_size=3)),
        st.tuples(st.just("task"), st.integers(0, 1), st.sampled_from(["soft", "hard"])),
        st.tuples(st.just("gc")),
        st.tuples(st.just("retract"), st.integers(0, 1), st.integers(0, 5)),  # a paper retracted
    ),
    max_size=7,
)


def query(services: Services, cypher: str, **params: Any) -> list[dict[str, Any]]:
    records = services.store.driver.execute_query(cypher, params, database_=services.store.database).records
    return [r.data() for r in records]


def assert_sums_hold(services: Services) -> dict[str, list[float]]:
    """Every claim's stored sums equal the recomputed ones; returns the recomputed sums by claim id."""
    recomputed: dict[str, list[float]] = {}
    for row in query(services, RECOMPUTED):
        stored, fresh = row["stored"], row["recomputed"]
        assert None not in stored, row  # every claim here was written by Lyra
        assert abs(stored[0] - fresh[0]) <= TOLERANCE and abs(stored[1] - fresh[1]) <= TOLERANCE, row
        assert stored[2:] == fresh[2:], row
        recomputed[row["claim_id"]] = fresh
    return recomputed


def assert_scores_are_the_recomputed_ones(
    services: Services, task_ids: list[str], fresh: dict[str, list[float]]
) -> None:
    existing = {t["id"] for t in services.tasks.list_tasks()}
    for task_id in task_ids:
        if task_id not in existing:
            continue
        for score in services.materials.scores(task_id):
            sums = fresh[score["claim_id"]]
            assert score["alpha"] == pytest.approx(1.0 + sums[0], abs=TOLERANCE)
            assert score["beta"] == pytest.approx(1.0 + sums[1], abs=TOLERANCE)
            counts = (score["supports_count"], score["refutes_count"], score["neutral_count"])
            assert counts == tuple(sums[2:])


class Example:
    """One random graph: two tasks of 1-3 claims, pages in two URL groups, fragments (two of them shared by two
    pages: one inside a group, one across the groups)."""

    def __init__(self, services: Services, claims: tuple[int, int], fragments: list[int]) -> None:
        self.services = services
        self.n = next(counter)
        self.prefix = f"{HOST}/{self.n}/"
        self.task_ids = [f"sums_{self.n}_a", f"sums_{self.n}_b"]
        for task_id, count in zip(self.task_ids, claims, strict=True):
            seed_task(services, task_id, [f"claim {i} of {task_id}" for i in range(count)])
        self.urls = [f"{self.prefix}g{i % 2}/p{i}" for i in range(len(fragments))]
        page_ids = services.evidence.upsert_pages([{"url": url} for url in self.urls]).ids
        rows = [
            {"page_id": page_ids[i], "text": f"{self.n} page {i} fragment {j}"}
            for i, count in enumerate(fragments)
            for j in range(count)
        ]
        rows.append({"page_id": page_ids[0], "text": f"{self.n} shared inside g0"})
        rows.append({"page_id": page_ids[-1], "text": f"{self.n} shared inside g0"})
        rows.append({"page_id": page_ids[0], "text": f"{self.n} shared across groups"})
        rows.append({"page_id": page_ids[min(1, len(page_ids) - 1)], "text": f"{self.n} shared across groups"})
        services.evidence.upsert_fragments(rows)

    def claims(self) -> list[str]:
        rows = query(
            self.services,
            "MATCH (c:Claim) WHERE c.task_id IN $tasks RETURN c.id AS id ORDER BY id",
            tasks=self.task_ids,
        )
        return [r["id"] for r in rows]

    def fragments(self) -> list[str]:
        rows = query(
            self.services,
            "MATCH (f:Fragment)-[:EXTRACTED_FROM]->(p:Page) WHERE p.url STARTS WITH $prefix "
            "RETURN DISTINCT f.id AS id ORDER BY id",
            prefix=self.prefix,
        )
        return [r["id"] for r in rows]

    def edges(self) -> list[tuple[str, str]]:
        rows = query(
            self.services,
            "MATCH (:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim)<-[:HAS_CLAIM]-(t:Task) WHERE t.id IN $tasks "
            "RETURN r.id AS id, t.id AS task_id ORDER BY id",
            tasks=self.task_ids,
        )
        return [(r["id"], r["task_id"]) for r in rows]

    def run(self, step: tuple[Any, ...]) -> None:
        services = self.services
        kind = step[0]
        if kind == "edges":
            claims, fragments = self.claims(), self.fragments()
            if claims and fragments:
                rows = [
                    {
                        "fragment_id": fragments[f % len(fragments)],
                        "claim_id": claims[c % len(claims)],
                        "relation": relation,
                        "nli_confidence": confidence,
                    }
                    for f, c, relation, confidence in step[1]
                ]
                seen: dict[tuple[str, str], str] = {}  # one relation per pair inside one write, as the writer asks
                rows = [
                    r
                    for r in rows
                    if seen.setdefault((r["fragment_id"], r["claim_id"]), r["relation"]) == r["relation"]
                ]
                services.evidence.create_stance_edges(rows)
        elif kind == "correct":
            edges = self.edges()
            if edges:
                edge_id, task_id = edges[step[1] % len(edges)]
                args = {"edge_id": edge_id, "correct_relation": step[2].lower(), "reason": "property test"}
                services.feedback.feedback(FeedbackRequest(task_id=task_id, action="edge_correct", args=args))
        elif kind == "assistant":  # an assistant's verdicts through the pull door
            task_id = self.task_ids[step[1]]
            if task_id in {t["id"] for t in services.tasks.list_tasks()}:
                judge = f"assistant:property/{len(step[3])}"
                batch = services.judging.next_judgments(
                    NextJudgmentsRequest(task_id=task_id, limit=4, policy=step[2], judge=judge)
                )
                items = [
                    {"ticket": item.ticket, "relation": relation, "confidence": confidence}
                    for item, (relation, confidence) in zip(batch.items, step[3], strict=False)
                ]
                if items:
                    request = SubmitJudgmentsRequest.model_validate(
                        {"task_id": task_id, "items": items, "judge": judge}
                    )
                    services.judging.submit_judgments(request)
        elif kind == "prefix":
            services.store.run("cleanup/delete_pages_by_url_prefix", {"prefix": self.prefix + step[1], "batch_size": 3})
        elif kind == "urls":
            urls = sorted({self.urls[i % len(self.urls)] for i in step[1]})
            services.store.run("cleanup/delete_pages_by_urls", {"urls": urls, "batch_size": 3})
        elif kind == "retract":  # the task read a page that is then found retracted (retractions/*)
            task_id, url = self.task_ids[step[1]], self.urls[step[2] % len(self.urls)]
            pages = query(services, "MATCH (p:Page {url: $url}) RETURN p.id AS id", url=url)
            if pages and task_id in {t["id"] for t in services.tasks.list_tasks()}:
                services.evidence.record_task_reads(task_id, [pages[0]["id"]], "property test")
                row = {"page_id": pages[0]["id"], "state": "retracted", "notices": "[]", "notice_doi": None,
                       "source": "openalex"}  # fmt: skip
                services.store.run("retractions/set_page_status", {"rows": [row]})
                services.store.run("retractions/retract_edges", {"task_id": task_id})
        elif kind == "task":
            task_id = self.task_ids[step[1]]
            if task_id in {t["id"] for t in services.tasks.list_tasks()}:
                services.cleanup.cleanup(task_id, step[2])
        else:
            services.cleanup.collect_garbage(dry_run=False)


@live
@given(
    claims=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    fragments=st.lists(st.integers(1, 3), min_size=1, max_size=5),
    first=edge_rows,
    then=steps,
)
def test_stored_sums_equal_the_sums_recomputed_from_the_edges_after_every_write(
    graph: Services, claims: tuple[int, int], fragments: list[int], first: list[Any], then: list[tuple[Any, ...]]
) -> None:
    example = Example(graph, claims, fragments)
    for step in [("edges", first), *then]:
        example.run(step)
        fresh = assert_sums_hold(graph)
        assert_scores_are_the_recomputed_ones(graph, example.task_ids, fresh)


def test_parallel_batches_and_a_repeated_write_keep_the_sums(graph: Services) -> None:
    """One write split into batches run by parallel writers, a correction, then the same write again (every pair
    known: nothing created, nothing added)."""
    graph.evidence.batch_size, batch_size = 4, graph.evidence.batch_size
    try:
        example = Example(graph, (3, 3), [3, 3, 3, 3, 3])
        n = len(example.fragments())
        rows = [(f, c, RELATIONS[(f + c) % 3], ((f * 7 + c) % 10) / 10) for f in range(n) for c in range(6)]
        example.run(("edges", rows))
        example.run(("correct", 5, "REFUTES"))
        example.run(("edges", rows))
    finally:
        graph.evidence.batch_size = batch_size
    fresh = assert_sums_hold(graph)
    assert sum(int(sum(s[2:])) for s in fresh.values()) == len(example.edges()) == n * 6
    assert_scores_are_the_recomputed_ones(graph, example.task_ids, fresh)


def test_rescore_stores_the_sums_of_a_claim_that_has_none_and_check_finds_nothing_after(graph: Services) -> None:
    example = Example(graph, (2, 1), [2, 2])
    example.run(("edges", [(f, c, RELATIONS[f % 3], 0.25 + f / 100) for f in range(6) for c in range(3)]))
    query(
        graph,
        "MATCH (c:Claim {task_id: $task_id}) WITH c LIMIT 1 REMOVE c.evidence_supports",
        task_id=example.task_ids[0],
    )
    before = {s["claim_id"]: s for s in graph.materials.scores(example.task_ids[0])}
    check = graph.materials.rescore(RescoreRequest(check=True))
    assert (check.unstored, check.differing, check.rescored) == (1, 0, 0)
    report = graph.materials.rescore(RescoreRequest(task_id=example.task_ids[0]))
    assert (report.claims, report.unstored, report.differing, report.rescored) == (2, 1, 0, 2)
    assert_sums_hold(graph)
    after = {s["claim_id"]: s for s in graph.materials.scores(example.task_ids[0])}
    assert after.keys() == before.keys()
    for cid, score in after.items():
        assert score["alpha"] == pytest.approx(before[cid]["alpha"], abs=TOLERANCE)
        assert score["beta"] == pytest.approx(before[cid]["beta"], abs=TOLERANCE)
