"""`python -m benchmarks.judge_queue`: what the judging queue policies buy, on a real labelled set.

A task is built from claim/abstract pairs of a labelled set (Check-COVID's dev split by default: real claims
against the CORD-19 abstracts they were checked on, labelled SUPPORT / CONTRADICT / NEI). The shipped offline
stance judge (the trained network alone, the ``trained`` judge: no local LLM, which is too slow for a few hundred
abstracts on two cores) draws one edge for each labelled pair; nothing else is judged, so every edge has a gold
label. Each claim's *gold confidence* is the same formula (decision record 0003, ``reference_alpha_beta``) over
the same pairs with the gold labels at the simulated assistant's weight.

A **simulated assistant** (not a model: it looks the gold label up, and answers a wrong label at a chosen rate)
then works through the queue with the real door, ``Operations.next_judgments`` → ``Operations.submit_judgments``
on the real Neo4j, in batches of ``--batch``, for a policy: ``impact``, ``uncertain``, or ``random`` (every
pair's ticket taken at once, then a seeded shuffle of them submitted in the same batches). After each budget of N
assistant judgments the claims' confidences are read back (``materials/claim_scores``, what every reader uses) and
compared with the gold ones: the mean absolute distance, and the share of claims on the gold side of 0.5.

Which pairs the assistant gets wrong is drawn once per (seed, rate), before the policies run, so every policy
meets the same mistakes (common random numbers). Each (policy, rate, seed) runs on a task of its own, removed
afterwards. The ``unjudged`` policy is left out: here every labelled pair already has an offline edge, and the
pairs it would offer (claims against abstracts nobody labelled for them) have no gold label.

The curve and how to read it: docs/concepts/assistant-judge.md ("What the queue policies buy").
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel

from lyra.bootstrap import Services
from lyra.cli.common import handle_errors, open_services, out, settings_from_env
from lyra.core.errors import InvalidInputError
from lyra.ml.factory import Models, judge_settings
from lyra.models.confidence import EdgeEvidence, beta_stats, reference_alpha_beta
from lyra.models.graph import RELATION_FOR_LABEL, offline_judge_name
from lyra.models.judging import (
    JudgmentItem,
    NextJudgmentsRequest,
    SubmitJudgmentsRequest,
    SubmittedJudgment,
    verdict_impact,
)

GOLD_RELATION = {"SUPPORT": "SUPPORTS", "CONTRADICT": "REFUTES", "NEI": "NEUTRAL"}
RELATIONS = ("SUPPORTS", "REFUTES", "NEUTRAL")
POLICIES = ("impact", "uncertain", "random", "impact_doubt")
STATIC_ORDERS = ("random", "impact_doubt")  # orders of the benchmark's own, over every pair's ticket taken at once
DEFAULT_DATA = Path("../shared/training/check_covid_dev.jsonl")
URL_PREFIX = "https://judge-queue.bench.invalid/"
ASSISTANT = "assistant:simulated/gold-with-flips"
SIDE_TOLERANCE = 1e-9
LABEL_FOR_RELATION: dict[str, str] = {relation: label for label, relation in RELATION_FOR_LABEL.items()}


# ---------------------------------------------------------------------------------------------- the data
@dataclass(frozen=True)
class LabelledPair:
    pair_id: str
    claim: str
    passage: str
    title: str
    relation: str  # the gold label as a stance relation (SUPPORTS / REFUTES / NEUTRAL)


def read_pairs(path: Path) -> list[LabelledPair]:
    """The labelled set's pairs (one JSON object a line: pair_id, claim, evidence_text, evidence_title, label)."""
    pairs: list[LabelledPair] = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            label = str(row.get("label", ""))
            if label not in GOLD_RELATION:
                raise InvalidInputError(
                    "--data", f"{path}:{number}: label {label!r} is not one of {list(GOLD_RELATION)}"
                )
            pairs.append(
                LabelledPair(
                    pair_id=str(row["pair_id"]),
                    claim=str(row["claim"]).strip(),
                    passage=str(row["evidence_text"]).strip(),
                    title=str(row.get("evidence_title") or "").strip(),
                    relation=GOLD_RELATION[label],
                )
            )
    return pairs


