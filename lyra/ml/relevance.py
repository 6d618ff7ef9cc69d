"""Absolute relevance of a passage to a claim: which (claim, fragment) pairs are worth judging at all.

The candidate ranker (:mod:`lyra.ml.ranking`) orders a pool, and its BM25 part is min-max normalised over that pool,
so its score of one pair changes with the other passages present. A relevance *floor* must not: a pair above it has
to stay above it however a task's documents were split into jobs. So the floor uses a score of the pair alone:

* ``cosine``: the cosine similarity of the two unit-length embeddings (the fragment's stored one, the claim's);
* ``overlap``: the share of the claim's distinct content words (the ranker's tokenizer: lower case, stop words out)
  that occur in the passage, in [0, 1]; a claim with no content word has overlap 0;
* ``relevance = w_emb * cosine + w_terms * overlap`` (``LYRA_RELEVANCE_WEIGHT_EMBEDDING``,
  ``LYRA_RELEVANCE_WEIGHT_TERMS``).

A pair is a candidate when ``relevance >= LYRA_RELEVANCE_FLOOR``. The floor reads what the passage says, never where
it comes from: the domain category weights order the candidates within a task's budget of pairs (ranking is the one
place a category counts, decision record 0007), and they do not drop a passage, so a relevant local file (category
``unverified``, weight 0.3) is judged like any other. The default floor, 0.26, is the highest that keeps 98% of the
passages carrying a rationale sentence of SciFact train (claim folds 1-4) and Check-COVID train; held out, it keeps
97.9% of them on SciFact's claim fold 0 and 98.1% on Check-COVID dev (``lyra eval relevance-floor``;
docs/concepts/judges.md, "The relevance floor").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from lyra.ml.ranking import tokenize


def content_words(text: str) -> frozenset[str]:
    """The distinct content words of ``text`` (the ranker's tokenizer: lower case, stop words removed)."""
    return frozenset(tokenize(text))


def term_overlap(claim_text: str, text: str) -> float:
    """The share of the claim's distinct content words found in ``text``, in [0, 1] (0 for a claim with none)."""
    claim_words = content_words(claim_text)
    if not claim_words:
        return 0.0
    return len(claim_words & content_words(text)) / len(claim_words)


def overlap_matrix(claim_texts: Sequence[str], texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """``term_overlap`` for every (claim, text) pair: shape (claims, texts)."""
    claim_words = [content_words(c) for c in claim_texts]
    text_words = [content_words(t) for t in texts]
    out = np.zeros((len(claim_texts), len(texts)), dtype=np.float32)
    for i, words in enumerate(claim_words):
        if not words:
            continue
        size = float(len(words))
        for j, other in enumerate(text_words):
            out[i, j] = len(words & other) / size
    return out


def relevance_matrix(
    claim_vectors: npt.NDArray[np.float32],
    vectors: npt.NDArray[np.float32],
    overlap: npt.NDArray[np.float32],
    *,
    w_emb: float,
    w_terms: float,
) -> npt.NDArray[np.float32]:
    """``w_emb * cosine + w_terms * overlap`` for every (claim, text) pair, from unit-length embeddings and an
    :func:`overlap_matrix`; shape (claims, texts)."""
    if overlap.size == 0:  # no claim or no text
        return np.zeros(overlap.shape, dtype=np.float32)
    claims = np.asarray(claim_vectors, dtype=np.float32).reshape(overlap.shape[0], -1)
    passages = np.asarray(vectors, dtype=np.float32).reshape(overlap.shape[1], -1)
    cosine = claims @ passages.T
    return (np.float32(w_emb) * cosine + np.float32(w_terms) * overlap).astype(np.float32)


def relevance(
    claim_texts: Sequence[str],
    claim_vectors: npt.NDArray[np.float32],
    texts: Sequence[str],
    vectors: npt.NDArray[np.float32],
    *,
    w_emb: float,
    w_terms: float,
) -> npt.NDArray[np.float32]:
    """The relevance of every text to every claim (module docstring): shape (claims, texts)."""
    overlap = overlap_matrix(claim_texts, texts)
    return relevance_matrix(claim_vectors, vectors, overlap, w_emb=w_emb, w_terms=w_terms)
