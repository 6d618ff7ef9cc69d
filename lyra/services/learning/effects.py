"""Effects: a proposal's predicted effect, measured offline before anyone approves it.

A stance proposal: the corrected pairs and a small regression set of real labelled pairs are judged with the rules
in force and with the rules plus the proposal (accuracy, macro-F1, ECE and their deltas; :meth:`EffectMeasurer.
measure_rules`). A claim-extraction rule: claims are extracted again from the rejected claims' passages and from
kept ones' (:meth:`EffectMeasurer.measure_extraction`). A ranking constraint: the evidence's tasks are ranked again
(:meth:`EffectMeasurer.measure_ranking`). Also the effect in words for the report page (:func:`predicted_text`)
and the regression delta the approval checks read (:func:`regression_delta`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from lyra.core.settings import LearningSettings
from lyra.graph.store import GraphStore
from lyra.ml.claims import ClaimExtractor
from lyra.ml.evaluation import LabelledPair, load_pairs, score
from lyra.ml.learned_rules import (
    CLAIM_EXTRACTION,
    EVIDENCE_RANKING,
    STANCE_LLM,
    STANCE_TRAINED,
    LearnedRules,
    RuleSource,
)
from lyra.ml.protocols import Embedder, NLIJudge
from lyra.ml.stance_training import first_per_label

EXTRACTION_CASES = 3  # passages re-extracted per set (rejected, kept) when a claim-extraction rule is measured
SAME_CLAIM = 0.9  # cosine at which an extracted claim is the same claim (ingest's de-duplication threshold)


def _metrics(pairs: Sequence[LabelledPair], results: Sequence[Any], judge: str) -> dict[str, Any]:
    if not pairs:
        return {"pairs": 0}
    evaluation = score(pairs, results, judge, 0.0)
    return {
        "pairs": evaluation.pairs,
        "accuracy": round(evaluation.accuracy, 4),
        "macro_f1": round(evaluation.macro_f1, 4),
        "ece": round(evaluation.ece, 4),
    }


def regression_delta(effect: dict[str, Any]) -> float | None:
    """The measured change on the regression set (None when not measured or the set was empty): macro-F1 for a
    judge, the rate of adopted claims extracted again for claim extraction."""
    regression = effect.get("regression") if effect.get("measured") else None
    if not isinstance(regression, dict) or not regression.get("pairs"):
        return None
    deltas = regression.get("delta", {})
    delta = deltas.get("macro_f1", deltas.get("kept_rate"))  # a judge's macro-F1; claim extraction's kept claims
    return float(delta) if delta is not None else None


def _deltas(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    return {k: round(after[k] - before[k], 4) for k in ("accuracy", "macro_f1", "ece") if k in before and k in after}


def predicted_text(effect: dict[str, Any]) -> str:
    """A proposal's predicted effect in a few words, whatever its kind (for the report page)."""

    def change(part: dict[str, Any], key: str) -> str:
        before, after = part.get("before", {}).get(key), part.get("after", {}).get(key)
        return f"{before} -> {after}" if before is not None and after is not None else "-"

    if not effect.get("measured"):
        return "not measured"
    if effect.get("component") == CLAIM_EXTRACTION:
        return (
            f"rejected claims returned {change(effect.get('rejected', {}), 're_extracted_rate')}; "
            f"kept claims returned {change(effect.get('regression', {}), 'kept_rate')}"
        )
    if effect.get("component") == EVIDENCE_RANKING:
        return (
            f"corrected passages' mean rank {change(effect.get('corrected', {}), 'mean_rank')}, in the top "
            f"{effect.get('top_k')} {change(effect.get('corrected', {}), 'in_top_k')}; kept passages in the top "
            f"{change(effect.get('regression', {}), 'kept_rate')}"
        )
    if "corrected" in effect:
        corrected = effect["corrected"].get("delta", {}).get("accuracy")
        regression = effect.get("regression", {}).get("delta", {}).get("accuracy")
        text = f"accuracy {corrected:+.2f} on corrected pairs" if corrected is not None else "accuracy -"
        return text + (f", {regression:+.2f} on regression pairs" if regression is not None else "")
    return f"ECE {effect.get('ece_before', 0):.3f} -> {effect.get('ece_after', 0):.3f}"


