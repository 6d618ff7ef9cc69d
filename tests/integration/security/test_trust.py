"""Trust and control against the real Neo4j: the feedback tool's six actions, the single domain decision, blocks
and their unblock risk, rejection rates, edge re-typing, the append-only audit logs, hot reload of the domain policy,
and calibration from human review."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.graph.catalog import CypherCatalog
from lyra.models.api import GetMaterialsRequest, GetStatusRequest, MaterialsOptions
from lyra.models.trust import CalibrationMetricsRequest, CalibrationRollbackRequest, FeedbackRequest
from lyra.services.domains import DomainGate
from lyra.services.graph_import import load_graph_file
from lyra.sources.domain_policy import ReloadingDomainPolicy
from tests.support.helpers import ROOT

pytestmark = pytest.mark.neo4j
TASK = "example_vitamin_d"


@pytest.fixture
def example(graph: Services) -> Services:
    load_graph_file(ROOT / "config/examples/example_graph.json", graph.tasks, graph.evidence)
    return graph


def feedback(services: Services, action: str, task_id: str = TASK, **args: Any) -> Any:
    return services.feedback.feedback(FeedbackRequest(task_id=task_id, action=action, args=args))  # type: ignore[arg-type]


def count(services: Services, label: str) -> int:
    rows = services.explore.query_graph(f"MATCH (n:{label}) RETURN count(n) AS n").rows
    return int(rows[0]["n"])


def materials(services: Services, task_id: str = TASK, **options: Any) -> dict[str, Any]:
    out = services.materials.materials(GetMaterialsRequest(task_id=task_id, options=MaterialsOptions(**options)))
    return {c.claim_id: c for c in out.claims}


# ----------------------------------------------------------------------------- patterns and priority
@pytest.mark.parametrize(
    ("pattern", "accepted"),
    [
        ("example.org", True),
        ("*.example.org", True),
        ("*.example.co.jp", True),
        ("someone.github.io", True),
        ("*", False),
        ("*.*", False),
        ("**", False),
        ("ex*ample.org", False),
        ("*.com", False),
        ("*.co.jp", False),
        ("*.github.io", False),
        ("com", False),
        ("https://example.org", False),
    ],
)
def test_domain_patterns_are_validated_and_a_refused_one_writes_nothing(
    example: Services, pattern: str, accepted: bool
) -> None:
    if accepted:
        out = feedback(example, "domain_block", domain_pattern=pattern, reason="test")
        assert out.changed["domain_pattern"] == pattern.lower()
        assert count(example, "DomainOverrideRule") == count(example, "DomainOverrideEvent") == 1
    else:
        with pytest.raises(InvalidInputError) as info:
            feedback(example, "domain_block", domain_pattern=pattern, reason="test")
        assert info.value.field == "args.domain_pattern"
        assert count(example, "DomainOverrideRule") == count(example, "DomainOverrideEvent") == 0
        assert count(example, "FeedbackEvent") == 0


def test_exact_rule_beats_longer_suffix_beats_shorter_suffix(example: Services) -> None:
    feedback(example, "domain_block", domain_pattern="*.example.org", reason="broad block")
    feedback(example, "domain_unblock", domain_pattern="*.news.example.org", reason="news is fine")
    feedback(example, "domain_block", domain_pattern="bad.news.example.org", reason="this one is not")
    gate = example.domains
    assert not gate.decide("x.example.org").allowed
    decision = gate.decide("daily.news.example.org")
    assert decision.allowed and decision.matched_pattern == "*.news.example.org"
    exact = gate.decide("bad.news.example.org")
    assert (
        not exact.allowed and exact.domain_block_reason == "manual" and exact.matched_pattern == "bad.news.example.org"
    )
    # same pattern again: the rule is updated (newest decision wins), not duplicated
    feedback(example, "domain_unblock", domain_pattern="bad.news.example.org", reason="reviewed again")
    assert gate.decide("bad.news.example.org").allowed
    assert count(example, "DomainOverrideRule") == 3 and count(example, "DomainOverrideEvent") == 4


def test_unblocking_a_dangerous_pattern_block_keeps_the_risk_high_and_logs_it(example: Services) -> None:
    example.domains.block("evil.example.net", "dangerous_pattern", "role tags in a page", "sec_1")
    before = example.domains.decide("evil.example.net")
    assert not before.allowed and before.domain_block_reason == "dangerous_pattern"
    assert before.domain_unblock_risk == "high"
    out = feedback(example, "domain_unblock", domain_pattern="evil.example.net", reason="false positive, checked")
    assert out.warnings and "high" in out.warnings[0]
    after = example.domains.decide("evil.example.net")
    assert after.allowed and after.domain_block_reason == "dangerous_pattern" and after.domain_unblock_risk == "high"
    status = example.status.status(GetStatusRequest(task_id=TASK))
    (blocked,) = [b for b in status.blocked_domains if b.domain == "evil.example.net"]
    assert blocked.domain_unblock_risk == "high" and blocked.override.is_overridden
    assert blocked.override.rule_id == out.changed["rule_id"]
    assert [o.domain_pattern for o in status.domain_overrides] == ["evil.example.net"]
    events = example.store.run("feedback/override_events", {"limit": 10})
    assert [e["action"] for e in events] == ["domain_unblock"]


def test_clear_override_returns_to_the_baseline_and_unknown_rules_are_not_found(example: Services) -> None:
    feedback(example, "domain_block", domain_pattern="journals.example.org", reason="test")
    assert not example.domains.decide("journals.example.org").allowed
    feedback(example, "domain_clear_override", domain_pattern="journals.example.org", reason="undo")
    assert example.domains.decide("journals.example.org").allowed
    with pytest.raises(NotFoundError):
        feedback(example, "domain_clear_override", domain_pattern="journals.example.org", reason="again")
    events = [e["action"] for e in example.store.run("feedback/override_events", {"limit": 10})]
    assert events == ["domain_block", "domain_clear_override"]


def test_a_blocked_domain_is_skipped_by_the_decision_the_fetchers_use(example: Services) -> None:
    feedback(example, "domain_block", domain_pattern="*.example.com", reason="blogs out")
    decision = example.domains.decide("wellness-blog.example.com")
    assert not decision.allowed and decision.domain_category == "blocked"
    assert decision.original_domain_category != "blocked"


# ----------------------------------------------------------------------------- claims and rejection rates
def test_reject_then_restore_a_claim_keeps_it_and_its_edges(example: Services) -> None:
    claims = materials(example)
    claim_id = next(iter(claims))
    edges_before = claims[claim_id].evidence_count
    out = feedback(example, "claim_reject", claim_id=claim_id, reason="too vague")
    assert out.changed["previous"] == "adopted" and out.changed["claim_adoption_status"] == "not_adopted"
    rejected = materials(example)[claim_id]
    assert rejected.claim_adoption_status == "not_adopted" and rejected.claim_rejection_reason == "too vague"
    assert rejected.evidence_count == edges_before
    assert claim_id not in materials(example, include_not_adopted=False)
    feedback(example, "claim_restore", claim_id=claim_id)
    restored = materials(example)[claim_id]
    assert restored.claim_adoption_status == "adopted" and restored.claim_rejection_reason is None
    with pytest.raises(InvalidInputError) as info:
        feedback(example, "claim_reject", claim_id=claim_id)
    assert info.value.field == "args.reason"
    with pytest.raises(NotFoundError):
        feedback(example, "claim_reject", claim_id="clm_nope", reason="x")
    assert count(example, "FeedbackEvent") == 2


def _domain_with_claims(services: Services, domain: str, groups: dict[str, int]) -> dict[str, list[str]]:
    """Tasks (name -> number of claims), each claim extracted from a passage on a page of ``domain`` (which makes it
    one of the domain's claims, decision record 0008) and supported by it."""
    out: dict[str, list[str]] = {}
    for task_id, n in groups.items():
        services.tasks.create_task(task_id, f"hypothesis of {task_id}", hypothesis_as_claim=False)
        pages = services.evidence.upsert_pages([{"url": f"https://{domain}/{task_id}/{i}"} for i in range(n)]).ids
        fragments = services.evidence.upsert_fragments(
            [{"page_id": p, "text": f"{task_id} passage {i}"} for i, p in enumerate(pages)]
        ).ids
        claim_ids = services.tasks.add_claims(
            task_id, [f"{task_id} claim {i}" for i in range(n)], [[f] for f in fragments]
        )
        services.evidence.create_stance_edges(
            [
                {"fragment_id": f, "claim_id": c, "relation": "SUPPORTS", "nli_confidence": 0.8}
                for f, c in zip(fragments, claim_ids, strict=True)
            ]
        )
        out[task_id] = claim_ids
    return out


def test_rejection_rates_count_a_claim_rejected_both_ways_once(graph: Services) -> None:
    claims = _domain_with_claims(graph, "rates.example.org", {"task_sec": 1, "task_other": 4})
    graph.store.run(
        "domains/record_security_finding",
        {
            "id": "sec_t",
            "task_id": "task_sec",
            "domain": "rates.example.org",
            "category": "unverified",
            "url": "https://rates.example.org/x",
            "kinds": ["role_tag"],
            "detail": "test",
        },
    )
    c1 = claims["task_sec"][0]
    feedback(graph, "claim_reject", task_id="task_sec", claim_id=c1, reason="also manually")
    (row,) = graph.domains.rejection_rates(["rates.example.org"])
    assert row["claims"] == 5 and row["security_rejected_claims"] == 1 and row["manual_rejected_claims"] == 1
    assert row["domain_claim_combined_rejection_rate"] == pytest.approx(0.2)  # c1 counted once, not twice
    assert graph.domains.decide("rates.example.org").allowed  # 0.2 is below the 0.3 threshold
    out = feedback(graph, "claim_reject", task_id="task_other", claim_id=claims["task_other"][0], reason="wrong")
    (row,) = graph.domains.rejection_rates(["rates.example.org"])
    assert row["domain_claim_manual_rejection_rate"] == pytest.approx(0.4)
    assert row["domain_claim_combined_rejection_rate"] == pytest.approx(0.4)
    assert out.changed["domains_blocked"] == ["rates.example.org"]
    decision = graph.domains.decide("rates.example.org")
    assert not decision.allowed and decision.domain_block_reason == "high_rejection_rate"
    assert decision.domain_unblock_risk == "low"
    # verification reads evidence only: the security-rejected claim is rejected, the others insufficient
    verified = materials(graph, "task_sec")
    assert verified[c1].source_verification_status == "rejected"
    assert verified[c1].verification_reason == "dangerous_pattern"


def test_too_few_claims_never_block_on_rate(graph: Services) -> None:
    claims = _domain_with_claims(graph, "small.example.org", {"task_small": 2})
    feedback(graph, "claim_reject", task_id="task_small", claim_id=claims["task_small"][0], reason="no")
    feedback(graph, "claim_reject", task_id="task_small", claim_id=claims["task_small"][1], reason="no")
    assert graph.domains.decide("small.example.org").allowed  # 100% rejected, but only 2 < 5 claims


# ----------------------------------------------------------------------------- edges
def _an_edge(services: Services, relation: str) -> tuple[str, str, float]:
    for claim in materials(services).values():
        for e in claim.evidence:
            if e.relation == relation:
                return claim.claim_id, e.edge_id, e.nli_confidence
    raise AssertionError(f"no {relation} edge")


def test_edge_correct_retypes_the_edge_keeps_its_id_and_materials_show_it(example: Services) -> None:
    claim_id, edge_id, confidence = _an_edge(example, "refutes")
    before = materials(example)[claim_id]
    out = feedback(example, "edge_correct", edge_id=edge_id, correct_relation="supports", reason="misread")
    assert out.changed["changed"] and out.changed["previous_relation"] == "refutes"
    after = materials(example)[claim_id]
    (item,) = [e for e in after.evidence if e.edge_id == edge_id]
    assert item.relation == "supports" and item.nli_confidence == 1.0 and item.edge_human_corrected
    assert after.alpha == pytest.approx(before.alpha + 1.0)
    assert after.beta == pytest.approx(before.beta - confidence)
    rows = example.explore.query_graph(
        "MATCH ()-[r {id: $id}]->() RETURN type(r) AS t, r.nli_label AS label, r.source_domain_category AS cat",
        {"id": edge_id},
    ).rows
    assert rows == [{"t": "SUPPORTS", "label": "entailment", "cat": rows[0]["cat"]}] and rows[0]["cat"]
    (sample,) = example.explore.query_graph(
        "MATCH (n:NLICorrection) RETURN n.edge_id AS e, n.predicted_label AS p, n.predicted_confidence AS c, "
        "n.correct_label AS ok, n.premise AS premise, n.hypothesis AS hypothesis"
    ).rows
    assert sample["e"] == edge_id and sample["p"] == "refutes" and sample["ok"] == "supports"
    assert sample["c"] == pytest.approx(confidence) and sample["premise"] and sample["hypothesis"]


def test_edge_review_without_change_marks_it_reviewed_and_stores_no_correction(example: Services) -> None:
    _claim_id, edge_id, confidence = _an_edge(example, "supports")
    out = feedback(example, "edge_correct", edge_id=edge_id, correct_relation="supports")
    assert not out.changed["changed"] and out.changed["nli_confidence"] == pytest.approx(confidence)
    assert count(example, "NLICorrection") == 0
    with pytest.raises(NotFoundError):
        feedback(example, "edge_correct", edge_id="edg_missing", correct_relation="neutral")
    with pytest.raises(InvalidInputError) as info:
        feedback(example, "edge_correct", edge_id=edge_id, correct_relation="maybe")
    assert info.value.field == "args.correct_relation"


def test_unknown_action_and_unknown_args_are_refused(example: Services) -> None:
    with pytest.raises(InvalidInputError) as info:
        example.operations.feedback(
            FeedbackRequest.model_validate(
                {
                    "task_id": TASK,
                    "action": "domain_block",
                    "args": {"domain_pattern": "a.example.org", "reason": "x", "colour": "red"},
                }
            )
        )
    assert info.value.field == "args.colour"
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        FeedbackRequest.model_validate({"task_id": TASK, "action": "domain_nuke", "args": {}})


# ----------------------------------------------------------------------------- audit log
def test_audit_logs_have_no_update_or_delete_path() -> None:
    catalog = CypherCatalog.load(ROOT / "cypher")
    audited = (
        "DomainOverrideEvent",
        "FeedbackEvent",
        "NLICorrection",
        "SecurityFinding",
        "FeedbackRecord",
        "ProposalReview",
        "RuleSetVersion",
    )
    for query in catalog:
        if query.name.startswith("admin/"):
            continue  # wiping a test database is not an application path
        body = "\n".join(line for line in query.text.splitlines() if not line.lstrip().startswith("//"))
        for label in audited:
            if label not in body:
                continue
            assert f"MERGE (e:{label}" not in body and f"MERGE (:{label}" not in body, query.name
            for var in ("e", "n", "s", "x", "r", "v"):
                if f"({var}:{label}" in body:
                    for verb in (f"SET {var}.", f"DELETE {var}", f"REMOVE {var}.", f"{var} += "):
                        assert verb not in body, f"{query.name} changes {label}"


# ----------------------------------------------------------------------------- hot reload
def test_user_overrides_in_domains_yaml_apply_without_restart(graph: Services, tmp_path: Path) -> None:
    config = tmp_path / "domains.yaml"
    shutil.copy(ROOT / "config" / "domains.yaml", config)
    gate = DomainGate(graph.store, ReloadingDomainPolicy(config, check_interval=0), graph.settings.trust)
    assert gate.decide("blog.example.net").domain_category == "unverified"
    text = config.read_text(encoding="utf-8").replace(
        "user_overrides: []",
        "user_overrides:\n  - {domain: blog.example.net, domain_category: trusted, qps: 0.2, reason: reviewed}",
    )
    assert text != config.read_text(encoding="utf-8")
    config.write_text(text, encoding="utf-8")
    stamp = time.time() + 5
    os.utime(config, (stamp, stamp))
    decision = gate.decide("blog.example.net")
    assert decision.domain_category == "trusted" and decision.qps == 0.2
    assert gate.decide("other.example.net").domain_category == "unverified"


# ----------------------------------------------------------------------------- calibration
def _reviewed_edges(services: Services, n: int = 400, seed: int = 5) -> None:
    """n edges judged with confidence p in [0.5, 1]; a reviewer finds the label right with probability 2p - 1 (a
    strongly over-confident judge: expected calibration error about 0.25), and corrects it otherwise."""
    rng = random.Random(seed)
    services.tasks.create_task("calib", "calibration task", hypothesis_as_claim=False)
    claims = services.tasks.add_claims("calib", [f"calibration claim {i}" for i in range(n)])
    pages = services.evidence.upsert_pages([{"url": f"https://calib.example.org/{i}"} for i in range(n)]).ids
    fragments = services.evidence.upsert_fragments(
        [{"page_id": p, "text": f"calibration passage {i}"} for i, p in enumerate(pages)]
    ).ids
    confidences = [rng.uniform(0.5, 1.0) for _ in range(n)]
    edge_ids = services.evidence.create_stance_edges(
        [
            {"fragment_id": f, "claim_id": c, "relation": "SUPPORTS", "nli_confidence": round(p, 4)}
            for f, c, p in zip(fragments, claims, confidences, strict=True)
        ]
    ).ids
    for edge_id, p in zip(edge_ids, confidences, strict=True):
        right = rng.random() < 2 * p - 1
        feedback(
            services,
            "edge_correct",
            task_id="calib",
            edge_id=edge_id,
            correct_relation="supports" if right else "refutes",
        )


def test_calibration_evaluates_fits_versions_and_rolls_back(graph: Services) -> None:
    _reviewed_edges(graph)
    calibration = graph.calibration
    stats = calibration.metrics(CalibrationMetricsRequest(action="get_stats")).result
    assert stats["samples"] == 400 and stats["corrected"] + stats["reviewed_unchanged"] == 400
    first = calibration.metrics(CalibrationMetricsRequest(action="evaluate")).result
    assert first["version"] == 1 and len(first["bins"]) == 10 and 0 < first["ece"] < 1
    assert first["accuracy"] == pytest.approx(stats["reviewed_unchanged"] / 400)
    fitted = calibration.metrics(CalibrationMetricsRequest(action="fit")).result
    assert fitted["version"] == 1 and not fitted["active"]
    assert fitted["improves"] and fitted["after"]["ece"] < fitted["before"]["ece"]  # held-out, over-confident judge
    assert calibration.active_calibrator() == (None, None)  # not applied until activated
    second = calibration.metrics(CalibrationMetricsRequest(action="fit", activate=True)).result
    assert second["version"] == 2 and second["active"]
    assert calibration.metrics(CalibrationMetricsRequest(action="fit", method="temperature")).result["version"] == 3
    assert calibration.active_calibrator()[1] == 2
    calibration.rollback(CalibrationRollbackRequest(version=1))
    assert calibration.active_calibrator()[1] == 1
    calibration.rollback(CalibrationRollbackRequest(version=0))
    assert calibration.active_calibrator() == (None, None)
    with pytest.raises(NotFoundError):
        calibration.rollback(CalibrationRollbackRequest(version=9))
    evaluations = calibration.metrics(CalibrationMetricsRequest(action="get_evaluations")).result["evaluations"]
    assert [e["version"] for e in evaluations] == [1]
