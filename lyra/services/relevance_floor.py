"""Fit and measure the relevance floor on labelled claim/abstract sets (`lyra eval relevance-floor`).

Each abstract is cut into passages as ingest cuts a document (:func:`lyra.sources.chunking.chunk_text`), and every
(claim, passage) pair below is scored with :func:`lyra.ml.relevance.relevance` and the embedder the settings name:

* **relevant**: a SUPPORT or CONTRADICT claim with the passage(s) of its cited abstract that carry a rationale
  sentence (:func:`lyra.ml.floor_fit.rationale_chunks`);
* **other**: the same claim with the passages of that abstract that carry none;
* **NEI**: a claim with the passages of an abstract cited for it that does not decide it (on topic);
* **off-topic**: a claim with passages drawn at random (fixed seed) from abstracts of the same file that are not
  cited for it. Some of them may touch its topic: the sets are about one field each.

The floor is fitted on the relevant pairs of the fit files (the highest floor keeping ``target`` of them, rounded
down to two decimals) and measured on the held-out ones. A ``--by-claim`` file is split by claim
(:func:`lyra.ml.evaluation.claim_fold`): fold 0 is held out, the other folds join the fit. Models load here, not
through a graph connection: no Neo4j is needed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from lyra.core.errors import InvalidInputError
from lyra.core.settings import Settings
from lyra.ml.evaluation import HELD_OUT_FOLD, LabelledPair, claim_fold, load_pairs
from lyra.ml.factory import Models
from lyra.ml.floor_fit import fit_floor, rationale_chunks, round_down, share_at_least, weight_grid
from lyra.ml.protocols import Embedder
from lyra.ml.relevance import relevance
from lyra.sources.chunking import chunk_text

log = logging.getLogger(__name__)

KINDS = ("relevant", "other", "nei", "offtopic")
Tick = Callable[[int], None]


OTHER_FLOORS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4)


class FloorPoint(BaseModel):
    floor: float
    recall: float
    nei_kept: float
    offtopic_dropped: float


class SetResult(BaseModel):
    """What one floor does on one labelled set."""

    name: str
    role: str  # fit | heldout
    claims: int
    abstracts: int
    passages: int
    relevant_pairs: int
    recall: float  # share of relevant pairs at or above the floor
    cited_pairs: int  # (claim, SUPPORT/CONTRADICT abstract) pairs with at least one rationale passage
    cited_recall: float  # share of those with at least one rationale passage kept
    other_pairs: int
    other_kept: float
    nei_pairs: int
    nei_kept: float
    offtopic_pairs: int
    offtopic_dropped: float
    rationales_not_found: int  # rationale sentences no passage carries (not counted anywhere)
    pairs_per_second: float  # scoring with the embeddings in hand (as ingest has them stored)
    other_floors: list[FloorPoint]  # what the floors of OTHER_FLOORS would keep and drop here


class WeightChoice(BaseModel):
    w_emb: float
    w_terms: float
    floor: float
    offtopic_dropped: float


class FloorReport(BaseModel):
    target_recall: float
    w_emb: float
    w_terms: float
    floor_exact: float  # the fitted floor before rounding (or the floor given)
    floor: float  # the floor measured below: rounded down to 2 decimals, or the one given
    fitted: bool
    embedder: str
    chunk_max_chars: int
    offtopic_per_claim: int
    seed: int
    texts_embedded: int
    embed_seconds: float
    sets: list[SetResult]
    weight_grid: list[WeightChoice]  # on the fit sets only


@dataclass
class _Part:
    """The (claim, passage) pairs of one labelled set, by kind, with their scores once computed."""

    name: str
    role: str
    claims: list[str]
    passages: list[str]
    pairs: dict[str, list[tuple[int, int]]]  # kind -> (claim index, passage index)
    cited: list[list[int]]  # per (claim, cited S/C abstract): indices into pairs["relevant"]
    abstracts: int
    not_found: int
    cosine: dict[str, np.ndarray] = field(default_factory=dict)
    overlap: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: float = 0.0


def build_part(
    name: str, role: str, pairs: Sequence[LabelledPair], max_chars: int, per_claim: int, rng: np.random.Generator
) -> _Part:
    """The four kinds of pairs of one labelled set (module docstring); off-topic passages are drawn with ``rng``."""
    claims: dict[str, int] = {}
    passages: dict[str, int] = {}
    passage_texts: list[str] = []
    chunks_of: dict[str, list[int]] = {}
    cited_abstracts: dict[int, set[str]] = {}
    kinds: dict[str, set[tuple[int, int]]] = {kind: set() for kind in KINDS}
    cited_units: dict[tuple[int, str], set[tuple[int, int]]] = {}
    not_found = 0
    for pair in pairs:
        claim = claims.setdefault(pair.hypothesis, len(claims))
        if pair.premise not in chunks_of:
            texts = [p.text for p in chunk_text(pair.premise, max_chars=max_chars)]
            for text in texts:
                if text not in passages:
                    passages[text] = len(passage_texts)
                    passage_texts.append(text)
            chunks_of[pair.premise] = [passages[t] for t in texts]
        chunk_ids = chunks_of[pair.premise]
        cited_abstracts.setdefault(claim, set()).add(pair.premise)
        if pair.label == "neutral":
            kinds["nei"].update((claim, c) for c in chunk_ids)
            continue
        texts = [passage_texts[c] for c in chunk_ids]
        carrying = rationale_chunks(pair.sentences, pair.rationale, texts)
        for index in pair.rationale:
            sentence = pair.sentences[index]
            if sentence.strip() and not rationale_chunks(pair.sentences, [index], texts):
                not_found += 1
        relevant = {(claim, chunk_ids[i]) for i in carrying}
        kinds["relevant"] |= relevant
        kinds["other"].update((claim, chunk_ids[i]) for i in range(len(chunk_ids)) if i not in carrying)
        if relevant:
            cited_units.setdefault((claim, pair.premise), set()).update(relevant)
    kinds["other"] -= kinds["relevant"]  # a passage relevant through one abstract is not "other" through another
    kinds["nei"] -= kinds["relevant"]
    for claim, abstracts in cited_abstracts.items():
        banned = np.zeros(len(passage_texts), dtype=bool)
        banned[[c for text in abstracts for c in chunks_of[text]]] = True
        pool = np.flatnonzero(~banned)
        if per_claim and len(pool):
            drawn = rng.choice(pool, size=min(per_claim, len(pool)), replace=False)
            kinds["offtopic"].update((claim, int(c)) for c in drawn)
    ordered = {kind: sorted(kinds[kind]) for kind in KINDS}
    position = {p: i for i, p in enumerate(ordered["relevant"])}
    cited = [sorted(position[p] for p in unit) for unit in cited_units.values()]
    return _Part(name, role, list(claims), passage_texts, ordered, cited, len(chunks_of), not_found)


def _grouped(pairs: Sequence[tuple[int, int]]) -> dict[int, list[tuple[int, int]]]:
    """Pair positions grouped by claim: claim -> [(position in ``pairs``, passage index)]."""
    groups: dict[int, list[tuple[int, int]]] = {}
    for position, (claim, passage) in enumerate(pairs):
        groups.setdefault(claim, []).append((position, passage))
    return groups


def score_part(
    part: _Part, claim_vectors: np.ndarray, passage_vectors: np.ndarray, w_emb: float, w_terms: float
) -> None:
    """Cosine and overlap of every pair of ``part`` through :func:`lyra.ml.relevance.relevance` (one call per claim,
    as ingest scores a claim against a task's passages), and the time the ``w_emb``/``w_terms`` call takes."""
    for kind in KINDS:
        pairs = part.pairs[kind]
        cosine = np.zeros(len(pairs), dtype=np.float64)
        overlap = np.zeros(len(pairs), dtype=np.float64)
        for claim, members in _grouped(pairs).items():
            positions = [m[0] for m in members]
            ids = [m[1] for m in members]
            args = ([part.claims[claim]], claim_vectors[claim : claim + 1], [part.passages[i] for i in ids])
            vectors = passage_vectors[ids]
            cosine[positions] = relevance(*args, vectors, w_emb=1.0, w_terms=0.0)[0]
            overlap[positions] = relevance(*args, vectors, w_emb=0.0, w_terms=1.0)[0]
            started = time.perf_counter()
            relevance(*args, vectors, w_emb=w_emb, w_terms=w_terms)
            part.seconds += time.perf_counter() - started
        part.cosine[kind] = cosine
        part.overlap[kind] = overlap


def _scores(part: _Part, kind: str, w_emb: float, w_terms: float) -> np.ndarray:
    return np.asarray(w_emb * part.cosine[kind] + w_terms * part.overlap[kind], dtype=np.float64)


def measure(part: _Part, floor: float, w_emb: float, w_terms: float) -> SetResult:
    """What ``floor`` keeps and drops of ``part``'s pairs."""
    relevant = _scores(part, "relevant", w_emb, w_terms)
    kept = relevant >= floor
    cited_kept = [bool(kept[unit].any()) for unit in part.cited]
    scored = sum(len(part.pairs[k]) for k in KINDS)
    return SetResult(
        name=part.name,
        role=part.role,
        claims=len(part.claims),
        abstracts=part.abstracts,
        passages=len(part.passages),
        relevant_pairs=len(relevant),
        recall=share_at_least(relevant, floor),
        cited_pairs=len(part.cited),
        cited_recall=float(np.mean(cited_kept)) if cited_kept else 0.0,
        other_pairs=len(part.pairs["other"]),
        other_kept=share_at_least(_scores(part, "other", w_emb, w_terms), floor),
        nei_pairs=len(part.pairs["nei"]),
        nei_kept=share_at_least(_scores(part, "nei", w_emb, w_terms), floor),
        offtopic_pairs=len(part.pairs["offtopic"]),
        offtopic_dropped=1.0 - share_at_least(_scores(part, "offtopic", w_emb, w_terms), floor),
        rationales_not_found=part.not_found,
        pairs_per_second=scored / part.seconds if part.seconds > 0 else 0.0,
        other_floors=[
            FloorPoint(
                floor=other,
                recall=share_at_least(relevant, other),
                nei_kept=share_at_least(_scores(part, "nei", w_emb, w_terms), other),
                offtopic_dropped=1.0 - share_at_least(_scores(part, "offtopic", w_emb, w_terms), other),
            )
            for other in OTHER_FLOORS
        ],
    )


def _pooled(parts: Sequence[_Part]) -> _Part:
    """The fit sets as one (the pool the floor is fitted on)."""
    offsets = np.cumsum([0] + [len(p.pairs["relevant"]) for p in parts])
    return _Part(
        name="fit sets pooled",
        role="fit",
        claims=[c for p in parts for c in p.claims],
        passages=[t for p in parts for t in p.passages],
        pairs={k: [pair for p in parts for pair in p.pairs[k]] for k in KINDS},
        cited=[[i + int(o) for i in unit] for p, o in zip(parts, offsets, strict=False) for unit in p.cited],
        abstracts=sum(p.abstracts for p in parts),
        not_found=sum(p.not_found for p in parts),
        cosine={k: np.concatenate([p.cosine[k] for p in parts]) for k in KINDS},
        overlap={k: np.concatenate([p.overlap[k] for p in parts]) for k in KINDS},
        seconds=sum(p.seconds for p in parts),
    )


def _parts(
    fit: Sequence[Path], heldout: Sequence[Path], by_claim: Sequence[Path], limit: int | None
) -> list[tuple[str, str, list[LabelledPair]]]:
    parts: list[tuple[str, str, list[LabelledPair]]] = []
    for path in fit:
        parts.append((path.stem, "fit", load_pairs(path)[:limit]))
    for path in by_claim:
        pairs = load_pairs(path)[:limit]
        held = [claim_fold(p.hypothesis) == HELD_OUT_FOLD for p in pairs]
        parts.append((f"{path.stem} (other folds)", "fit", [p for p, h in zip(pairs, held, strict=True) if not h]))
        parts.append(
            (f"{path.stem} (fold {HELD_OUT_FOLD})", "heldout", [p for p, h in zip(pairs, held, strict=True) if h])
        )
    for path in heldout:
        parts.append((path.stem, "heldout", load_pairs(path)[:limit]))
    return [p for p in parts if p[2]]


def _embed(embedder: Embedder, texts: list[str], progress: Tick | None, batch: int = 256) -> np.ndarray:
    chunks = []
    for start in range(0, len(texts), batch):
        chunks.append(np.asarray(embedder.embed(texts[start : start + batch]), dtype=np.float32))
        if progress is not None:
            progress(len(texts[start : start + batch]))
    return np.concatenate(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)


def relevance_floor_report(
    settings: Settings,
    fit: Sequence[Path],
    heldout: Sequence[Path],
    by_claim: Sequence[Path] = (),
    *,
    target: float = 0.98,
    floor: float | None = None,
    w_emb: float | None = None,
    w_terms: float | None = None,
    per_claim: int = 5,
    seed: int = 0,
    limit: int | None = None,
    embedder: Embedder | None = None,
    progress: Tick | None = None,
) -> FloorReport:
    """Fit the floor on the ``fit`` sets (and the fit folds of ``by_claim``) and measure it on every set.

    Args:
        settings: the chunk size, the embedder and the default weights.
        fit, heldout, by_claim: labelled JSONL files in the shared claim-verification schema (module docstring).
        target: the share of relevant fit pairs the floor keeps.
        floor: measure this floor instead of fitting one.
        w_emb, w_terms: the weights (default: the settings').
        per_claim: off-topic passages drawn per claim.
        seed: the draw's seed.
        limit: only the first N lines of each file.
        embedder: the embedder (default: the one the settings build).
        progress: called with the number of texts embedded so far, batch by batch.

    Returns:
        The floor, what it keeps and drops on each set, and the weight grid on the fit sets.
    """
    if not 0.0 < target <= 1.0:
        raise InvalidInputError("target", "the target recall must be in (0, 1]")
    emb = settings.pipeline.relevance_weight_embedding if w_emb is None else w_emb
    terms = settings.pipeline.relevance_weight_terms if w_terms is None else w_terms
    rng = np.random.default_rng(seed)
    parts = [
        build_part(name, role, pairs, settings.pipeline.chunk_max_chars, per_claim, rng)
        for name, role, pairs in _parts(fit, heldout, by_claim, limit)
    ]
    fit_parts = [p for p in parts if p.role == "fit"]
    if floor is None and not any(p.pairs["relevant"] for p in fit_parts):
        raise InvalidInputError("fit", "the fit files hold no SUPPORT/CONTRADICT pair with a rationale")
    model = embedder or Models(settings).embedder
    texts = [t for p in parts for t in (*p.claims, *p.passages)]
    log.info("embedding %d claims and passages of %d sets with %s", len(texts), len(parts), model.model_id)
    model.embed(["warm-up"])  # the model loads outside the timing
    started = time.perf_counter()
    vectors = _embed(model, texts, progress)
    embed_seconds = time.perf_counter() - started
    offset = 0
    for part in parts:
        claims = vectors[offset : offset + len(part.claims)]
        offset += len(part.claims)
        passages = vectors[offset : offset + len(part.passages)]
        offset += len(part.passages)
        score_part(part, claims, passages, emb, terms)

    grid: list[WeightChoice] = []
    pool = _pooled(fit_parts) if fit_parts else None
    if pool is not None and len(pool.pairs["relevant"]):
        rows = weight_grid(
            pool.cosine["relevant"], pool.overlap["relevant"], pool.cosine["offtopic"], pool.overlap["offtopic"], target
        )
        grid = [
            WeightChoice(w_emb=r.w_emb, w_terms=r.w_terms, floor=r.floor, offtopic_dropped=r.offtopic_dropped)
            for r in rows
        ]
    if floor is None:
        assert pool is not None  # checked above: fitting needs relevant fit pairs
        exact = fit_floor(_scores(pool, "relevant", emb, terms), target)
        chosen = round_down(exact)
    else:
        exact = chosen = floor
    if pool is not None and len(fit_parts) > 1:
        parts = [*parts, pool]
    return FloorReport(
        target_recall=target,
        w_emb=emb,
        w_terms=terms,
        floor_exact=exact,
        floor=chosen,
        fitted=floor is None,
        embedder=model.model_id,
        chunk_max_chars=settings.pipeline.chunk_max_chars,
        offtopic_per_claim=per_claim,
        seed=seed,
        texts_embedded=len(texts),
        embed_seconds=embed_seconds,
        sets=[measure(p, chosen, emb, terms) for p in parts],
        weight_grid=grid,
    )
