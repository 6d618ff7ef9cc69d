"""What a read did to the passages of pages read before (decision record 0016), as a job keeps it: the counts of
several ingest runs of one job add up, and a job result names them only when something moved. No Neo4j."""

from __future__ import annotations

from lyra.models.ingest import IngestReport, PassagesMoved
from lyra.services.research import combined_report, report_summary


def report(moved: PassagesMoved) -> IngestReport:
    return IngestReport(task_id="t_one", cause_id="ing_1", claims=[], passages=moved)


def test_a_jobs_reads_add_up_their_passage_moves_and_the_result_names_them_only_when_one_moved() -> None:
    web = report(PassagesMoved(superseded=2, edges_superseded=3))
    papers = report(PassagesMoved(restored=1, edges_restored=1))
    merged = combined_report([web, papers])
    assert merged.passages == PassagesMoved(superseded=2, restored=1, edges_superseded=3, edges_restored=1)
    assert web.passages.superseded == 2 and web.passages.restored == 0  # the first report is copied, not changed
    assert report_summary(merged)["passages"] == {
        "superseded": 2,
        "restored": 1,
        "edges_superseded": 3,
        "edges_restored": 1,
    }
    still = report(PassagesMoved())
    assert not still.passages.any and "passages" not in report_summary(still)
    assert report(PassagesMoved(restored=1)).passages.any
