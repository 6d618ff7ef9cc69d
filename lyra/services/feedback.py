"""The ``feedback`` tool (decision record 0006): six actions on three levels, and ``page_unblock`` (a page blocked for a
dangerous pattern), each validated in full before anything is
written, each written in one transaction together with its append-only audit event, and each reflected at once
(materials and confidence are computed from the graph on every read)."""

from __future__ import annotations

import json
from typing import Any

from lyra.core.context import current_door
from lyra.core.errors import ConflictError, InvalidInputError, NotFoundError
from lyra.core.ids import new_id
from lyra.graph.store import GraphStore, Transaction, to_plain
from lyra.graph.tasks import TaskRepository
from lyra.models.trust import (
    ARGS_FOR_ACTION,
    ClaimRejectArgs,
    ClaimRestoreArgs,
    DomainRuleArgs,
    EdgeCorrectArgs,
    FeedbackRequest,
    FeedbackResponse,
    PageUnblockArgs,
)
from lyra.models.validation import parse_one
from lyra.services.domains import DomainGate, page_key
from lyra.sources.domain_patterns import lift_host, validate_pattern


def human_judge_name(reviewer_id: str | None) -> str:
    """``human:<reviewer>`` (``human:anonymous`` when the correction names no reviewer)."""
    return f"human:{reviewer_id or 'anonymous'}"


LABEL_FOR_RELATION = {"supports": "entailment", "refutes": "contradiction", "neutral": "neutral"}