def read_sentence_pairs(path: Path) -> list[LabelledPair]:
    """The labelled set cut to sentences: each (claim, abstract) becomes one pair per sentence of the abstract
    (``evidence_sentences``), labelled with the abstract's label where the sentence is one of its rationale
    sentences (``rationale_idx``) and NEUTRAL elsewhere. Of a claim listed twice against the same abstract (the
    decisive label and NEI, see :func:`one_label_per_pair`) the decisive listing's rationale is taken."""
    abstracts = {(p.claim, p.passage): p for p in one_label_per_pair(read_pairs(path))}
    rows: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                rows[str(row["pair_id"])] = row
    pairs: list[LabelledPair] = []
    for abstract in abstracts.values():
        row = rows[abstract.pair_id]
        rationale = {int(i) for i in row.get("rationale_idx") or []}
        for index, sentence in enumerate(row.get("evidence_sentences") or []):
            text = str(sentence).strip()
            if not text:
                continue
            relation = abstract.relation if index in rationale else "NEUTRAL"
            pairs.append(LabelledPair(f"{abstract.pair_id}#s{index}", abstract.claim, text, abstract.title, relation))
    return pairs


def one_label_per_pair(pairs: Sequence[LabelledPair]) -> list[LabelledPair]:
    """One pair per (claim, passage). Check-COVID lists about half its claims twice against the same abstract,
    once with the decisive label and once NEI (a verdict on other sentences of it); the abstract as a whole is
    one passage here, so it takes the decisive label. A pair labelled both SUPPORT and CONTRADICT is left out."""
    groups: dict[tuple[str, str], list[LabelledPair]] = defaultdict(list)
    for pair in pairs:
        groups[(pair.claim, pair.passage)].append(pair)
    kept: list[LabelledPair] = []
    for group in groups.values():
        decisive = {p.relation for p in group} - {"NEUTRAL"}
        if len(decisive) > 1:
            continue
        kept.append(next(p for p in group if p.relation in decisive) if decisive else group[0])
    return kept


def choose_claims(pairs: Sequence[LabelledPair], claims: int, seed: int) -> list[LabelledPair]:
    """All the labelled pairs of ``claims`` claims drawn with ``seed`` (a claim keeps every pair it has)."""
    by_claim: dict[str, list[LabelledPair]] = defaultdict(list)
    for pair in one_label_per_pair(pairs):
        by_claim[pair.claim].append(pair)
    names = sorted(by_claim)
    random.Random(seed).shuffle(names)
    return [pair for name in sorted(names[:claims]) for pair in by_claim[name]]


# ---------------------------------------------------------------------------------------------- the metric
def confidence_of(relations: Iterable[tuple[str, float]]) -> float:
    """A claim's confidence (the posterior mean of decision record 0003) from (relation, weight) edges."""
    edges = [EdgeEvidence(relation, weight) for relation, weight in relations]
    return beta_stats(reference_alpha_beta(edges)).confidence


def gold_confidences(gold: dict[tuple[str, str], str], weight: float) -> dict[str, float]:
    """Each claim's confidence with every one of its pairs judged by its gold label at ``weight``.
    ``gold``: (claim id, fragment id) -> relation."""
    per_claim: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (claim_id, _), relation in gold.items():
        per_claim[claim_id].append((relation, weight))
    return {claim_id: confidence_of(edges) for claim_id, edges in per_claim.items()}


def side(confidence: float) -> int:
    """-1 below 0.5, 0 at 0.5 (no net evidence), +1 above."""
    return 0 if abs(confidence - 0.5) <= SIDE_TOLERANCE else (1 if confidence > 0.5 else -1)


