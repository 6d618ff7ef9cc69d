"""Judges: the pull door (``next_judgments`` / ``submit_judgments``) and the review queue.

An assistant takes a batch of (claim, passage) pairs chosen by a policy, judges them and submits the verdicts with
the tickets it was given. Tickets are task-scoped ``(:JudgingTicket)`` nodes (random ids,
``LYRA_JUDGING_TICKET_SECONDS`` to live, at most ``LYRA_JUDGING_MAX_OPEN_TICKETS`` open per task) recording the
pair's edge as it was when the ticket was issued; a ticket is consumed when its verdict is written, and a pair out
on an unexpired ticket is not offered again. Every good item of one call is written by one statement
(``cypher/judging/submit_judgments.cypher``) which decides authority under the claims' locks: a lower judge never
overwrites a higher one (offline 0 < assistant 1 < human 2), the same rank replaces, the claims' stored sums stay
exact, and each change leaves a ``(:Judgment)`` record of the task.

Flagged passages (the injection scan, :mod:`lyra.sources.untrusted`) are *marked*, not withheld: the item carries
the passage fenced, with ``flagged`` and the findings, and an assistant verdict on it weighs no more than the
offline judge's verdict (0 where there is none) until a person confirms the edge with ``feedback`` edge_correct.
A passage that carries Lyra's delimiter prefix (a fake fence) cannot be fenced: it is left out of the queue.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lyra.core.errors import ConflictError, InvalidInputError, RateLimited
from lyra.core.ids import new_id, validate_task_id
from lyra.core.settings import JudgingSettings
from lyra.graph.store import GraphStore, Row, Transaction
from lyra.graph.tasks import TaskRepository
from lyra.models.api import SourceText
from lyra.models.graph import JUDGE_RANK, RELATION_FOR_LABEL
from lyra.models.judging import (
    INSTRUCTIONS_VERSION,
    JUDGE_LABELS,
    JUDGING_INSTRUCTION,
    RATIONALE_MAX,
    ClaimChange,
    ItemError,
    JudgmentItem,
    NextJudgments,
    NextJudgmentsRequest,
    PageInfo,
    ReviewItem,
    ReviewQueue,
    ReviewQueueRequest,
    SubmitJudgmentsRequest,
    SubmitJudgmentsResponse,
    WrittenJudgment,
    posterior_mean,
    review_priority,
    uncertainty_margin,
    verdict_impact,
)
from lyra.sources.injection import Fence
from lyra.sources.untrusted import source_text

UNKNOWN_ASSISTANT = "assistant:unknown"
LABEL_FOR_RELATION: dict[str, str] = {relation: label for label, relation in RELATION_FOR_LABEL.items()}
RATE_WINDOW_SECONDS = 60
HOW_TO_ANSWER = (
    "Look at the passage and the claim; if the edge's relation is wrong (or right, to confirm it), call feedback "
    "with action edge_correct and args {edge_id, correct_relation: supports|refutes|neutral, reason}. The edge "
    "becomes the human judge's (human:<reviewer_id>), which no assistant or offline verdict overwrites."
)
STATUS_MESSAGES = {
    "unknown": "unknown ticket (never issued, already used, or not this task's); take a new batch with next_judgments",
    "expired": "the ticket expired; take a new batch with next_judgments",
    "stale": "the pair's edge changed since the ticket was issued; take a new batch with next_judgments",
    "outranked": "a higher judge (a person) has judged this pair since; an assistant verdict cannot replace it",
}

PendingPairs = Callable[[str], Sequence[tuple[str, str, float]]]


@dataclass(frozen=True)
class Candidate:
    claim_id: str
    fragment_id: str
    edge_id: str | None
    relation: str | None
    judge: str | None
    score: float


def rank_candidates(rows: Sequence[Row], policy: str, judge: str, scores: dict[str, tuple[float, float]]) -> list[Row]:
    """The rows of ``judging/task_edges`` in a policy's order (see :mod:`lyra.models.judging`), each with its
    ``score``. ``scores``: claim id -> (alpha, beta). ``uncertain`` and ``impact`` take the offline judge's edges
    (rank 0); ``disputed`` the assistant edges whose offline verdict differs, except the asking judge's own."""
    chosen: list[Row] = []
    for row in rows:
        if row.get("ticketed"):
            continue
        rank = int(row["judge_rank"])
        if policy == "disputed":
            if rank != JUDGE_RANK["assistant"] or row["judge"] == judge:
                continue
            if row["offline_relation"] is None or row["offline_relation"] == row["relation"]:
                continue
        elif rank != JUDGE_RANK["offline"]:
            continue
        alpha, beta = scores.get(str(row["claim_id"]), (1.0, 1.0))
        impact = verdict_impact(str(row["relation"]), float(row["weight"]), alpha, beta)
        score = uncertainty_margin(row["offline_confidence"]) if policy == "uncertain" else impact
        chosen.append({**row, "score": score})
    if policy == "uncertain":
        chosen.sort(key=lambda r: (r["score"], r["edge_id"]))
    else:
        chosen.sort(key=lambda r: (-r["score"], r["edge_id"]))
    return chosen