def _rank_summary(ranked: Sequence[tuple[int, int]], top_k: int, rate: str) -> dict[str, Any]:
    """Where reviewed passages rank (1 = first) before and after a ranking rule: the mean rank and the share within
    the top ``top_k`` (named ``rate``), and their deltas."""
    if not ranked:
        return {"pairs": 0, "before": {}, "after": {}, "delta": {}}
    out: dict[str, Any] = {"pairs": len(ranked)}
    for i, side in enumerate(("before", "after")):
        positions = [pair[i] for pair in ranked]
        out[side] = {
            "pairs": len(ranked),
            "mean_rank": round(sum(positions) / len(positions), 3),
            rate: round(sum(p <= top_k for p in positions) / len(positions), 4),
        }
    out["delta"] = {key: round(out["after"][key] - out["before"][key], 4) for key in ("mean_rank", rate)}
    return out


class EffectMeasurer:
    """Measures proposed rules against the rules in force (one measuring judge, built on first use, serialised)."""

    def __init__(
        self,
        store: GraphStore,
        settings: LearningSettings,
        rules: Callable[[str], LearnedRules],
        embedder: Callable[[], Embedder],
        judge_factory: Callable[[RuleSource, RuleSource], NLIJudge] | None = None,
        extractor_factory: Callable[[RuleSource], ClaimExtractor] | None = None,
        rank_task: Callable[[str, Sequence[LearnedRules]], list[dict[str, list[str]]]] | None = None,
    ) -> None:
        """``rules(component)``: the rules in force; ``embedder()``: the embedder of claims; the factories and
        ``rank_task`` as :class:`~lyra.services.learning.LearningService` takes them (None: not measured)."""
        self.store = store
        self.settings = settings
        self._rules_in_force = rules
        self._embedder = embedder
        self._judge_factory = judge_factory
        self._extractor_factory = extractor_factory
        self._rank_task = rank_task
        # what the measuring judge reads, by component
        self._measure_rules = {c: LearnedRules(c) for c in (STANCE_LLM, STANCE_TRAINED)}
        self._measure_judge: NLIJudge | None = None
        self._measure_lock = threading.Lock()

    def regression_pairs(self, exclude: Sequence[LabelledPair] = ()) -> list[LabelledPair]:
        """The first ``learning_regression_per_label`` pairs per label of the regression set (none of ``exclude``)."""
        per_label = self.settings.learning_regression_per_label
        path = self.settings.learning_regression_set
        if not per_label or not path.is_file():
            return []
        skip = {(p.premise, p.hypothesis) for p in exclude}
        pairs = [p for p in load_pairs(path) if (p.premise, p.hypothesis) not in skip]
        return first_per_label(pairs, per_label)

    def measure_rules(self, proposed: LearnedRules, corrected: Sequence[LabelledPair]) -> dict[str, Any]:
        """Judge the corrected pairs and the regression set with the rules in force, then with the ``proposed`` rule
        set of its component (the active one plus the proposal: guidelines or few-shot examples for the stance LLM's
        prompts, labelled examples in the trained judge's combiner fit); their metrics and deltas, and each pair's
        label before and after."""
        if self._judge_factory is None:
            return {"measured": False, "why": "no judge to measure with"}
        in_force = {c: self._rules_in_force(c) for c in (STANCE_LLM, STANCE_TRAINED)}
        current = in_force[proposed.component]
        proposed = replace(proposed, version=current.version + 1)
        regression = self.regression_pairs(exclude=corrected)
        with self._measure_lock:
            if self._measure_judge is None:
                self._measure_judge = self._judge_factory(
                    lambda: self._measure_rules[STANCE_LLM], lambda: self._measure_rules[STANCE_TRAINED]
                )
            judge = self._measure_judge
            out: dict[str, Any] = {"measured": True, "component": proposed.component}
            started = time.perf_counter()
            for name, pairs in (("corrected", list(corrected)), ("regression", regression)):
                texts = [(p.premise, p.hypothesis) for p in pairs]
                self._measure_rules = dict(in_force)
                before_id = judge.model_id
                before = judge.judge(texts) if texts else []
                self._measure_rules = {**in_force, proposed.component: proposed}
                after = judge.judge(texts) if texts else []
                m_before = _metrics(pairs, before, before_id)
                m_after = _metrics(pairs, after, judge.model_id)
                out[name] = {
                    "before": m_before,
                    "after": m_after,
                    "delta": _deltas(m_before, m_after),
                    "pairs": [
                        {
                            "id": p.id,
                            "gold": p.label,
                            "before": b.label,
                            "after": a.label,
                            "after_confidence": round(a.confidence, 4),
                        }
                        for p, b, a in zip(pairs, before, after, strict=True)
                    ],
                }
            if proposed.component == STANCE_TRAINED and proposed.examples and corrected:
                out["corrected_held_out"] = self._held_out(judge, in_force, proposed, list(corrected))
            self._measure_rules = dict(in_force)
        out["judge"] = before_id.split("+rules:")[0]
        out["rules_version_before"] = current.version
        per_label = self.settings.learning_regression_per_label
        out["regression_set"] = f"{self.settings.learning_regression_set.name}: first {per_label} per label"
        out["seconds"] = round(time.perf_counter() - started, 1)
        return out

    def _held_out(
        self, judge: NLIJudge, in_force: dict[str, LearnedRules], proposed: LearnedRules, pairs: list[LabelledPair]
    ) -> dict[str, Any]:
        """What the examples teach beyond the pairs they are: each corrected pair judged with all the proposed
        examples but its own (leave one out; the refitted combiner and the example memory without it). Called under
        the measuring lock."""
        results = []
        for pair in pairs:
            others = tuple(
                ex for ex in proposed.examples if (ex["premise"], ex["hypothesis"]) != (pair.premise, pair.hypothesis)
            )
            self._measure_rules = {**in_force, STANCE_TRAINED: replace(proposed, examples=others)}
            results.extend(judge.judge([(pair.premise, pair.hypothesis)]))
        metrics = _metrics(pairs, results, "leave-one-out")
        return {
            "after": metrics,
            "pairs": [{"id": p.id, "gold": p.label, "after": r.label} for p, r in zip(pairs, results, strict=True)],
            "note": "each pair judged with the other examples only: what a new pair of the pattern would get",
        }

    def measure_extraction(self, proposed: LearnedRules, rejected: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Extract claims again from the passages of the most recent rejected claims, and of as many claims the
        LLM extracted that reviewers kept (the regression set), with the rules in force and with ``proposed``: how
        often the rejected claim (and the kept one) comes back, as an extracted claim at cosine >= ``SAME_CLAIM``."""
        if self._extractor_factory is None:
            return {"measured": False, "why": "no LLM to measure with"}
        current = self._rules_in_force(CLAIM_EXTRACTION)
        proposed = replace(proposed, version=current.version + 1)
        cases = [
            {"id": r["id"], "claim": r["hypothesis"], "passage": r["premise"], "topic": r.get("topic") or ""}
            for r in list(rejected)[-EXTRACTION_CASES:]
        ]
        exclude = [r.get("claim_id") for r in rejected]
        kept = [
            {"id": row["claim_id"], "claim": row["claim"], "passage": row["passage"], "topic": row["topic"] or ""}
            for row in self.store.run(
                "learning/kept_extracted_claims", {"exclude_ids": exclude, "limit": EXTRACTION_CASES}
            )
        ]
        extractor = self._extractor_factory(lambda: current)
        embedder = self._embedder()
        started = time.perf_counter()
        out: dict[str, Any] = {"measured": True, "component": CLAIM_EXTRACTION}
        # the same prompt gives the same answer: then the difference is the rule's alone (the LLM varies per call)
        same_prompt = proposed.guidelines == current.guidelines
        for name, group in (("rejected", cases), ("regression", kept)):
            rows = []
            for case in group:
                passage, topic = str(case["passage"]), str(case["topic"])
                asked = extractor.ask(passage, topic, current)
                again = asked if same_prompt else extractor.ask(passage, topic, proposed)
                found = {"before": extractor.keep(asked, current), "after": extractor.keep(again, proposed)}
                vectors = embedder.embed([str(case["claim"]), *found["before"], *found["after"]])
                scores = vectors[1:] @ vectors[0]
                n = len(found["before"])
                rows.append(
                    {
                        "id": case["id"],
                        "claim": case["claim"],
                        "before": bool(n and float(scores[:n].max()) >= SAME_CLAIM),
                        "after": bool(len(scores) > n and float(scores[n:].max()) >= SAME_CLAIM),
                        "claims_before": found["before"],
                        "claims_after": found["after"],
                    }
                )
            rate = "re_extracted_rate" if name == "rejected" else "kept_rate"
            summary = {
                side: {
                    "pairs": len(rows),
                    rate: round(sum(r[side] for r in rows) / len(rows), 4) if rows else 0.0,
                    "claims_per_passage": round(sum(len(r[f"claims_{side}"]) for r in rows) / len(rows), 2)
                    if rows
                    else 0.0,
                }
                for side in ("before", "after")
            }
            out[name] = {
                **summary,
                "pairs": len(rows),
                "delta": {
                    key: round(summary["after"][key] - summary["before"][key], 4)
                    for key in (rate, "claims_per_passage")
                }
                if rows
                else {},
                "cases": rows,
            }
        out["rules_version_before"] = current.version
        out["seconds"] = round(time.perf_counter() - started, 1)
        return out

    def measure_ranking(
        self, proposed: LearnedRules, corrected: Sequence[dict[str, Any]], kept: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        """Rank the fragments of every claim of the evidence's tasks as ingest does, with the rules in force and
        with ``proposed``: where the corrected verdicts' passages and the kept ones' (the regression set) land —
        their mean rank (1 = first) and the share within the top ``LYRA_NLI_TOP_K`` (the pairs ingest judges)."""
        if self._rank_task is None:
            return {"measured": False, "why": "no ranker to measure with"}
        current = self._rules_in_force(EVIDENCE_RANKING)
        started = time.perf_counter()
        reviewed = [("corrected", list(corrected)), ("regression", list(kept))]
        tasks = sorted({str(r["task_id"]) for _, group in reviewed for r in group})
        ranked_tasks = {t: self._rank_task(t, (current, proposed)) for t in tasks}
        orders = {side: {t: ranked_tasks[t][i] for t in tasks} for i, side in enumerate(("before", "after"))}
        fragments = self._edge_fragments([r["edge_id"] for _, group in reviewed for r in group if r.get("edge_id")])
        top_k = self.settings.nli_top_k
        out: dict[str, Any] = {"measured": True, "component": EVIDENCE_RANKING, "top_k": top_k}
        for name, group in reviewed:
            cases = []
            for record in group:
                fragment = fragments.get(str(record.get("edge_id")))
                ranks: dict[str, int | None] = {}
                for side in ("before", "after"):
                    order = orders[side].get(str(record["task_id"]), {}).get(str(record.get("claim_id")), [])
                    ranks[side] = order.index(fragment) + 1 if fragment in order else None
                cases.append(
                    {
                        "id": record["id"],
                        "task_id": record["task_id"],
                        "claim_id": record.get("claim_id"),
                        "fragment_id": fragment,
                        "domain": record.get("domain"),
                        **ranks,
                    }
                )
            ranked = [(c["before"], c["after"]) for c in cases if c["before"] is not None and c["after"] is not None]
            out[name] = {**_rank_summary(ranked, top_k, "in_top_k" if name == "corrected" else "kept_rate")}
            out[name]["cases"] = cases
        out["rules_version_before"] = current.version
        out["seconds"] = round(time.perf_counter() - started, 1)
        return out

    def _edge_fragments(self, edge_ids: list[str]) -> dict[str, str]:
        """The fragment of each stance edge (by edge id) that still exists."""
        rows = self.store.run("learning/edge_fragments", {"edge_ids": edge_ids}) if edge_ids else []
        return {str(r["edge_id"]): str(r["fragment_id"]) for r in rows}