@dataclass(frozen=True)
class Distance:
    mean_abs: float  # mean |confidence - gold confidence| over the claims
    right_side: float  # share of claims on the same side of 0.5 as their gold confidence


def distance(confidences: dict[str, float], gold: dict[str, float]) -> Distance:
    """How far the claims' confidences are from the gold ones (every gold claim counts; a claim missing from
    ``confidences`` is an error, not a zero)."""
    missing = sorted(set(gold) - set(confidences))
    if missing:
        raise ValueError(f"no confidence read for claims {missing[:5]}")
    if not gold:
        raise ValueError("no claims")
    gaps = [abs(confidences[c] - g) for c, g in gold.items()]
    same = [side(confidences[c]) == side(g) for c, g in gold.items()]
    return Distance(mean_abs=statistics.fmean(gaps), right_side=sum(same) / len(same))


# ---------------------------------------------------------------------------------------------- the assistant
class SimulatedAssistant:
    """A stand-in for an assistant, not a model: it answers each pair's gold label, except on the pairs drawn as
    its mistakes, where it answers one of the two other labels; always with the same confidence.

    The mistakes are drawn once from ``seed`` over the sorted pairs, so two policies run with the same seed and
    rate meet the same mistakes whatever order they ask in."""

    def __init__(self, gold: dict[str, str], flip_rate: float, confidence: float, seed: int) -> None:
        if not 0.0 <= flip_rate <= 1.0:
            raise ValueError(f"flip rate {flip_rate} is not between 0 and 1")
        self.gold = gold
        self.confidence = confidence
        rng = random.Random(seed)
        self.answers: dict[str, str] = {}
        for pair in sorted(gold):
            wrong = rng.random() < flip_rate
            other = rng.choice([r for r in RELATIONS if r != gold[pair]])
            self.answers[pair] = other if wrong else gold[pair]

    @property
    def mistakes(self) -> int:
        return sum(1 for pair, answer in self.answers.items() if answer != self.gold[pair])

    def verdict(self, ticket: str, pair: str) -> SubmittedJudgment:
        relation = self.answers[pair]
        return SubmittedJudgment(
            ticket=ticket, relation=relation, confidence=self.confidence, rationale=f"simulated: {relation.lower()}"
        )


# ---------------------------------------------------------------------------------------------- the run
class CurvePoint(BaseModel):
    policy: str
    flip_rate: float
    seed: int
    budget: int
    mean_abs: float
    right_side: float


class JudgeQueueResult(BaseModel):
    data: str
    unit: str = "abstract"  # a passage is the whole abstract, or one of its sentences
    claims: int
    pairs: int
    gold_counts: dict[str, int]
    offline_judge: str
    offline_accuracy: float  # share of pairs whose offline relation is the gold one
    offline_counts: dict[str, int]  # the offline judge's relations
    assistant_confidence: float
    batch: int
    seeds: list[int]
    flip_rates: list[float]
    points: list[CurvePoint]
    flagged_items: int
    seconds_offline_judge: float
    seconds_total: float
    date: str
    machine: str


@dataclass
class Built:
    task_id: str
    claim_ids: list[str]
    gold: dict[tuple[str, str], str]  # (claim id, fragment id) -> gold relation
    pair_ids: dict[tuple[str, str], str]  # (claim id, fragment id) -> the data's pair id


def write_passages(
    services: Services, pairs: Sequence[LabelledPair], prefix: str
) -> tuple[dict[str, str], dict[str, str]]:
    """One page (under ``prefix``, academic) and one fragment per distinct passage: passage -> page id, passage ->
    fragment id. ``cleanup/delete_pages_by_url_prefix`` with the same prefix removes them."""
    passages = sorted({p.passage for p in pairs})
    titles = {p.passage: p.title for p in pairs}
    page_list = services.evidence.upsert_pages(
        [
            {"url": f"{prefix}{i}", "title": titles[t] or None, "domain_category": "academic"}
            for i, t in enumerate(passages)
        ]
    ).ids
    page_ids = dict(zip(passages, page_list, strict=True))
    fragment_list = services.evidence.upsert_fragments(
        [{"page_id": page_ids[t], "text": t, "position": 0} for t in passages]
    ).ids
    return page_ids, dict(zip(passages, fragment_list, strict=True))


