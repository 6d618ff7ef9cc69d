"""Shared by the learning loop's integration tests: pairs a judge overcalls, a seeded task with one edge per pair,
and a reviewer's correction through the feedback operation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lyra.bootstrap import Services
from lyra.models.trust import FeedbackRequest
from lyra.services.graph_import import load_graph_file

# Invented pairs on which a judge said SUPPORTS and a reviewer says NEUTRAL (on topic, but not measuring the claim).
OVERCALLED = [
    (
        "Coffee drinkers in the cohort reported their sleep hours; caffeine intake was recorded.",
        "Coffee shortens sleep.",
    ),
    ("The trial enrolled runners and measured their shoe wear over a season.", "Cushioned shoes prevent knee injury."),
    ("Teachers logged the minutes of homework assigned each week.", "Homework improves exam results."),
    ("Farmers described the irrigation schedules of 40 vineyards.", "Drip irrigation raises grape yield."),
]


def seed(
    services: Services,
    tmp_path: Path,
    task_id: str,
    pairs: list[tuple[str, str]],
    relation: str,
    confidences: list[float] | None = None,
) -> list[str]:
    """A task whose claims each get one edge of ``relation`` from one fragment (at ``confidences``, default 0.8);
    the edge ids, in pair order."""
    graph: dict[str, Any] = {
        "task": {"id": task_id, "hypothesis": f"hypothesis of {task_id}"},
        "claims": [{"key": f"c{i}", "text": claim} for i, (_, claim) in enumerate(pairs)],
        "pages": [{"key": f"p{i}", "url": f"https://journals.example.org/{task_id}/{i}"} for i in range(len(pairs))],
        "fragments": [{"key": f"f{i}", "page": f"p{i}", "text": text} for i, (text, _) in enumerate(pairs)],
        "edges": [
            {
                "fragment": f"f{i}",
                "claim": f"c{i}",
                "relation": relation,
                "nli_confidence": (confidences or [0.8] * 99)[i],
            }
            for i in range(len(pairs))
        ],
        "citations": [],
    }
    path = tmp_path / f"{task_id}.json"
    path.write_text(json.dumps(graph), encoding="utf-8")
    load_graph_file(path, services.tasks, services.evidence)
    rows = services.store.run("graph/task_subgraph", {"task_id": task_id, "limit": 1000})[0]["edges"]
    by_claim = {e["target"]: e["id"] for e in rows if e["type"] == relation}
    claims = {c["text"]: c["claim_id"] for c in services.store.run("tasks/task_claims", {"task_id": task_id})}
    return [by_claim[claims[claim]] for _, claim in pairs]


def correct(services: Services, task_id: str, edge_id: str, relation: str, reviewer: str, reason: str = "") -> Any:
    args = {"edge_id": edge_id, "correct_relation": relation, **({"reason": reason} if reason else {})}
    return services.operations.feedback(
        FeedbackRequest(task_id=task_id, action="edge_correct", args=args, reviewer_id=reviewer, tags=["t"])
    )