class FeedbackService:
    def __init__(
        self, store: GraphStore, tasks: TaskRepository, domains: DomainGate, mcp_edge_correct: str = "allow"
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.domains = domains
        self.mcp_edge_correct = mcp_edge_correct  # "refuse": edge_correct is not taken over MCP (see feedback())

    def feedback(self, request: FeedbackRequest) -> FeedbackResponse:
        self.tasks.get(request.task_id)  # NotFoundError for an unknown task
        if request.action == "edge_correct" and self.mcp_edge_correct == "refuse" and current_door.get() == "mcp":
            # a person's verdict only where the person can be named (docs/concepts/assistant-judge.md)
            raise ConflictError(
                "edge_correct records a person's verdict, and this deployment does not take it over MCP "
                "(LYRA_JUDGING_MCP_EDGE_CORRECT=refuse)",
                hint="give the assistant's verdict with submit_judgments (it counts at assistant rank), or let a "
                "person correct the edge over REST or with `lyra feedback`",
            )
        args = parse_one(ARGS_FOR_ACTION[request.action], request.args, "args")
        event_id = new_id("fbk")
        if isinstance(args, DomainRuleArgs):
            changed, warnings = self._domain(request, args, event_id)
        elif isinstance(args, PageUnblockArgs):
            changed, warnings = self._page(request, args, event_id)
        elif isinstance(args, ClaimRejectArgs | ClaimRestoreArgs):
            changed, warnings = self._claim(request, args, event_id)
        else:
            assert isinstance(args, EdgeCorrectArgs)
            changed, warnings = self._edge(request, args, event_id)
        return FeedbackResponse(
            task_id=request.task_id, action=request.action, event_id=event_id, changed=changed, warnings=warnings
        )

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def _event(tx: Transaction, event_id: str, request: FeedbackRequest, args: Any, result: dict[str, Any]) -> None:
        tx.run(
            "feedback/create_feedback_event",
            {
                "id": event_id,
                "task_id": request.task_id,
                "action": request.action,
                "args": args.model_dump_json(),
                "result": json.dumps(result, default=str),
                "reviewer_id": request.reviewer_id,
                "door": current_door.get(),
            },
        )

    # ----------------------------------------------------------------- domain
    def _domain(
        self, request: FeedbackRequest, args: DomainRuleArgs, event_id: str
    ) -> tuple[dict[str, Any], list[str]]:
        pattern = self._pattern(request, args)
        warnings: list[str] = []

        if request.action == "domain_clear_override":

            def clear(tx: Transaction) -> dict[str, Any]:
                rows = tx.run(
                    "feedback/clear_override_rule",
                    {"event_id": new_id("doe"), "pattern": pattern, "reason": args.reason, "task_id": request.task_id},
                )
                if not rows:
                    raise NotFoundError(
                        f"no active override rule for {pattern!r}",
                        hint="get_status.domain_overrides lists the active rules",
                    )
                result = {
                    "rule_id": rows[0]["rule_id"],
                    "domain_pattern": pattern,
                    "previous": rows[0]["previous"],
                    "decision": "cleared",
                }
                self._event(tx, event_id, request, args, result)
                return result

            return self.store.write_transaction("feedback domain_clear_override", clear), warnings

        decision = "block" if request.action == "domain_block" else "unblock"
        before = self.domains.decide(pattern.removeprefix("*.")) if not pattern.startswith("*.") else None

        def upsert(tx: Transaction) -> dict[str, Any]:
            row = to_plain(
                tx.run(
                    "feedback/upsert_override_rule",
                    {
                        "rule_id": new_id("dor"),
                        "event_id": new_id("doe"),
                        "pattern": pattern,
                        "decision": decision,
                        "reason": args.reason,
                        "action": request.action,
                        "task_id": request.task_id,
                    },
                )[0]
            )
            result = {
                "rule_id": row["rule_id"],
                "domain_pattern": pattern,
                "decision": decision,
                "previous": row["previous"],
                "updated_at": row["updated_at"],
            }
            self._event(tx, event_id, request, args, result)
            return result

        result = self.store.write_transaction(f"feedback {request.action}", upsert)
        if decision == "unblock":  # the task may use again the domains it stopped using for a dangerous page
            cleared = self.domains.clear_task_skips(request.task_id, pattern)
            if cleared:
                result["task_skips_cleared"] = cleared
        if before is not None and decision == "unblock" and before.domain_block_reason:
            risk = before.domain_unblock_risk
            result["lifted"] = {"domain_block_reason": before.domain_block_reason, "domain_unblock_risk": risk}
            if risk == "high":
                warnings.append(
                    f"{pattern} was blocked for {before.domain_block_reason}: the unblock is logged and "
                    "domain_unblock_risk stays high"
                )
        return result, warnings

    def _pattern(self, request: FeedbackRequest, args: DomainRuleArgs) -> str:
        """The rule's pattern. A block needs a pattern one party owns (validate_pattern); lifting a block works for
        any host that carries one: an IP address, ``localhost``, an intranet name or a public suffix is accepted by
        domain_unblock when it is blocked (a dynamic block) or skipped by this task, and by domain_clear_override
        (which only ever removes a rule)."""
        try:
            return validate_pattern(args.domain_pattern, "args.domain_pattern")
        except InvalidInputError as refused:
            host = lift_host(args.domain_pattern) if request.action != "domain_block" else None
            if host is None:
                raise
            if request.action == "domain_clear_override":
                return host
            if self.domains.dynamically_blocked(host) or host in self.domains.task_skips(request.task_id):
                return host
            raise InvalidInputError(
                refused.field,
                f"{refused.reason}; such a host can only be unblocked while it is blocked, and {host!r} is not",
                hint=refused.hint,
            ) from None

    # ------------------------------------------------------------------- page
    def _page(self, request: FeedbackRequest, args: PageUnblockArgs, event_id: str) -> tuple[dict[str, Any], list[str]]:
        key = page_key(args.url)

        def clear(tx: Transaction) -> dict[str, Any]:
            rows = tx.run("security/clear_page_block", {"url": key})
            if not rows:
                raise NotFoundError(
                    f"page {args.url!r} is not blocked (looked up as {key!r})",
                    hint="get_status.blocked_pages lists the blocked pages",
                )
            row = to_plain(rows[0])
            result = {
                "url": row["url"],
                "page_url": row["page_url"],
                "domain": row["domain"],
                "kinds": row["kinds"],
                "finding_id": row["finding_id"],
                "blocked_at": row["blocked_at"],
                "decision": "cleared",
            }
            self._event(tx, event_id, request, args, result)
            return result

        result = self.store.write_transaction("feedback page_unblock", clear)
        warnings = [
            f"page {result['page_url'] or key} may be fetched and read again; it carried a dangerous pattern "
            f"({', '.join(result['kinds'] or [])}) and is scanned again before any model reads it"
        ]
        return result, warnings

    # ------------------------------------------------------------------ claim
    def _claim(
        self, request: FeedbackRequest, args: ClaimRejectArgs | ClaimRestoreArgs, event_id: str
    ) -> tuple[dict[str, Any], list[str]]:
        status = "not_adopted" if request.action == "claim_reject" else "adopted"

        def write(tx: Transaction) -> dict[str, Any]:
            rows = tx.run(
                "feedback/set_claim_adoption",
                {"task_id": request.task_id, "claim_id": args.claim_id, "status": status, "reason": args.reason},
            )
            if not rows:
                raise NotFoundError(
                    f"task {request.task_id!r} has no claim {args.claim_id!r}",
                    hint="get_materials lists the task's claim ids",
                )
            row = to_plain(rows[0])
            result = {
                "claim_id": args.claim_id,
                "previous": row["previous"],
                "claim_adoption_status": row["status"],
                "claim_rejection_reason": row["reason"],
                "claim_rejected_at": row["rejected_at"],
            }
            self._event(tx, event_id, request, args, result)
            return result

        result = self.store.write_transaction(f"feedback {request.action}", write)
        # The claim's domains (those it was extracted from, and those it is a security-rejected source for) get their
        # rates re-checked: a rejection may block (unverified/low) or mark (higher categories) them; a restore may
        # lift a mark (never a block: a person lifts that with domain_unblock).
        domains = self.store.run("domains/claim_domains", {"claim_id": args.claim_id})[0]["domains"]
        check = self.domains.check_rejection_rates(domains)
        if check.blocked:
            result["domains_blocked"] = check.blocked
        if check.flagged:
            result["domains_flagged"] = check.flagged
        return result, check.warnings

    # ------------------------------------------------------------------- edge
    def _edge(self, request: FeedbackRequest, args: EdgeCorrectArgs, event_id: str) -> tuple[dict[str, Any], list[str]]:
        new_type = args.correct_relation.upper()

        def write(tx: Transaction) -> dict[str, Any]:
            rows = tx.run(
                "feedback/correct_edge",
                {
                    "task_id": request.task_id,
                    "edge_id": args.edge_id,
                    "new_type": new_type,
                    "new_label": LABEL_FOR_RELATION[args.correct_relation],
                    "reason": args.reason,
                    "correction_id": new_id("nlc"),
                    "judge": human_judge_name(request.reviewer_id),
                    "judgment_id": new_id("jdg"),
                    "door": current_door.get(),
                },
            )
            if not rows:
                raise NotFoundError(
                    f"task {request.task_id!r} has no stance edge {args.edge_id!r}",
                    hint="get_materials lists evidence[].edge_id for each claim",
                )
            row = rows[0]
            result = {
                "edge_id": row["edge_id"],
                "claim_id": row["claim_id"],
                "previous_relation": row["previous_relation"],
                "relation": row["relation"],
                "nli_confidence": row["nli_confidence"],
                "changed": row["changed"],
                "edge_human_corrected": True,
            }
            self._event(tx, event_id, request, args, result)
            return result

        return self.store.write_transaction("feedback edge_correct", write), []