def build_task(
    services: Services,
    task_id: str,
    pairs: Sequence[LabelledPair],
    page_ids: dict[str, str],
    fragment_ids: dict[str, str],
    verdicts: dict[str, tuple[str, float]],
    judge_name: str,
) -> Built:
    """A task holding the pairs' claims, with the offline judge's verdict on each labelled pair as its edge (the
    same edge fields the ingest writes)."""
    claims = sorted({p.claim for p in pairs})
    services.tasks.create_task(task_id, "Judging queue benchmark", hypothesis_as_claim=False)
    claim_ids = dict(zip(claims, services.tasks.add_claims(task_id, claims), strict=True))
    services.evidence.record_task_reads(task_id, sorted(set(page_ids.values())), "bench")
    edges: list[dict[str, Any]] = []
    gold: dict[tuple[str, str], str] = {}
    pair_ids: dict[tuple[str, str], str] = {}
    for p in pairs:
        relation, confidence = verdicts[p.pair_id]
        claim_id, fragment_id = claim_ids[p.claim], fragment_ids[p.passage]
        gold[(claim_id, fragment_id)] = p.relation
        pair_ids[(claim_id, fragment_id)] = p.pair_id
        label = LABEL_FOR_RELATION[relation]
        edges.append(
            {
                "fragment_id": fragment_id,
                "claim_id": claim_id,
                "relation": relation,
                "nli_label": label,
                "nli_confidence": round(confidence, 6),
                "source_domain_category": "academic",
                "judge": judge_name,
            }
        )
    services.evidence.create_stance_edges(edges)
    return Built(task_id, list(claim_ids.values()), gold, pair_ids)


def read_scores(services: Services, task_id: str) -> dict[str, tuple[float, float]]:
    """claim id -> (alpha, beta), as every reader gets them (``materials/claim_scores``)."""
    row = services.store.run(
        "materials/claim_scores", {"task_id": task_id, "claim_ids": None, "include_not_adopted": True}
    )[0]
    return {str(c): (float(a), float(b)) for c, a, b in zip(row["claim_id"], row["alpha"], row["beta"], strict=True)}


def read_confidences(services: Services, task_id: str) -> dict[str, float]:
    return {c: a / (a + b) for c, (a, b) in read_scores(services, task_id).items()}


def doubt_weighted(items: Sequence[JudgmentItem], scores: dict[str, tuple[float, float]]) -> list[JudgmentItem]:
    """The benchmark's ``impact_doubt`` order, not a policy Lyra offers: each pair's largest possible move (the former
    ``impact`` score, :func:`lyra.models.judging.verdict_impact`, which the review queue keeps) times the chance its
    offline verdict is wrong, taken as ``1 - offline confidence`` (also the offline edge's weight here: no calibrator
    is fitted), largest first. The items come from the ``uncertain`` queue, whose ``policy_score`` is that offline
    confidence. A static order: with one labelled pair per claim, judging one pair changes no other pair's score."""

    def key(item: JudgmentItem) -> tuple[float, str]:
        confidence = item.policy_score
        alpha, beta = scores.get(item.claim_id, (1.0, 1.0))
        impact = verdict_impact(item.current_relation, confidence, alpha, beta)
        return (-impact * (1.0 - confidence), item.claim_id)

    return sorted(items, key=key)


