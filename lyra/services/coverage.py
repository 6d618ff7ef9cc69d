"""Which (claim, fragment) pairs of a task are judged: coverage by relevance, not by a per-job count.

A task's candidate pairs are its claims against every fragment of every page the task read (``(Task)-[:READ]->``).
For each pair the absolute relevance of :mod:`lyra.ml.relevance` is computed; a pair is a *candidate* when it reaches
``LYRA_RELEVANCE_FLOOR`` and the fragment is not one of the claim's own sources. Candidates without a stance edge are
*pending*; they are judged best first (relevance times the category weight of the best of the task's pages carrying
the fragment), as many as the task's budget of judged pairs (``LYRA_TASK_PAIR_BUDGET``) still allows.

Everything here depends on the pair alone (its texts, embeddings and the task's pages), never on which job brought a
document in, so a task's edges are the same however its targets were split into jobs (as long as the budget lasts).

No circular evidence: a claim extracted from a fragment is never judged against that fragment, nor against a fragment
whose embedding is a near duplicate of it (cosine at or above ``LYRA_NEAR_DUPLICATE_THRESHOLD``): a passage does not
support the claim that was read out of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class ClaimToJudge:
    claim_id: str
    text: str
    source_ids: frozenset[str] = frozenset()  # fragments the claim was extracted from
    judged: dict[str, str] = field(default_factory=dict)  # fragment id -> relation of its existing stance edge


@dataclass(frozen=True)
class FragmentToJudge:
    fragment_id: str
    text: str
    vector: npt.NDArray[np.float32]
    weight: float  # the best category weight (times any learned penalty) of the task's pages carrying it
    category: str | None  # that page's domain category


@dataclass(frozen=True)
class ClaimCoverage:
    claim_id: str
    fragments: int  # the task's fragments at ranking time
    candidates: int  # at or above the floor, own sources left out
    below_floor: int
    own_source: int  # left out as the claim's own source (or a near duplicate of one)
    judged: int  # candidates that have a stance edge

    @property
    def pending(self) -> int:
        return self.candidates - self.judged

    def row(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "fragments": self.fragments,
            "candidates": self.candidates,
            "below_floor": self.below_floor,
            "own_source": self.own_source,
            "judged": self.judged,
        }


@dataclass(frozen=True)
class PendingPair:
    claim_index: int
    fragment_index: int
    relevance: float
    priority: float


@dataclass
class PairPlan:
    coverage: list[ClaimCoverage]
    pending: list[PendingPair]  # best first
    existing: dict[tuple[int, int], str]  # (claim, fragment) candidates already judged -> relation

    @property
    def candidates(self) -> int:
        return sum(c.candidates for c in self.coverage)

    @property
    def below_floor(self) -> int:
        return sum(c.below_floor for c in self.coverage)

    @property
    def own_source(self) -> int:
        return sum(c.own_source for c in self.coverage)


def own_source_mask(
    claims: Sequence[ClaimToJudge],
    fragments: Sequence[FragmentToJudge],
    vectors: npt.NDArray[np.float32],
    source_vectors: Callable[[Sequence[str]], npt.NDArray[np.float32]],
    near_duplicate: float,
) -> npt.NDArray[np.bool_]:
    """(claims x fragments) True where the fragment is the claim's own source or a near duplicate of one.
    ``source_vectors`` gives the embeddings of source fragments that are not among ``fragments``."""
    mask = np.zeros((len(claims), len(fragments)), dtype=bool)
    position = {f.fragment_id: j for j, f in enumerate(fragments)}
    for i, claim in enumerate(claims):
        if not claim.source_ids:
            continue
        known = [position[s] for s in claim.source_ids if s in position]
        outside = sorted(s for s in claim.source_ids if s not in position)
        parts = [vectors[known]] if known else []
        if outside:
            extra = source_vectors(outside)
            if len(extra):
                parts.append(np.asarray(extra, dtype=np.float32))
        mask[i, known] = True
        if parts and len(fragments):
            sources = np.vstack(parts)
            mask[i] |= (vectors @ sources.T).max(axis=1) >= near_duplicate
    return mask


def plan_pairs(
    claims: Sequence[ClaimToJudge],
    fragments: Sequence[FragmentToJudge],
    relevance: npt.NDArray[np.float32],
    own_source: npt.NDArray[np.bool_],
    floor: float,
) -> PairPlan:
    """Candidates, coverage per claim and the pending pairs best first (priority, then relevance, then ids)."""
    coverage: list[ClaimCoverage] = []
    pending: list[PendingPair] = []
    existing: dict[tuple[int, int], str] = {}
    weights = np.asarray([f.weight for f in fragments], dtype=np.float64)
    for i, claim in enumerate(claims):
        above = relevance[i] >= floor if len(fragments) else np.zeros(0, dtype=bool)
        own = own_source[i] if len(fragments) else np.zeros(0, dtype=bool)
        chosen = np.flatnonzero(above & ~own)
        judged = 0
        for j in chosen.tolist():
            relation = claim.judged.get(fragments[j].fragment_id)
            if relation is not None:
                judged += 1
                existing[(i, j)] = relation
            else:
                score = float(relevance[i, j])
                pending.append(PendingPair(i, j, score, score * float(weights[j])))
        coverage.append(
            ClaimCoverage(
                claim_id=claim.claim_id,
                fragments=len(fragments),
                candidates=len(chosen),
                below_floor=int(np.count_nonzero(~above & ~own)),
                own_source=int(np.count_nonzero(own)),
                judged=judged,
            )
        )
    pending.sort(
        key=lambda p: (
            -p.priority,
            -p.relevance,
            fragments[p.fragment_index].fragment_id,
            claims[p.claim_index].claim_id,
        )
    )
    return PairPlan(coverage=coverage, pending=pending, existing=existing)
