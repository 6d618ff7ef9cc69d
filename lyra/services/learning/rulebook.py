"""The rule book: the learned rules in force and their history.

An approved rule joins a new rule-set version of its component (append-only ``RuleSetVersion`` nodes); the prompts
read the active rules through :class:`RuleBook` at every judgement; judges carry the version in their id (the NLI
cache key), and ingest stamps it on the edges. :class:`Rules` lists the rules with their predicted and observed
effect (effectiveness tracking), and ``retire_rule`` and ``rollback_rules`` write a new version too; the trained
judge's extra labelled pairs are written at each of its versions (``<state_dir>/learning/stance_trained/``).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from lyra.core.errors import ConflictError, NotFoundError
from lyra.core.settings import LearningSettings
from lyra.graph.store import GraphStore, Transaction, to_plain
from lyra.ml.learned_rules import (
    CLAIM_EXTRACTION,
    EVIDENCE_RANKING,
    STANCE_LLM,
    STANCE_TRAINED,
    LearnedRules,
    RuleSource,
)
from lyra.models.learning import (
    ANONYMOUS,
    ListRulesRequest,
    RetireRuleRequest,
    RollbackRulesRequest,
    Rule,
    RuleList,
    RuleSet,
)
from lyra.services.learning.effects import predicted_text
from lyra.services.learning_rules import EXTRACTION_RECORDS, ActiveRuleFacts


class RuleBook:
    """The active learned rules of each component as the prompts read them, re-read from Neo4j at most every
    ``refresh_seconds`` (and at once after a change made through this process)."""

    def __init__(self, store: GraphStore, refresh_seconds: float = 5.0) -> None:
        self.store = store
        self.refresh_seconds = refresh_seconds
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, LearnedRules]] = {}

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()

    def rules(self, component: str) -> LearnedRules:
        with self._lock:
            cached = self._cache.get(component)
            if cached is not None and time.monotonic() - cached[0] < self.refresh_seconds:
                return cached[1]
        rules = self.load(component)
        with self._lock:
            self._cache[component] = (time.monotonic(), rules)
        return rules

    def load(self, component: str, version: int | None = None) -> LearnedRules:
        """The rules of ``component`` at ``version`` (default: the latest) as a prompt uses them."""
        rows = self.store.run("learning/rule_set", {"component": component, "version": version})
        if not rows:
            return LearnedRules(component)
        rule_set = to_plain(rows[0]["rule_set"])
        ids: list[str] = list(rule_set["rule_ids"])
        by_id = {
            r["id"]: r
            for r in (to_plain(row["rule"]) for row in self.store.run("learning/rules", {"component": component}))
        }
        guidelines: list[str] = []
        examples: list[dict[str, str]] = []
        constraints: list[dict[str, str]] = []
        for rule_id in ids:
            rule = by_id.get(rule_id)
            if rule is None:
                continue
            if rule["rule_type"] == "CONSTRAINT" and component == EVIDENCE_RANKING:
                constraints.append({str(k): str(v) for k, v in json.loads(rule["content"]).items()})
            elif rule["rule_type"] in ("GUIDELINE", "CONSTRAINT"):
                guidelines.append(str(rule["content"]))
            elif rule["rule_type"] in ("NEGATIVE_EXAMPLE", "POSITIVE_EXAMPLE") and component == STANCE_LLM:
                examples.append({str(k): str(v) for k, v in json.loads(rule["content"]).items()})
            elif rule["rule_type"] in ("NEGATIVE_EXAMPLE", "POSITIVE_EXAMPLE") and component in (
                STANCE_TRAINED,
                CLAIM_EXTRACTION,
            ):
                # labelled pairs that join the trained judge's combiner fit and memory while the rule is active;
                # rejected claims ({claim, reason}) the extraction prompt shows and the extractor drops
                examples.extend({str(k): str(v) for k, v in item.items()} for item in json.loads(rule["content"]))
        return LearnedRules(component, int(rule_set["version"]), tuple(guidelines), tuple(examples), tuple(constraints))

    def source(self, component: str) -> RuleSource:
        return lambda: self.rules(component)


class Rules:
    """The learned rules as reviewers see and change them: listed with their effects, retired, rolled back."""

    def __init__(self, store: GraphStore, settings: LearningSettings, state_dir: Path, rulebook: RuleBook) -> None:
        self.store = store
        self.settings = settings
        self.state_dir = state_dir
        self.rulebook = rulebook

    def stored(self, component: str | None) -> list[dict[str, Any]]:
        """The stored rules of ``component`` (None: all), retired ones too."""
        return [to_plain(r["rule"]) for r in self.store.run("learning/rules", {"component": component})]

    def rule_sets(self) -> list[RuleSet]:
        return [RuleSet.model_validate(to_plain(r["rule_set"])) for r in self.store.run("learning/latest_rule_sets")]

    def list_rules(self, request: ListRulesRequest) -> RuleList:
        rules = [
            Rule(
                id=r["id"],
                component=r["component"],
                rule_type=r["rule_type"],
                key=r["key"],
                content=r["content"],
                proposal_id=r["proposal_id"],
                status=r["status"],
                activated_at=r["activated_at"],
                predicted_effect=json.loads(r.get("predicted_effect") or "{}"),
                observed=self._observed(r),
            )
            for r in self.stored(request.component)
            if request.include_retired or r["status"] == "active"
        ]
        sets = [s for s in self.rule_sets() if request.component is None or s.component == request.component]
        return RuleList(rules=rules, rule_sets=sets)

    def report_rows(self) -> list[dict[str, Any]]:
        """The active rules as the report page lists them: predicted and observed effect in words."""
        rows: list[dict[str, Any]] = []
        for rule in self.list_rules(ListRulesRequest()).rules:
            predicted = predicted_text(rule.predicted_effect)
            observed = rule.observed
            seen = f"{observed['kept']} kept, {observed['corrected']} corrected" if observed else "-"
            if observed.get("flag"):
                seen += " (flagged for sunset)"
            rows.append(
                {
                    "id": rule.id,
                    "component": rule.component,
                    "rule_type": rule.rule_type,
                    "content": rule.content,
                    "predicted": predicted,
                    "observed": seen,
                }
            )
        return rows

    def _observed(self, rule: dict[str, Any]) -> dict[str, Any]:
        """Reviews of stance verdicts (or of extracted claims) made while the rule was in force: how many kept the
        label, how many corrected it (effectiveness tracking; a rule whose outputs are corrected more often than
        kept is flagged)."""
        records = {STANCE_LLM: "stance", CLAIM_EXTRACTION: EXTRACTION_RECORDS}.get(rule["component"])
        if records is None:
            return {}
        params = {"component": rule["component"], "rule_id": rule["id"], "records": records}
        rows = self.store.run("learning/rule_observations", params)
        kept, corrected = int(rows[0]["kept"]), int(rows[0]["corrected"])
        out: dict[str, Any] = {"reviews": kept + corrected, "kept": kept, "corrected": corrected}
        if kept + corrected >= self.settings.learning_min_evidence and corrected > kept:
            out["flag"] = "sunset: reviewers corrected more verdicts made under this rule than they kept"
        return out

    def _new_rule_set(self, component: str, rule_ids: list[str], cause: str, reviewer: str, reason: str) -> int:
        def write(tx: Transaction) -> int:
            version = int(
                tx.run(
                    "learning/create_rule_set",
                    {
                        "component": component,
                        "rule_ids": rule_ids,
                        "cause": cause,
                        "reviewer_id": reviewer,
                        "reason": reason,
                    },
                )[0]["version"]
            )
            tx.run(
                "learning/set_rule_statuses",
                {
                    "component": component,
                    "active_ids": rule_ids,
                    "reason": reason,
                    "reviewer_id": reviewer,
                    "cause": cause,
                },
            )
            return version

        version = self.store.write_transaction(f"learning {cause}", write)
        self.rulebook.invalidate()
        if component == STANCE_TRAINED:
            self.write_training_data()
        return version

    def retire_rule(self, request: RetireRuleRequest) -> RuleList:
        """Take an active rule out of its component's rule set (a new version without it)."""
        reviewer = request.reviewer_id or ANONYMOUS
        rule = next((r for r in self.stored(None) if r["id"] == request.id), None)
        if rule is None:
            raise NotFoundError(f"no learned rule {request.id!r}", hint="list_rules lists them")
        if rule["status"] != "active":
            raise ConflictError(f"rule {request.id} is already {rule['status']}")
        if rule["component"] == "calibration":
            raise ConflictError(
                f"rule {request.id} activated a calibrator; calibrators are switched by calibration_rollback",
                hint="calibration_rollback(version) makes another calibrator (or none, 0) active",
            )
        current = self.store.run("learning/rule_set", {"component": rule["component"], "version": None})
        ids = [i for i in to_plain(current[0]["rule_set"])["rule_ids"] if i != request.id] if current else []
        self._new_rule_set(rule["component"], ids, f"retire {request.id}", reviewer, request.reason)
        return self.list_rules(ListRulesRequest(component=rule["component"], include_retired=True))

    def rollback_rules(self, request: RollbackRulesRequest) -> RuleList:
        """Restore the rule set of an earlier version (0: no rules) as a new version."""
        reviewer = request.reviewer_id or ANONYMOUS
        ids: list[str] = []
        if request.version:
            rows = self.store.run("learning/rule_set", {"component": request.component, "version": request.version})
            if not rows:
                raise NotFoundError(f"{request.component} has no rule-set version {request.version}")
            ids = list(to_plain(rows[0]["rule_set"])["rule_ids"])
        self._new_rule_set(request.component, ids, f"rollback to v{request.version}", reviewer, request.reason)
        return self.list_rules(ListRulesRequest(component=request.component, include_retired=True))

    def active_facts(self) -> list[ActiveRuleFacts]:
        """The active rules as the conflict and consolidation checks read them."""
        out: list[ActiveRuleFacts] = []
        for rule in self.stored(None):
            if rule["status"] == "active":
                out.append(
                    ActiveRuleFacts(rule["id"], rule["component"], rule["rule_type"], rule["key"], rule["content"])
                )
        return out

    def training_data_path(self, version: int) -> Path:
        return self.state_dir / "learning" / STANCE_TRAINED / f"data_v{version}.jsonl"

    def write_training_data(self) -> Path | None:
        """The trained judge's extra labelled pairs at the current rule-set version (Lyra's JSONL schema: id,
        premise, hypothesis, label); `lyra train stance --calibration-extra FILE` reads it."""
        rows = self.store.run("learning/rule_set", {"component": STANCE_TRAINED, "version": None})
        if not rows:
            return None
        rule_set = to_plain(rows[0]["rule_set"])
        by_id = {r["id"]: r for r in self.stored(STANCE_TRAINED)}
        lines: list[str] = []
        for rule_id in rule_set["rule_ids"]:
            rule = by_id.get(rule_id)
            if rule is not None:
                lines.extend(json.dumps(pair, ensure_ascii=False) for pair in json.loads(rule["content"]))
        path = self.training_data_path(int(rule_set["version"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        return path