def ticket_pairs(services: Services, tickets: Sequence[str]) -> dict[str, tuple[str, str]]:
    """ticket -> (claim id, fragment id): the simulated assistant's way to find the gold label (a real assistant
    reads the passage instead)."""
    rows = services.store.run("judging/tickets_by_ids", {"ids": list(tickets)})
    return {str(r["id"]): (str(r["claim_id"]), str(r["fragment_id"])) for r in rows}


def run_policy(
    services: Services,
    built: Built,
    policy: str,
    assistant: SimulatedAssistant,
    budgets: Sequence[int],
    batch: int,
    gold_conf: dict[str, float],
    shuffle_seed: int,
) -> tuple[list[tuple[int, Distance]], int]:
    """The loop for one policy on one task: the distance at each budget, and how many items came flagged."""
    ops = services.operations
    task_id = built.task_id
    curve = [(0, distance(read_confidences(services, task_id), gold_conf))]
    flagged = 0
    queue: list[JudgmentItem] = []
    if policy in STATIC_ORDERS:  # every pair's ticket at once (uncertain order), then put in the order's order
        while True:
            items = ops.next_judgments(
                NextJudgmentsRequest(task_id=task_id, limit=50, policy="uncertain", judge=ASSISTANT)
            ).items
            if not items:
                break
            queue.extend(items)
        if policy == "random":
            random.Random(shuffle_seed).shuffle(queue)
        else:
            queue = doubt_weighted(queue, read_scores(services, task_id))
    spent = 0
    targets = sorted(b for b in budgets if b > 0)
    while targets:
        if policy in STATIC_ORDERS:
            items, queue = queue[:batch], queue[batch:]
        else:
            items = ops.next_judgments(
                NextJudgmentsRequest(task_id=task_id, limit=batch, policy=policy, judge=ASSISTANT)  # type: ignore[arg-type]
            ).items
        if not items:
            break
        flagged += sum(1 for i in items if i.flagged)
        where = ticket_pairs(services, [i.ticket for i in items])
        answers = [assistant.verdict(i.ticket, built.pair_ids[where[i.ticket]]) for i in items]
        response = ops.submit_judgments(SubmitJudgmentsRequest(task_id=task_id, items=answers, judge=ASSISTANT))
        if response.errors:
            raise RuntimeError(f"submit_judgments refused items: {response.errors}")
        spent += len(response.written)
        while targets and spent >= targets[0]:
            curve.append((targets.pop(0), distance(read_confidences(services, task_id), gold_conf)))
    if targets:  # the queue ran out before the largest budgets: every pair is judged, the distance stays
        last = distance(read_confidences(services, task_id), gold_conf)
        curve.extend((b, last) for b in targets)
    return curve, flagged


def offline_verdicts(pairs: Sequence[LabelledPair], settings_models: Models) -> dict[str, tuple[str, float]]:
    """The shipped trained network's verdict (relation, confidence) on each labelled pair."""
    judge = settings_models.nli
    results = judge.judge([(p.passage, p.claim) for p in pairs])
    return {p.pair_id: (RELATION_FOR_LABEL[r.label], float(r.confidence)) for p, r in zip(pairs, results, strict=True)}


