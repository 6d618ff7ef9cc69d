"""Walking local folders: symbolic links never lead out of the allowed folders, only regular files are read,
and the walk is bounded in file size and file count."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from lyra.sources.local_files import SkippedDocument, SourceDocument, WalkLimits, iter_documents

TEXT = "# Title\n\nA paragraph that is long enough to be a passage of its own.\n"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """An allowed folder ``r`` and an outside folder ``o`` with a secret, linked into ``r`` in several ways."""
    root, outside = tmp_path / "r", tmp_path / "o"
    root.mkdir()
    outside.mkdir()
    (outside / "s.md").write_text("# Secret\n\nText that must never leave its folder through a link.\n")
    (root / "ok.md").write_text(TEXT)
    (root / "l.md").symlink_to(outside / "s.md")  # a file link out
    (root / "out").symlink_to(outside, target_is_directory=True)  # a folder link out
    (root / "loop").symlink_to(root, target_is_directory=True)  # a folder link back up: a loop
    (root / "sub").mkdir()
    (root / "sub" / "inner.md").write_text(TEXT.replace("Title", "Inner"))
    (root / "again.md").symlink_to(root / "sub" / "inner.md")  # a link that stays inside is fine
    (root / "broken.md").symlink_to(tmp_path / "missing.md")
    return root, outside


def read(paths: list[Path], limits: WalkLimits) -> tuple[dict[str, SourceDocument], dict[str, str]]:
    docs: dict[str, SourceDocument] = {}
    skipped: dict[str, str] = {}
    for item in iter_documents(paths, limits):
        if isinstance(item, SkippedDocument):
            skipped[Path(item.origin).name] = item.reason
        else:
            docs[Path(item.origin).name] = item
    return docs, skipped


def test_links_leading_out_of_the_allowed_folders_are_skipped_with_a_reason(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    docs, skipped = read([root], WalkLimits(allowed_roots=(root,)))
    assert sorted(docs) == ["again.md", "inner.md", "ok.md"]
    assert all(not doc.url.startswith(outside.as_uri()) for doc in docs.values())
    assert "symbolic link leading outside the allowed folders" in skipped["l.md"]
    assert "symbolic link leading outside the allowed folders" in skipped["out"]
    assert "already walked" in skipped["loop"]
    assert "broken symbolic link" in skipped["broken.md"]


def test_without_allowed_folders_links_are_followed_but_loops_are_walked_once(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    docs, skipped = read([root], WalkLimits())
    assert sorted(docs) == ["again.md", "inner.md", "l.md", "ok.md", "s.md"]
    assert "already walked" in skipped["loop"]


def test_a_path_given_directly_is_confined_too(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    _, skipped = read([root / "l.md", outside], WalkLimits(allowed_roots=(root,)))
    assert skipped == {
        "l.md": "outside the allowed folders (LYRA_ALLOWED_ROOTS)",
        "o": "outside the allowed folders (LYRA_ALLOWED_ROOTS)",
    }


def test_fifos_sockets_and_devices_are_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")  # opening a FIFO for reading would block the walk
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock.md"))
        (tmp_path / "null.md").symlink_to("/dev/null")
        (tmp_path / "ok.md").write_text(TEXT)
        docs, skipped = read([tmp_path], WalkLimits())  # unconfined, as the CLI reads
        direct, direct_skipped = read([tmp_path / "pipe.md", Path("/dev/zero")], WalkLimits())
    assert sorted(docs) == ["ok.md"]
    assert {name: "not a regular file" in reason for name, reason in skipped.items()} == {
        "pipe.md": True,
        "sock.md": True,
        "null.md": True,
    }
    assert direct == {} and sorted(direct_skipped) == ["pipe.md", "zero"]


def test_a_file_above_the_size_limit_is_skipped_unread(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_text("# Big\n\n" + "x" * 5000)
    (tmp_path / "small.md").write_text(TEXT)
    docs, skipped = read([tmp_path], WalkLimits(max_file_bytes=1000))
    assert sorted(docs) == ["small.md"]
    assert skipped["big.md"] == "larger than 1000 bytes (LYRA_INGEST_MAX_FILE_BYTES); not read"


def test_the_walk_stops_at_the_file_limit_and_says_so(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"doc{i}.md").write_text(TEXT.replace("Title", f"Doc {i}"))
    (tmp_path / "image.png").write_bytes(b"\x89PNG")  # not a document: not counted
    docs, skipped = read([tmp_path], WalkLimits(max_files=3))
    assert sorted(docs) == ["doc0.md", "doc1.md", "doc2.md"]
    assert skipped[tmp_path.name] == "file limit reached: only the first 3 files were read (LYRA_INGEST_MAX_FILES)"
