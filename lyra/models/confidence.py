"""The Bayesian confidence model of decision record 0003, as plain math.

alpha and beta are aggregated inside Neo4j by the one Cypher that computes confidence,
cypher/materials/claim_scores.cypher (get_materials: ``MaterialsService.materials``; scores only:
``MaterialsService.scores``); the functions here derive the statistics from them, and
:func:`reference_alpha_beta` is the pure-Python twin of that aggregation, used by property tests and the
benchmark's fetch-into-Python path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

PRIOR_ALPHA = 1.0
PRIOR_BETA = 1.0


@dataclass(frozen=True)
class EdgeEvidence:
    relation: str  # SUPPORTS | REFUTES | NEUTRAL
    nli_confidence: float
    edge_human_corrected: bool = False


@dataclass(frozen=True)
class Posterior:
    alpha: float
    beta: float
    supports_count: int = 0
    refutes_count: int = 0
    neutral_count: int = 0


class BetaStats(BaseModel):
    confidence: float
    uncertainty: float
    controversy: float
    alpha: float
    beta: float
    evidence_count: int


def edge_weight(edge: EdgeEvidence) -> float:
    """A human-corrected edge counts fully; otherwise the NLI confidence is the weight."""
    return 1.0 if edge.edge_human_corrected else float(edge.nli_confidence)


def reference_alpha_beta(edges: Iterable[EdgeEvidence]) -> Posterior:
    """Beta(1,1) updated by SUPPORTS (alpha) and REFUTES (beta); NEUTRAL carries no information."""
    alpha, beta = PRIOR_ALPHA, PRIOR_BETA
    counts = {"SUPPORTS": 0, "REFUTES": 0, "NEUTRAL": 0}
    for edge in edges:
        counts[edge.relation] += 1
        if edge.relation == "SUPPORTS":
            alpha += edge_weight(edge)
        elif edge.relation == "REFUTES":
            beta += edge_weight(edge)
    return Posterior(alpha, beta, counts["SUPPORTS"], counts["REFUTES"], counts["NEUTRAL"])


def beta_stats(posterior: Posterior) -> BetaStats:
    """confidence = mean, uncertainty = standard deviation of Beta(alpha, beta),
    controversy = min(alpha-1, beta-1) / (alpha+beta-2), 0 without evidence.

    ``evidence_count`` counts the edges that update the posterior (SUPPORTS + REFUTES).
    Values are not rounded here (callers round for display only).
    """
    a, b = posterior.alpha, posterior.beta
    total = a + b
    confidence = a / total
    uncertainty = math.sqrt((a * b) / (total * total * (total + 1.0)))
    evidence = total - 2.0
    controversy = min(a - 1.0, b - 1.0) / evidence if evidence > 0 else 0.0
    return BetaStats(
        confidence=confidence,
        uncertainty=uncertainty,
        controversy=controversy,
        alpha=a,
        beta=b,
        evidence_count=posterior.supports_count + posterior.refutes_count,
    )


def credible_intervals(
    alphas: Sequence[float], betas: Sequence[float], mass: float = 0.95
) -> list[tuple[float, float]]:
    """Central credible intervals of Beta(alpha, beta), vectorised (one call for every claim of a task)."""
    from scipy.stats import beta as beta_dist

    if not alphas:
        return []
    tail = (1.0 - mass) / 2.0
    a = np.asarray(alphas, dtype=np.float64)
    b = np.asarray(betas, dtype=np.float64)
    low = beta_dist.ppf(tail, a, b)
    high = beta_dist.ppf(1.0 - tail, a, b)
    return [(float(lo), float(hi)) for lo, hi in zip(low, high, strict=True)]
