"""The Cypher catalog: every statement Lyra runs lives in ``cypher/<feature>/<name>.cypher``.

A file holds one statement and starts with comment lines that declare it::

    // mode: read | write | schema
    // transactions: auto        (only for CALL { ... } IN TRANSACTIONS: runs in an auto-commit transaction)
    // free text describing the statement and its $params

The catalog is loaded once at start-up; a test EXPLAINs every file and checks the declared mode.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lyra.core.errors import ConfigError

Mode = Literal["read", "write", "schema"]
_HEADER = re.compile(r"^//\s*(mode|transactions)\s*:\s*(\S+)\s*$")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class CypherQuery:
    name: str  # "feature/verb_noun"
    text: str
    mode: Mode
    auto_commit: bool
    path: Path

    @property
    def description(self) -> str:
        """The first free-text comment line of the file (after the mode/transactions headers)."""
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if not line.startswith("//"):
                break
            text = line.lstrip("/ ").strip()
            if text and not _HEADER.match(line) and not text.startswith("Params:"):
                return text
        return ""

    @property
    def parameters(self) -> frozenset[str]:
        """Names of the $parameters the statement uses (outside comments)."""
        body = "\n".join(line for line in self.text.splitlines() if not line.lstrip().startswith("//"))
        return frozenset(_PARAM.findall(body))


def _parse(path: Path, name: str) -> CypherQuery:
    text = path.read_text(encoding="utf-8").strip()
    mode: str | None = None
    auto = False
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        match = _HEADER.match(line)
        if match and match.group(1) == "mode":
            mode = match.group(2)
        elif match and match.group(1) == "transactions":
            auto = match.group(2) == "auto"
    if mode not in ("read", "write", "schema"):
        raise ConfigError(f"{path}: first lines must declare `// mode: read|write|schema`")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")).strip()
    if not body:
        raise ConfigError(f"{path}: no statement")
    if body.rstrip(";").count(";"):
        raise ConfigError(f"{path}: one statement per file")
    return CypherQuery(name=name, text=body.rstrip(";"), mode=mode, auto_commit=auto, path=path)  # type: ignore[arg-type]


class CypherCatalog:
    """All named statements, keyed ``feature/name``."""

    def __init__(self, queries: dict[str, CypherQuery]) -> None:
        self._queries = queries

    @classmethod
    def load(cls, root: Path) -> CypherCatalog:
        if not root.is_dir():
            raise ConfigError(f"Cypher folder {root} does not exist", hint="set LYRA_CYPHER_DIR")
        queries: dict[str, CypherQuery] = {}
        for path in sorted(root.rglob("*.cypher")):
            name = path.relative_to(root).with_suffix("").as_posix()
            queries[name] = _parse(path, name)
        return cls(queries)

    def __getitem__(self, name: str) -> CypherQuery:
        try:
            return self._queries[name]
        except KeyError:
            raise ConfigError(f"no Cypher statement named {name!r} in the catalog") from None

    def __contains__(self, name: object) -> bool:
        return name in self._queries

    def names(self, prefix: str = "") -> list[str]:
        return sorted(n for n in self._queries if n.startswith(prefix))

    def __iter__(self) -> Iterator[CypherQuery]:
        return iter(self._queries.values())