def run_judge_queue_bench(
    services: Services,
    data: Path,
    claims: int,
    flip_rates: Sequence[float],
    seeds: Sequence[int],
    budgets: Sequence[int],
    batch: int,
    confidence: float,
    policies: Sequence[str] = POLICIES,
    progress: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
    unit: str = "abstract",
) -> JudgeQueueResult:
    started = time.perf_counter()
    labelled = read_sentence_pairs(data) if unit == "sentence" else read_pairs(data)
    pairs = choose_claims(labelled, claims, seed=0)
    run_tag = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    prefix = f"{URL_PREFIX}{run_tag}/"
    page_ids, fragment_ids = write_passages(services, pairs, prefix)
    judge_settings_, experiment = judge_settings(services.settings, "trained")
    models = Models(judge_settings_, experiment=experiment)
    progress(f"offline judge (trained network only) on {len(pairs)} pairs ...")
    t0 = time.perf_counter()
    verdicts = offline_verdicts(pairs, models)
    judge_seconds = time.perf_counter() - t0
    judge_name = offline_judge_name(models.nli.model_id)
    accuracy = sum(1 for p in pairs if verdicts[p.pair_id][0] == p.relation) / len(pairs)
    points: list[CurvePoint] = []
    flagged = 0
    budget_list = sorted(set(budgets) | {0})
    try:
        for rate in flip_rates:
            for seed in seeds:
                for policy in policies:
                    task_id = f"bench_judge_queue_{run_tag}_{policy}_{int(rate * 1000)}_{seed}"
                    built = build_task(services, task_id, pairs, page_ids, fragment_ids, verdicts, judge_name)
                    try:
                        gold_conf = gold_confidences(built.gold, confidence)
                        gold_by_pair = {p.pair_id: p.relation for p in pairs}
                        assistant = SimulatedAssistant(gold_by_pair, rate, confidence, seed)
                        curve, seen_flagged = run_policy(
                            services, built, policy, assistant, budget_list, batch, gold_conf, shuffle_seed=seed
                        )
                        flagged += seen_flagged
                        points.extend(
                            CurvePoint(
                                policy=policy,
                                flip_rate=rate,
                                seed=seed,
                                budget=b,
                                mean_abs=round(d.mean_abs, 6),
                                right_side=round(d.right_side, 6),
                            )
                            for b, d in curve
                        )
                        progress(
                            f"r={rate:g} seed={seed} {policy:9s} "
                            + " ".join(f"N={b}:{d.mean_abs:.3f}" for b, d in curve)
                        )
                    finally:
                        services.cleanup.cleanup(task_id, "soft")
    finally:
        services.store.run(
            "cleanup/delete_pages_by_url_prefix",
            {"prefix": prefix, "batch_size": services.settings.graph.cleanup_batch_size},
        )
    gold_counts = {r: sum(1 for p in pairs if p.relation == r) for r in RELATIONS}
    return JudgeQueueResult(
        data=str(data),
        unit=unit,
        claims=len({p.claim for p in pairs}),
        pairs=len(pairs),
        gold_counts=gold_counts,
        offline_judge=judge_name,
        offline_accuracy=round(accuracy, 4),
        offline_counts={r: sum(1 for v in verdicts.values() if v[0] == r) for r in RELATIONS},
        assistant_confidence=confidence,
        batch=batch,
        seeds=list(seeds),
        flip_rates=list(flip_rates),
        points=points,
        flagged_items=flagged,
        seconds_offline_judge=round(judge_seconds, 1),
        seconds_total=round(time.perf_counter() - started, 1),
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine=f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end",
    )


# ---------------------------------------------------------------------------------------------- tables
def summarise(points: Sequence[CurvePoint]) -> list[dict[str, Any]]:
    """Mean over seeds per (flip rate, budget, policy)."""
    groups: dict[tuple[float, int, str], list[CurvePoint]] = defaultdict(list)
    for p in points:
        groups[(p.flip_rate, p.budget, p.policy)].append(p)
    return [
        {
            "flip_rate": rate,
            "budget": budget,
            "policy": policy,
            "mean_abs": statistics.fmean(p.mean_abs for p in group),
            "right_side": statistics.fmean(p.right_side for p in group),
            "runs": len(group),
        }
        for (rate, budget, policy), group in sorted(groups.items())
    ]


def to_csv(points: Sequence[CurvePoint]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CurvePoint.model_fields))
    writer.writeheader()
    for p in points:
        writer.writerow(p.model_dump())
    return buffer.getvalue()


