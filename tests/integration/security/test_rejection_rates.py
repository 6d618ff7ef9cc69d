"""Claim rejection rates blame the right domains, against the real
Neo4j: a domain's claims are the claims extracted from its pages (plus those it served a dangerous document for);
a manual rejection never counts against a domain for a claim a person wrote, nor against a domain that only gave a
claim evidence; a high combined rate blocks unverified/low domains and only marks the higher categories."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.models.trust import CheckDomainRequest, FeedbackRequest, FeedbackResponse
from lyra.services.domains import DomainGate
from lyra.services.feedback import FeedbackService
from lyra.services.graph_import import load_graph
from lyra.sources.domain_policy import ReloadingDomainPolicy
from tests.support.helpers import ROOT

pytestmark = pytest.mark.neo4j

# Extra category entries for a copy of config/domains.yaml (one domain per category, and one user override).
CATEGORY_ENTRIES = {
    "blog.example.net": "unverified",  # no entry needed: the default category; listed for the tests' table
    "wiki.example.net": "low",
    "news.example.net": "trusted",
    "lab.example.net": "academic",
    "agency.example.net": "government",
    "registry.example.net": "primary",
}
OVERRIDDEN = "notebook.example.net"  # unverified in the domains table, trusted by a user override


@dataclass
class Trust:
    """A domain gate and feedback service over a domains.yaml with one domain of each category."""

    services: Services
    gate: DomainGate
    feedback: FeedbackService

    def send(self, task_id: str, action: str, **args: Any) -> FeedbackResponse:
        request = FeedbackRequest(task_id=task_id, action=action, args=args)
        return self.feedback.feedback(request)

    def rates(self, domain: str) -> dict[str, Any] | None:
        rows = self.gate.rejection_rates([domain])
        return rows[0] if rows else None


@pytest.fixture
def trust(graph: Services, tmp_path: Path) -> Trust:
    config = tmp_path / "domains.yaml"
    shutil.copy(ROOT / "config" / "domains.yaml", config)
    entries = "".join(
        f'  - {{domain: "{name}", category: {category}}}\n'
        for name, category in CATEGORY_ENTRIES.items()
        if category != "unverified"
    )
    text = config.read_text(encoding="utf-8")
    text = text.replace('domains:\n  - {domain: "doi.org"', f'domains:\n{entries}  - {{domain: "doi.org"', 1)
    text = text.replace(
        "user_overrides: []",
        f"user_overrides:\n  - {{domain: {OVERRIDDEN}, domain_category: trusted, reason: reviewed}}",
    )
    config.write_text(text, encoding="utf-8")
    gate = DomainGate(graph.store, ReloadingDomainPolicy(config, check_interval=0), graph.settings.trust)
    for name, category in CATEGORY_ENTRIES.items():
        assert gate.decide(name).domain_category == category, name
    assert gate.decide(OVERRIDDEN).domain_category == "trusted"
    assert gate.policy.current().original_category(OVERRIDDEN) == "unverified"
    return Trust(graph, gate, FeedbackService(graph.store, graph.tasks.tasks, gate))


def passages(services: Services, domain: str, prefix: str, n: int) -> list[str]:
    """n fragments, each on its own page of ``domain``."""
    pages = services.evidence.upsert_pages([{"url": f"https://{domain}/{prefix}/{i}"} for i in range(n)]).ids
    return services.evidence.upsert_fragments(
        [{"page_id": p, "text": f"{prefix} passage {i} from {domain}"} for i, p in enumerate(pages)]
    ).ids


def extracted_claims(services: Services, task_id: str, domain: str, n: int) -> list[str]:
    """A new task with n claims, claim i extracted (as by the LLM) from a passage on page i of ``domain``."""
    services.tasks.create_task(task_id, f"hypothesis of {task_id}", hypothesis_as_claim=False)
    fragments = passages(services, domain, task_id, n)
    return services.tasks.add_claims(task_id, [f"{task_id} claim {i}" for i in range(n)], [[f] for f in fragments])


def stance(services: Services, fragments: list[str], claims: list[str], relation: str) -> None:
    services.evidence.create_stance_edges(
        [
            {"fragment_id": f, "claim_id": c, "relation": relation, "nli_confidence": 0.9}
            for f, c in zip(fragments, claims, strict=True)
        ]
    )


def claim_domains(services: Services, claim_id: str) -> list[str]:
    return sorted(services.store.run("domains/claim_domains", {"claim_id": claim_id})[0]["domains"])


# ----------------------------------------------------------------------------- provenance
def test_extracted_claims_are_linked_to_their_source_fragments_in_the_same_write(graph: Services) -> None:
    graph.tasks.create_task("prov_task", "hypothesis of prov_task", hypothesis_as_claim=False)
    a, b = passages(graph, "blog.example.net", "prov", 2)
    texts = ["from one passage", "from two passages", "written by a person"]
    ids = graph.tasks.add_claims("prov_task", texts, [[a], [a, b, a], []])
    rows = graph.explore.query_graph(
        "MATCH (c:Claim {task_id: 'prov_task'}) OPTIONAL MATCH (c)-[:EXTRACTED_FROM]->(f:Fragment) "
        "RETURN c.id AS claim, collect(f.id) AS fragments"
    ).rows
    sources = {r["claim"]: sorted(r["fragments"]) for r in rows}
    assert sources == {ids[0]: [a], ids[1]: sorted([a, b]), ids[2]: []}  # a repeated id links once
    # claims without sources (the default) are claims a person wrote
    (plain,) = graph.tasks.add_claims("prov_task", ["another person's claim"])
    assert claim_domains(graph, plain) == []
    assert claim_domains(graph, ids[1]) == ["blog.example.net"]


def test_an_unknown_source_fragment_refuses_the_whole_batch_and_writes_nothing(graph: Services) -> None:
    graph.tasks.create_task("prov_bad", "hypothesis of prov_bad", hypothesis_as_claim=False)
    (a,) = passages(graph, "blog.example.net", "bad", 1)
    with pytest.raises(NotFoundError) as info:
        graph.tasks.add_claims("prov_bad", ["fine", "points nowhere"], [[a], ["frg_missing"]])
    assert "frg_missing" in info.value.message
    with pytest.raises(InvalidInputError) as wrong_length:
        graph.tasks.add_claims("prov_bad", ["one", "two"], [[a]])
    assert wrong_length.value.field == "source_fragment_ids"
    with pytest.raises(InvalidInputError) as bare_id:
        graph.tasks.add_claims("prov_bad", ["one"], [a])
    assert bare_id.value.field == "source_fragment_ids[0]"
    with pytest.raises(InvalidInputError) as empty_id:
        graph.tasks.add_claims("prov_bad", ["one"], [[" "]])
    assert empty_id.value.field.startswith("claims[0].source_fragment_ids")
    counts = graph.explore.query_graph("MATCH (c:Claim {task_id: 'prov_bad'}) RETURN count(c) AS n").rows
    assert counts == [{"n": 0}]


def test_a_fragment_found_on_pages_of_two_domains_makes_its_claim_a_claim_of_both(graph: Services) -> None:
    graph.tasks.create_task("two_homes", "hypothesis of two_homes", hypothesis_as_claim=False)
    pages = graph.evidence.upsert_pages(
        [{"url": "https://blog.example.net/copy"}, {"url": "https://news.example.net/original"}]
    ).ids
    fragment_ids = graph.evidence.upsert_fragments([{"page_id": p, "text": "the same passage"} for p in pages]).ids
    assert fragment_ids[0] == fragment_ids[1]  # one fragment, on two pages
    (claim,) = graph.tasks.add_claims("two_homes", ["a claim from the shared passage"], [[fragment_ids[0]]])
    assert claim_domains(graph, claim) == ["blog.example.net", "news.example.net"]
    assert [r["domain"] for r in graph.domains.rejection_rates()] == ["blog.example.net", "news.example.net"]


# ----------------------------------------------------------------------------- who is blamed
def test_a_claim_a_person_wrote_never_moves_any_domains_rejection_rate(trust: Trust) -> None:
    services = trust.services
    domain = "blog.example.net"
    extracted_claims(services, "its_own", domain, 5)  # the domain's own claims: none rejected
    services.tasks.create_task("by_hand", "hypothesis of by_hand", hypothesis_as_claim=False)
    written = services.tasks.add_claims("by_hand", [f"a person's claim {i}" for i in range(6)])
    stance(services, passages(services, domain, "support", 6), written, "SUPPORTS")
    stance(services, passages(services, "wiki.example.net", "refute", 6), written, "REFUTES")
    before = trust.gate.rejection_rates()
    for claim_id in written:
        assert claim_domains(services, claim_id) == []
        out = trust.send("by_hand", "claim_reject", claim_id=claim_id, reason="not what I meant")
        assert out.warnings == [] and "domains_blocked" not in out.changed and "domains_flagged" not in out.changed
    assert trust.gate.rejection_rates() == before
    assert [r["domain"] for r in before] == [domain]  # evidence alone gives wiki.example.net no claims
    assert before[0]["claims"] == 5 and before[0]["domain_claim_combined_rejection_rate"] == 0.0
    assert trust.gate.decide(domain).allowed and trust.gate.decide("wiki.example.net").allowed


def test_a_domain_that_only_refutes_a_rejected_claim_is_not_penalised(trust: Trust) -> None:
    services = trust.services
    source, critic = "blog.example.net", "wiki.example.net"
    claims = extracted_claims(services, "wrong_claims", source, 5)
    stance(services, passages(services, critic, "refutes", 5), claims, "REFUTES")
    extracted_claims(services, "critic_claims", critic, 5)
    stance(services, passages(services, source, "supports", 5), claims, "SUPPORTS")  # its own support adds nothing
    for claim_id in claims:
        assert claim_domains(services, claim_id) == [source]
        trust.send("wrong_claims", "claim_reject", claim_id=claim_id, reason="the refuting sources are right")
    critic_rates = trust.rates(critic)
    assert critic_rates is not None and critic_rates["claims"] == 5
    assert critic_rates["manual_rejected_claims"] == 0 and critic_rates["domain_claim_combined_rejection_rate"] == 0.0
    assert trust.gate.decide(critic).allowed
    source_rates = trust.rates(source)
    assert source_rates is not None and source_rates["claims"] == 5 and source_rates["manual_rejected_claims"] == 5
    assert not trust.gate.decide(source).allowed


@pytest.mark.parametrize("domain", ["blog.example.net", "wiki.example.net"])
def test_rejected_claims_extracted_from_an_unverified_or_low_domain_block_it(trust: Trust, domain: str) -> None:
    claims = extracted_claims(trust.services, "block_task", domain, 5)
    first = trust.send("block_task", "claim_reject", claim_id=claims[0], reason="wrong")
    assert "domains_blocked" not in first.changed and first.warnings == []  # 0.2 is not above 0.3
    second = trust.send("block_task", "claim_reject", claim_id=claims[1], reason="wrong too")
    assert second.changed["domains_blocked"] == [domain]
    assert second.warnings and "blocked" in second.warnings[0] and domain in second.warnings[0]
    decision = trust.gate.decide(domain)
    assert not decision.allowed and decision.domain_block_reason == "high_rejection_rate"
    assert decision.domain_unblock_risk == "low"
    rates = trust.rates(domain)
    assert rates is not None and rates["domain_claim_combined_rejection_rate"] == pytest.approx(0.4)
    assert not rates["domain_rejection_flagged"]
    # a block is lifted by a person only, never by restoring claims
    trust.send("block_task", "claim_restore", claim_id=claims[1])
    assert not trust.gate.decide(domain).allowed


@pytest.mark.parametrize(
    ("domain", "category"),
    [
        ("news.example.net", "trusted"),
        ("lab.example.net", "academic"),
        ("agency.example.net", "government"),
        ("registry.example.net", "primary"),
        (OVERRIDDEN, "trusted"),
    ],
)
def test_rejected_claims_extracted_from_a_higher_category_domain_mark_it_and_never_block_it(
    trust: Trust, domain: str, category: str
) -> None:
    claims = extracted_claims(trust.services, "mark_task", domain, 5)
    trust.send("mark_task", "claim_reject", claim_id=claims[0], reason="wrong")
    assert not trust.rates(domain)["domain_rejection_flagged"]  # type: ignore[index]
    out = trust.send("mark_task", "claim_reject", claim_id=claims[1], reason="wrong too")
    assert out.changed["domains_flagged"] == [domain] and "domains_blocked" not in out.changed
    (warning,) = out.warnings
    assert "marked" in warning and domain in warning and f"a {category} domain" in warning
    for claim_id in claims[2:]:  # every claim rejected: still only marked, and warned once
        again = trust.send("mark_task", "claim_reject", claim_id=claim_id, reason="all wrong")
        assert again.warnings == [] and "domains_blocked" not in again.changed
    decision = trust.gate.decide(domain)
    assert decision.allowed and decision.domain_block_reason is None and decision.domain_category == category
    rates = trust.rates(domain)
    assert rates is not None and not rates["blocked"] and rates["domain_rejection_flagged"]
    assert (
        rates["domain_rejection_flagged_rate"] == pytest.approx(1.0) and rates["domain_rejection_flagged_claims"] == 5
    )
    assert rates["domain_rejection_flagged_at"]
    # restoring claims until the rate is back under the threshold lifts the mark
    for claim_id in claims[:4]:
        trust.send("mark_task", "claim_restore", claim_id=claim_id)
    rates = trust.rates(domain)
    assert rates is not None and rates["domain_claim_combined_rejection_rate"] == pytest.approx(0.2)
    assert not rates["domain_rejection_flagged"] and rates["domain_rejection_flagged_rate"] is None
    assert trust.gate.decide(domain).allowed


def test_check_domain_shows_the_mark_on_an_academic_domain_of_the_shipped_policy(graph: Services) -> None:
    domain = "journals.example.org"  # academic in config/domains.yaml
    claims = extracted_claims(graph, "journal_task", domain, 5)
    for claim_id in claims[:2]:
        graph.feedback.feedback(
            FeedbackRequest(task_id="journal_task", action="claim_reject", args={"claim_id": claim_id, "reason": "no"})
        )
    decision = graph.operations.check_domain(CheckDomainRequest(domain=domain))
    assert decision.allowed and decision.domain_category == "academic"
    assert decision.rejection_rates is not None
    assert decision.rejection_rates["domain_rejection_flagged"] is True
    assert decision.rejection_rates["domain_rejection_flagged_rate"] == pytest.approx(0.4)


# ----------------------------------------------------------------------------- the security side
def test_a_security_rejection_counts_for_the_domain_that_served_the_document_but_a_manual_one_does_not(
    trust: Trust,
) -> None:
    services = trust.services
    services.tasks.create_task("sec_task", "hypothesis of sec_task", hypothesis_as_claim=False)
    (written,) = services.tasks.add_claims("sec_task", ["a person's claim"])
    extracted_claims(services, "evil_own", "evil.example.net", 9)
    trust.gate.record_dangerous_document(
        "sec_task", "evil.example.net", "https://evil.example.net/x", ["role_tag"], "test"
    )
    assert claim_domains(services, written) == ["evil.example.net"]
    rates = trust.rates("evil.example.net")
    assert rates is not None and rates["claims"] == 10 and rates["security_rejected_claims"] == 1
    trust.send("sec_task", "claim_reject", claim_id=written, reason="also wrong")
    after = trust.rates("evil.example.net")
    assert after is not None and after["manual_rejected_claims"] == 0
    assert after["domain_claim_combined_rejection_rate"] == pytest.approx(0.1)


def test_a_hostile_local_file_never_blocks_every_local_file_through_the_rejection_rate(trust: Trust) -> None:
    services = trust.services
    services.tasks.create_task("local_task", "hypothesis of local_task", hypothesis_as_claim=False)
    services.tasks.add_claims("local_task", [f"a person's claim {i}" for i in range(6)])
    trust.gate.record_dangerous_document("local_task", "local", "file:///tmp/hostile.txt", ["role_tag"], "test")
    rates = trust.rates("local")
    assert rates is not None and rates["domain_claim_security_rejection_rate"] == 1.0 and rates["claims"] == 6
    decision = trust.gate.decide("local")
    assert decision.allowed and decision.domain_block_reason is None
    assert rates["domain_rejection_flagged"]  # marked, like a domain of a higher category


def test_an_import_file_cannot_name_source_fragment_ids_for_its_claims(graph: Services) -> None:
    data = {
        "task": {"id": "import_task", "hypothesis": "h"},
        "claims": [{"key": "c1", "text": "a claim", "source_fragment_ids": ["frg_x"]}],
    }
    with pytest.raises(InvalidInputError) as info:
        load_graph(data, graph.tasks, graph.evidence)
    assert info.value.field == "claims[0].source_fragment_ids"
    assert not graph.tasks.tasks.exists("import_task")