def check_item(
    index: int, relation: str, confidence: float, rationale: str | None
) -> tuple[str | None, list[ItemError]]:
    """An item's relation (upper case) and its field errors (label set, confidence 0..1, rationale length)."""
    errors: list[ItemError] = []
    label = relation.strip().upper()
    if label not in JUDGE_LABELS:
        errors.append(ItemError(index=index, field="relation", message=f"{relation!r} is not one of {JUDGE_LABELS}"))
    if not (math.isfinite(confidence) and 0.0 <= confidence <= 1.0):
        errors.append(ItemError(index=index, field="confidence", message=f"{confidence} is not between 0 and 1"))
    if rationale is not None and len(rationale) > RATIONALE_MAX:
        errors.append(
            ItemError(index=index, field="rationale", message=f"{len(rationale)} characters; at most {RATIONALE_MAX}")
        )
    return (label if not errors else None), errors


class JudgingService:
    def __init__(
        self,
        store: GraphStore,
        tasks: TaskRepository,
        settings: JudgingSettings,
        pending_pairs: PendingPairs | None = None,
        *,
        evidence_passage_chars: int = 700,
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.settings = settings
        self.evidence_passage_chars = evidence_passage_chars  # a review item's passage, as materials shows it
        self.pending_pairs = pending_pairs  # the unjudged queue (IngestService.pending_pairs; loads the embedder)

    # ------------------------------------------------------------------ shared
    def _claim_scores(self, task_id: str, claim_ids: Sequence[str] | None) -> dict[str, tuple[float, float]]:
        row = self.store.run(
            "materials/claim_scores",
            {
                "task_id": task_id,
                "claim_ids": None if claim_ids is None else list(claim_ids),
                "include_not_adopted": True,
            },
        )[0]
        return {
            str(cid): (float(a), float(b)) for cid, a, b in zip(row["claim_id"], row["alpha"], row["beta"], strict=True)
        }

    def _passages(self, task_id: str, fragment_ids: Sequence[str]) -> dict[str, Row]:
        rows = self.store.run("judging/passages", {"task_id": task_id, "fragment_ids": list(fragment_ids)})
        return {str(r["fragment_id"]): r for r in rows}

    # ---------------------------------------------------------- next_judgments
    def next_judgments(self, request: NextJudgmentsRequest, judge: str | None = None) -> NextJudgments:
        task_id = request.task_id
        validate_task_id(task_id)
        self.tasks.get(task_id)  # NotFoundError for an unknown task
        judge = judge or request.judge or UNKNOWN_ASSISTANT
        state = self.store.run("judging/task_judging_state", {"task_id": task_id, "seconds": RATE_WINDOW_SECONDS})
        open_tickets = int(state[0]["open_tickets"])
        room = self.settings.judging_max_open_tickets - open_tickets
        if room <= 0:
            raise ConflictError(
                f"task {task_id!r} has {open_tickets} open judging tickets, the most it may hold "
                f"(LYRA_JUDGING_MAX_OPEN_TICKETS={self.settings.judging_max_open_tickets})",
                hint="submit the verdicts of the batches taken, or wait for their tickets to expire "
                f"({self.settings.judging_ticket_seconds} s)",
            )
        limit = min(request.limit, room)
        candidates = self._candidates(task_id, request.policy, judge)
        items: list[tuple[Candidate, dict[str, Any], Fence, str | None]] = []
        used = 0
        for start in range(0, len(candidates), max(limit * 2, 10)):
            chunk = candidates[start : start + max(limit * 2, 10)]
            passages = self._passages(task_id, [c.fragment_id for c in chunk])
            for candidate in chunk:
                used += 1
                row = passages.get(candidate.fragment_id)
                if row is None or row["text"] is None:
                    continue
                shown = source_text(str(row["text"]), self.settings.judging_passage_chars, reveal=True)
                assert shown is not None
                fence = Fence.new()
                try:
                    fenced = fence.wrap(str(shown["text"]), "passage")
                except InvalidInputError:  # carries a delimiter: cannot be fenced, so it is not offered
                    continue
                items.append((candidate, {**shown, "page": row}, fence, fenced))
                if len(items) == limit:
                    break
            if len(items) == limit:
                break
        tickets = [
            {
                "id": new_id("jtk"),
                "claim_id": c.claim_id,
                "fragment_id": c.fragment_id,
                "flagged": bool(shown["flagged"]),
                "policy": request.policy,
                "category": shown["page"]["domain_category"],
            }
            for c, shown, _, _ in items
        ]
        issued = {
            str(r["id"]): r
            for r in self.store.run(
                "judging/issue_tickets",
                {"task_id": task_id, "seconds": self.settings.judging_ticket_seconds, "rows": tickets},
            )
        }
        claim_texts = self._claim_texts(task_id, [c.claim_id for c, _, _, _ in items])
        out: list[JudgmentItem] = []
        for ticket, (candidate, shown, fence, fenced_text) in zip(tickets, items, strict=True):
            written = issued.get(str(ticket["id"]))
            if written is None:
                continue
            page = shown["page"]
            out.append(
                JudgmentItem(
                    ticket=str(ticket["id"]),
                    claim_id=candidate.claim_id,
                    claim=claim_texts.get(candidate.claim_id, ""),
                    passage=SourceText(**{k: v for k, v in shown.items() if k != "page"}),
                    fenced_passage=fenced_text,
                    fence=[fence.open, fence.close],
                    page=PageInfo(
                        url=page["url"],
                        title=SourceText(**source_text(str(page["title"]), 300))  # type: ignore[arg-type]
                        if page["title"] is not None
                        else None,
                        domain_category=page["domain_category"],
                    ),
                    current_relation=candidate.relation,
                    current_judge=candidate.judge,
                    flagged=bool(shown["flagged"]),
                    policy_score=round(candidate.score, 6),
                    expires_at=str(written["expires_at"]),
                )
            )
        return NextJudgments(
            task_id=task_id,
            policy=request.policy,
            instruction=JUDGING_INSTRUCTION,
            labels=list(JUDGE_LABELS),
            instructions_version=INSTRUCTIONS_VERSION,
            items=out,
            remaining=max(0, len(candidates) - used),
        )

    def _claim_texts(self, task_id: str, claim_ids: Sequence[str]) -> dict[str, str]:
        if not claim_ids:
            return {}
        rows = self.store.run("judging/claim_texts", {"task_id": task_id, "claim_ids": sorted(set(claim_ids))})
        return {str(r["claim_id"]): str(r["text"]) for r in rows}

    def _candidates(self, task_id: str, policy: str, judge: str) -> list[Candidate]:
        if policy == "unjudged":
            if self.pending_pairs is None:
                raise ConflictError("the unjudged queue needs the ranking models, which this process does not load")
            held = {
                (str(r["claim_id"]), str(r["fragment_id"]))
                for r in self.store.run("judging/open_ticket_pairs", {"task_id": task_id})
            }
            return [
                Candidate(claim_id, fragment_id, None, None, None, priority)
                for claim_id, fragment_id, priority in self.pending_pairs(task_id)
                if (claim_id, fragment_id) not in held
            ]
        max_rank = JUDGE_RANK["assistant"] if policy == "disputed" else JUDGE_RANK["offline"]
        rows = self.store.run("judging/task_edges", {"task_id": task_id, "max_rank": max_rank})
        scores = self._claim_scores(task_id, None) if policy != "uncertain" else {}
        return [
            Candidate(
                str(r["claim_id"]),
                str(r["fragment_id"]),
                str(r["edge_id"]),
                str(r["relation"]),
                str(r["judge"]),
                float(r["score"]),
            )
            for r in rank_candidates(rows, policy, judge, scores)
        ]

    # -------------------------------------------------------- submit_judgments
    def submit_judgments(self, request: SubmitJudgmentsRequest, judge: str | None = None) -> SubmitJudgmentsResponse:
        task_id = request.task_id
        validate_task_id(task_id)
        self.tasks.get(task_id)
        judge = judge or request.judge or UNKNOWN_ASSISTANT
        if not judge.startswith("assistant:"):
            raise InvalidInputError(
                "judge", "submit_judgments takes assistant judges only (assistant:<client>/<model>)"
            )
        state = self.store.run("judging/task_judging_state", {"task_id": task_id, "seconds": RATE_WINDOW_SECONDS})
        recent = int(state[0]["recent"])
        limit = self.settings.judging_rate_per_minute
        if recent + len(request.items) > limit:
            raise RateLimited(
                f"task {task_id!r} took {recent} assistant judgments in the last minute; {len(request.items)} more "
                f"would pass the limit of {limit} per minute (LYRA_JUDGING_RATE_PER_MINUTE)",
                hint="wait a minute and submit again (the tickets stay valid until they expire)",
            )
        errors: list[ItemError] = []
        tickets = {
            str(r["id"]): r
            for r in self.store.run("judging/tickets_by_ids", {"ids": sorted({i.ticket for i in request.items})})
        }
        seen_tickets: dict[str, int] = {}
        seen_pairs: dict[tuple[str, str], int] = {}
        good: list[dict[str, Any]] = []
        for index, item in enumerate(request.items):
            label, item_errors = check_item(index, item.relation, item.confidence, item.rationale)
            first = seen_tickets.setdefault(item.ticket, index)
            ticket = tickets.get(item.ticket)
            if first != index:
                item_errors.append(ItemError(index=index, field="ticket", message=f"duplicate of items[{first}]"))
            elif ticket is None or ticket["task_id"] != task_id:
                item_errors.append(ItemError(index=index, field="ticket", message=STATUS_MESSAGES["unknown"]))
            elif ticket["expired"]:
                item_errors.append(ItemError(index=index, field="ticket", message=STATUS_MESSAGES["expired"]))
            else:
                pair = (str(ticket["claim_id"]), str(ticket["fragment_id"]))
                other = seen_pairs.setdefault(pair, index)
                if other != index:
                    item_errors.append(
                        ItemError(index=index, field="ticket", message=f"the same pair as items[{other}]")
                    )
            if item_errors:
                errors.extend(item_errors)
                continue
            assert label is not None and ticket is not None
            good.append(
                {
                    "index": index,
                    "claim_id": str(ticket["claim_id"]),
                    "ticket_id": item.ticket,
                    "relation": label,
                    "label": LABEL_FOR_RELATION[label],
                    "confidence": float(item.confidence),
                    "rationale": item.rationale,
                    "judgment_id": new_id("jdg"),
                    "new_edge_id": new_id("edg"),
                }
            )
        written: list[WrittenJudgment] = []
        changes: list[ClaimChange] = []
        if good:
            claim_ids = sorted({g["claim_id"] for g in good})
            before = self._claim_scores(task_id, claim_ids)
            groups = [
                {
                    "claim_id": cid,
                    "items": [{k: v for k, v in g.items() if k != "claim_id"} for g in good if g["claim_id"] == cid],
                }
                for cid in claim_ids
            ]
            params = {
                "task_id": task_id,
                "judge": judge,
                "judge_rank": JUDGE_RANK["assistant"],
                "instructions_version": INSTRUCTIONS_VERSION,
                "claims": groups,
            }

            def write(tx: Transaction) -> list[Row]:
                return tx.run("judging/submit_judgments", params)

            rows = self.store.write_transaction("submit_judgments", write)
            results = {int(x["index"]): (str(r["claim_id"]), x) for r in rows for x in r["results"]}
            changed_claims: set[str] = set()
            for g in good:
                claim_id, result = results.get(g["index"], (g["claim_id"], {"status": "unknown"}))
                status = str(result["status"])
                if status != "ok":
                    errors.append(ItemError(index=g["index"], field="ticket", message=STATUS_MESSAGES[status]))
                    continue
                changed_claims.add(claim_id)
                written.append(
                    WrittenJudgment(
                        index=g["index"],
                        edge_id=str(result["edge_id"]),
                        claim_id=claim_id,
                        relation=g["relation"],
                        previous_relation=result["old_type"],
                        weight=float(result["weight"]),
                    )
                )
            after = self._claim_scores(task_id, sorted(changed_claims))
            for cid in sorted(changed_claims):
                a0, b0 = before.get(cid, (1.0, 1.0))
                a1, b1 = after.get(cid, (1.0, 1.0))
                changes.append(
                    ClaimChange(
                        claim_id=cid,
                        confidence_before=round(posterior_mean(a0, b0), 6),
                        confidence_after=round(posterior_mean(a1, b1), 6),
                    )
                )
        errors.sort(key=lambda e: (e.index, e.field))
        written.sort(key=lambda w: w.index)
        return SubmitJudgmentsResponse(task_id=task_id, judge=judge, written=written, errors=errors, claims=changes)

    # ------------------------------------------------------------ review_queue
    def review_queue(self, request: ReviewQueueRequest) -> ReviewQueue:
        """The edges a person should look at first: by impact, doubled for an offline/assistant disagreement and
        for a flagged passage (:func:`lyra.models.judging.review_priority`); edges a person judged are done."""
        task_id = request.task_id
        validate_task_id(task_id)
        self.tasks.get(task_id)
        rows = self.store.run("judging/task_edges", {"task_id": task_id, "max_rank": JUDGE_RANK["assistant"]})
        scores = self._claim_scores(task_id, None)
        ranked: list[tuple[float, float, bool, Row]] = []
        for row in rows:
            alpha, beta = scores.get(str(row["claim_id"]), (1.0, 1.0))
            impact = verdict_impact(str(row["relation"]), float(row["weight"]), alpha, beta)
            disputed = row["offline_relation"] is not None and row["offline_relation"] != row["relation"]
            priority = review_priority(impact, disputed, bool(row["flagged"]))
            ranked.append((priority, impact, disputed, row))
        ranked.sort(key=lambda x: (-x[0], str(x[3]["edge_id"])))
        top = ranked[: request.limit]
        passages = self._passages(task_id, [str(r["fragment_id"]) for _, _, _, r in top])
        items: list[ReviewItem] = []
        for priority, impact, disputed, row in top:
            passage = passages.get(str(row["fragment_id"]))
            shown = source_text(str(passage["text"]) if passage else "", self.evidence_passage_chars)
            assert shown is not None
            items.append(
                ReviewItem(
                    edge_id=str(row["edge_id"]),
                    claim_id=str(row["claim_id"]),
                    claim=str(row["claim_text"]),
                    fragment_id=str(row["fragment_id"]),
                    passage=SourceText(**shown),
                    relation=str(row["relation"]).lower(),
                    judge=str(row["judge"]),
                    offline_relation=None if row["offline_relation"] is None else str(row["offline_relation"]).lower(),
                    disputed=disputed,
                    flagged=bool(row["flagged"]) or bool(shown["flagged"]),
                    impact=round(impact, 6),
                    priority=round(priority, 6),
                )
            )
        return ReviewQueue(task_id=task_id, items=items, how_to_answer=HOW_TO_ANSWER)