def to_markdown(result: JudgeQueueResult) -> str:
    """One table per flip rate: budget rows, a column per policy (mean |confidence - gold| over claims, then the
    share of claims on the gold side of 0.5, both averaged over seeds)."""
    rows = summarise(result.points)
    policies = [p for p in POLICIES if any(r["policy"] == p for r in rows)]
    lines = [
        f"Data: `{result.data}`, a passage per {result.unit} ({result.claims} claims, {result.pairs} labelled pairs: "
        + ", ".join(f"{n} {r}" for r, n in result.gold_counts.items())
        + f"). Offline judge `{result.offline_judge}` (trained network only): "
        + ", ".join(f"{n} {r}" for r, n in result.offline_counts.items())
        + f", right on {result.offline_accuracy:.1%} of the pairs; {result.flagged_items} items came flagged. "
        f"Simulated assistant confidence {result.assistant_confidence:g}, batches of {result.batch}, "
        f"seeds {result.seeds}. {result.date}; {result.machine}; "
        f"{result.seconds_total:.0f} s in all.",
        "",
    ]
    for rate in result.flip_rates:
        lines += [
            f"Assistant wrong on {rate:.0%} of pairs: mean |confidence - gold| "
            "(share of claims on the gold side of 0.5)",
            "",
            "| N | " + " | ".join(policies) + " |",
            "| ---: | " + " | ".join("---:" for _ in policies) + " |",
        ]
        for budget in sorted({r["budget"] for r in rows if r["flip_rate"] == rate}):
            cells = []
            for policy in policies:
                match = [r for r in rows if (r["flip_rate"], r["budget"], r["policy"]) == (rate, budget, policy)]
                cells.append(f"{match[0]['mean_abs']:.3f} ({match[0]['right_side']:.0%})" if match else "-")
            lines.append(f"| {budget} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def block_name(unit: str) -> str:
    """The docs block (and the plot's and CSV's file name) of a unit: ``judge-queue``, ``judge-queue-sentence``."""
    return "judge-queue" if unit == "abstract" else f"judge-queue-{unit}"


def markers(name: str) -> tuple[str, str]:
    return (
        f"<!-- {name}:begin (written by python -m benchmarks.judge_queue --docs; do not edit) -->",
        f"<!-- {name}:end -->",
    )


BLOCK_BEGIN, BLOCK_END = markers("judge-queue")


def replace_block(page: str, block: str, name: str = "judge-queue") -> str:
    """``page`` with the text between the block's two markers replaced by ``block`` (the markers stay)."""
    begin, finish = markers(name)
    start, end = page.find(begin), page.find(finish)
    if start < 0 or end < start:
        raise InvalidInputError("--docs", f"the page has no {begin!r} ... {finish!r} block")
    return page[: start + len(begin)] + "\n" + block.strip() + "\n" + page[end:]


def plot(result: JudgeQueueResult, path: Path) -> bool:
    """The curve as a PNG (one panel per flip rate); False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = summarise(result.points)
    fig, axes = plt.subplots(1, len(result.flip_rates), figsize=(4.2 * len(result.flip_rates), 3.4), squeeze=False)
    for ax, rate in zip(axes[0], result.flip_rates, strict=True):
        for policy in POLICIES:
            mine = [r for r in rows if r["flip_rate"] == rate and r["policy"] == policy]
            if mine:
                ax.plot([r["budget"] for r in mine], [r["mean_abs"] for r in mine], marker="o", label=policy)
        ax.set_title(f"assistant wrong on {rate:.0%}")
        ax.set_xlabel("assistant judgments per task (N)")
        ax.set_ylabel("mean |confidence - gold|")
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------- command line
def run(
    data: Path, claims: int, flip_rates: str, seeds: int, budgets: str, batch: int, confidence: float, unit: str
) -> JudgeQueueResult:
    if not data.is_file():
        raise InvalidInputError("--data", f"{data} is not a file (run from the repository root)")
    try:
        rates = [float(x) for x in flip_rates.split(",") if x.strip()]
    except ValueError:
        raise InvalidInputError("--flip-rates", f"{flip_rates!r} is not a comma-separated list of numbers") from None
    try:
        budget_list = [int(x) for x in budgets.split(",") if x.strip()]
    except ValueError:
        raise InvalidInputError("--budgets", f"{budgets!r} is not a comma-separated list of integers") from None
    if any(not 0.0 <= r <= 1.0 for r in rates):
        raise InvalidInputError("--flip-rates", "every rate is between 0 and 1")
    settings = settings_from_env()
    # the benchmark submits faster than an assistant would: the per-task rate limit is lifted for its tasks
    settings = settings.model_copy(
        update={"judging": settings.judging.model_copy(update={"judging_rate_per_minute": 100_000})}
    )
    with open_services(settings) as services:
        return run_judge_queue_bench(
            services, data, claims, rates, list(range(seeds)), budget_list, batch, confidence, unit=unit
        )


app = typer.Typer(add_completion=False, help="What the judging queue policies buy, with a simulated assistant.")


@app.command()
@handle_errors
def main(
    data: Path = typer.Option(DEFAULT_DATA, help="labelled pairs (JSONL: pair_id, claim, evidence_text, label)"),
    claims: int = typer.Option(60, min=2, help="claims drawn from the set (each keeps all its labelled pairs)"),
    flip_rates: str = typer.Option("0,0.1,0.25", help="the simulated assistant's error rates, comma-separated"),
    seeds: int = typer.Option(3, min=1, help="seeds per rate (mistakes drawn and random order shuffled per seed)"),
    budgets: str = typer.Option("5,10,20,30,40,60", help="budgets N at which the distance is read"),
    batch: int = typer.Option(5, min=1, max=50, help="judgments per next_judgments / submit_judgments round"),
    confidence: float = typer.Option(0.9, min=0.01, max=1.0, help="the simulated assistant's stated confidence"),
    unit: str = typer.Option(
        "abstract",
        help="abstract: a passage is the whole abstract, one per claim; sentence: one passage per sentence, "
        "labelled by the rationale sentences (NEUTRAL elsewhere), many per claim",
    ),
    output: Path | None = typer.Option(None, help="folder for judge_queue.csv, judge_queue.md and judge_queue.png"),
    docs: Path | None = typer.Option(
        None, help="a docs page whose judge-queue block gets the tables (and the plot, saved beside it)"
    ),
    from_json: Path | None = typer.Option(
        None, help="no run: write the tables, CSV and plot of a result saved earlier with --json"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """What the judging queue policies buy: a simulated assistant of known accuracy works through the real
    queue; the distance of the claims' confidences from the gold ones, per budget and policy."""
    if unit not in ("abstract", "sentence"):
        raise InvalidInputError("--unit", f"{unit!r} is not abstract or sentence")
    if docs is not None and not docs.is_file():
        raise InvalidInputError("--docs", f"{docs} is not a file")
    if from_json is not None:
        result = JudgeQueueResult.model_validate_json(from_json.read_text(encoding="utf-8"))
    else:
        result = run(data, claims, flip_rates, seeds, budgets, batch, confidence, unit)
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
        (output / "judge_queue.csv").write_text(to_csv(result.points), encoding="utf-8")
        (output / "judge_queue.md").write_text(to_markdown(result), encoding="utf-8")
        plot(result, output / "judge_queue.png")
    if docs is not None:
        name = block_name(result.unit)
        block = to_markdown(result)
        if plot(result, docs.parent / f"{name}.png"):
            block += f"\n![mean distance from the gold confidences by budget]({name}.png)\n"
        (docs.parent / f"{name}.csv").write_text(to_csv(result.points), encoding="utf-8")
        block += f"\nEvery point of every run: [{name}.csv]({name}.csv).\n"
        docs.write_text(replace_block(docs.read_text(encoding="utf-8"), block, name), encoding="utf-8")
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    out.print(to_markdown(result), highlight=False, markup=False)


if __name__ == "__main__":
    app()
