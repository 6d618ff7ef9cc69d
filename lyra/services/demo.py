"""The offline scholarly demo: a local server answering in Semantic Scholar's and OpenAlex's shapes from the bundled
corpus of fictional papers (`config/examples/scholarly/corpus.json`), so a new user sees search, citation expansion
and CITES edges without a network."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lyra.testing.scholarly import Corpus, ReplayServer

SCHOLARLY_DEMO_TASK = "demo_scholarly"
SCHOLARLY_DEMO_HYPOTHESIS = "Time-restricted eating improves insulin sensitivity in adults"
SCHOLARLY_DEMO_DOI = "10.5555/lyra.trf.2024.001"


@contextmanager
def local_scholarly_apis(corpus: Path) -> Iterator[dict[str, str]]:
    """Serve ``corpus`` on 127.0.0.1 for the duration of the block; yields the settings that point Lyra at it."""
    with ReplayServer(Corpus.load(corpus)) as server:
        yield server.settings_overrides()
