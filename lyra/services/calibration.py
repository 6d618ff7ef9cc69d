"""Calibration of the NLI judge from human review (decision record 0010: a versioned calibrator).

Samples: each ``NLICorrection`` of a model prediction (the model was wrong) and each human-reviewed edge whose
relation was kept (the model was right), with the judge's raw confidence. ``evaluate`` measures Brier score,
expected calibration error, accuracy and the reliability bins and stores them as a versioned evaluation. ``fit``
fits a Platt (or temperature) calibrator on part of the samples, checks it on the held-out rest (ECE before and
after), and stores it as a new version; it is applied to new edges only when activated, and
``calibration_rollback`` makes an earlier version (or none) the active one.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.core.ids import new_id
from lyra.graph.store import GraphStore, to_plain
from lyra.ml.calibration import Calibrator, Sample, evaluate, fit_and_check
from lyra.models.trust import CalibrationMetricsRequest, CalibrationResponse, CalibrationRollbackRequest

ACTIVE_CACHE_SECONDS = 2.0


@dataclass(frozen=True)
class EdgeSample(Sample):
    edge_id: str = ""


class CalibrationService:
    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._active: tuple[float, Calibrator | None, int | None] = (0.0, None, None)

    # ---------------------------------------------------------------- samples
    def _rows(self) -> list[dict[str, Any]]:
        return [to_plain(r) for r in self.store.run("calibration/reviewed_samples")]

    @staticmethod
    def _samples(rows: list[dict[str, Any]]) -> list[EdgeSample]:
        return [
            EdgeSample(
                predicted_label=r["predicted_label"],
                predicted_confidence=float(r["predicted_confidence"]),
                correct_label=r["correct_label"],
                edge_id=f"{r['source']}:{r['edge_id']}",
            )
            for r in rows
            if r["predicted_confidence"] is not None
        ]

    # ---------------------------------------------------------------- actions
    def metrics(self, request: CalibrationMetricsRequest) -> CalibrationResponse:
        if request.action == "get_stats":
            return CalibrationResponse(action="get_stats", result=self.stats())
        if request.action == "get_evaluations":
            rows = [to_plain(r) for r in self.store.run("calibration/list_evaluations", {"limit": request.limit})]
            for row in rows:
                row["bins"] = json.loads(row["bins"]) if row["bins"] else []
                row["by_source"] = json.loads(row["by_source"]) if row["by_source"] else {}
            return CalibrationResponse(action="get_evaluations", result={"evaluations": rows})
        if request.action == "evaluate":
            return CalibrationResponse(action="evaluate", result=self.evaluate())
        return CalibrationResponse(action="fit", result=self.fit(request.method, request.activate))

    def stats(self) -> dict[str, Any]:
        rows = self._rows()
        latest = [to_plain(r) for r in self.store.run("calibration/list_evaluations", {"limit": 1})]
        if latest:
            latest[0]["bins"] = json.loads(latest[0]["bins"]) if latest[0]["bins"] else []
            latest[0]["by_source"] = json.loads(latest[0]["by_source"]) if latest[0]["by_source"] else {}
        calibrators = [to_plain(r) for r in self.store.run("calibration/list_calibrators")]
        return {
            "samples": len(rows),
            "samples_by_source": dict(Counter(r["source"] for r in rows)),
            "corrected": sum(1 for r in rows if r["source"] == "correction"),
            "reviewed_unchanged": sum(1 for r in rows if r["source"] == "review"),
            "latest_evaluation": latest[0] if latest else None,
            "calibrators": calibrators,
            "active_calibrator": next((c["version"] for c in calibrators if c["active"]), None),
        }

    def evaluate(self) -> dict[str, Any]:
        rows = self._rows()
        samples = self._samples(rows)
        if not samples:
            raise InvalidInputError(
                "action", "no reviewed edges yet: nothing to evaluate", hint="review edges with feedback(edge_correct)"
            )
        report = evaluate(samples)
        by_source: dict[str, Any] = {}
        for source in sorted({r["source"] for r in rows}):
            part = self._samples([r for r in rows if r["source"] == source])
            by_source[source] = {"samples": len(part), "accuracy": sum(s.correct for s in part) / len(part)}
        active = self.active_calibrator()
        stored = self.store.run(
            "calibration/store_evaluation",
            {
                "id": new_id("cev"),
                "samples": report.samples,
                "accuracy": report.accuracy,
                "brier": report.brier,
                "ece": report.ece,
                "mce": report.mce,
                "bins": json.dumps([b.model_dump() for b in report.bins]),
                "calibrator_version": active[1],
                "by_source": json.dumps(by_source),
            },
        )[0]
        out = report.model_dump()
        out.update(
            {"id": stored["id"], "version": stored["version"], "by_source": by_source, "active_calibrator": active[1]}
        )
        if active[0] is not None:
            out["with_active_calibrator"] = evaluate(samples, calibrator=active[0]).model_dump()
        return out

    def fit(self, method: str, activate: bool) -> dict[str, Any]:
        rows = self._rows()
        samples = self._samples(rows)
        try:
            # the split is by edge, so it stays the same as reviews accumulate
            result = fit_and_check(samples, method=method, key=lambda s: getattr(s, "edge_id", repr(s)))  # type: ignore[arg-type]
        except ValueError as exc:
            unusable = len(rows) - len(samples)  # reviews of edges without a recorded confidence are no samples
            note = f" ({unusable} more reviewed edge(s) have no recorded confidence: not samples)" if unusable else ""
            raise InvalidInputError("action", f"cannot fit a calibrator: {exc}{note}") from None
        if activate and not result.improves:
            raise InvalidInputError(
                "activate",
                f"the calibrator does not lower the held-out ECE ({result.before.ece:.3f} -> {result.after.ece:.3f}); "
                "it was not stored or activated",
                hint="fit without activate to store it for inspection",
            )
        stored = self.store.run(
            "calibration/store_calibrator",
            {
                "method": result.calibrator.method,
                "a": result.calibrator.a,
                "b": result.calibrator.b,
                "train_samples": result.train_samples,
                "holdout_samples": result.holdout_samples,
                "ece_before": result.before.ece,
                "ece_after": result.after.ece,
                "brier_before": result.before.brier,
                "brier_after": result.after.brier,
                "improves": result.improves,
                "activate": activate,
            },
        )[0]
        self._forget_active()
        out = result.model_dump()
        out.update({"version": stored["version"], "active": stored["active"]})
        return out

    def rollback(self, request: CalibrationRollbackRequest) -> CalibrationResponse:
        rows = self.store.run("calibration/activate_calibrator", {"version": request.version})
        if not rows and request.version != 0:
            raise NotFoundError(f"no calibrator version {request.version}", hint="calibration_metrics(get_stats)")
        self._forget_active()
        return CalibrationResponse(
            action="calibration_rollback",
            result={"active_version": request.version or None, "versions": [to_plain(r) for r in rows]},
        )

    # ------------------------------------------------------------- application
    def _forget_active(self) -> None:
        with self._lock:
            self._active = (0.0, None, None)

    def active_calibrator(self) -> tuple[Calibrator | None, int | None]:
        """The active calibrator (cached for a couple of seconds: the pipeline asks once per batch of edges)."""
        with self._lock:
            loaded_at, calibrator, version = self._active
            if time.monotonic() - loaded_at < ACTIVE_CACHE_SECONDS and loaded_at:
                return calibrator, version
        active = [to_plain(r) for r in self.store.run("calibration/list_calibrators") if r["active"]]
        calibrator = None
        version = None
        if active:
            row = active[0]
            calibrator = Calibrator(method=row["method"], a=row["a"], b=row["b"])
            version = row["version"]
        with self._lock:
            self._active = (time.monotonic(), calibrator, version)
        return calibrator, version
