"""A persistent cache of NLI judgements keyed by (model id, premise hash, hypothesis hash)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from lyra.ml.protocols import NLIJudge, NLIResult


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class NLICache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS nli (model_id TEXT, premise_hash TEXT, hypothesis_hash TEXT,"
            " label TEXT, probs TEXT, method TEXT, PRIMARY KEY (model_id, premise_hash, hypothesis_hash))"
        )
        # the decisive sentence came later: a cache written before it gains the column (its rows answer None)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(nli)")}
        if "sentence" not in columns:
            self._db.execute("ALTER TABLE nli ADD COLUMN sentence TEXT")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, model_id: str, premise: str, hypothesis: str) -> NLIResult | None:
        with self._lock:
            row = self._db.execute(
                "SELECT label, probs, method, sentence FROM nli"
                " WHERE model_id=? AND premise_hash=? AND hypothesis_hash=?",
                (model_id, _hash(premise), _hash(hypothesis)),
            ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return NLIResult(row[0], json.loads(row[1]), row[2], row[3])

    def put(self, model_id: str, premise: str, hypothesis: str, result: NLIResult) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO nli (model_id, premise_hash, hypothesis_hash, label, probs, method, sentence)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    model_id,
                    _hash(premise),
                    _hash(hypothesis),
                    result.label,
                    json.dumps(result.probs),
                    result.method,
                    result.sentence,
                ),
            )

    def close(self) -> None:
        self._db.close()


class CachedJudge:
    """Wraps a judge so no (model, premise, hypothesis) is judged twice, across runs."""

    def __init__(self, judge: NLIJudge, cache: NLICache) -> None:
        self.judge_impl = judge
        self.cache = cache

    @property
    def model_id(self) -> str:
        """Read from the judge at every call: it changes when the learned rules in its prompts change."""
        return self.judge_impl.model_id

    @property
    def rules_version(self) -> int:
        """The learned rule-set version the wrapped judge's prompts read (0: none)."""
        return int(getattr(self.judge_impl, "rules_version", 0))

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        model_id = self.model_id
        results: list[NLIResult | None] = [self.cache.get(model_id, p, h) for p, h in pairs]
        missing = [i for i, r in enumerate(results) if r is None]
        if missing:
            fresh = self.judge_impl.judge([pairs[i] for i in missing])
            for i, result in zip(missing, fresh, strict=True):
                self.cache.put(model_id, pairs[i][0], pairs[i][1], result)
                results[i] = result
        return [r for r in results if r is not None]


class AnswerCache:
    """A persistent cache of a model's numeric answers (e.g. the LLM's two yes/no probabilities for a pair), keyed
    by a caller-made key that must name everything the answer depends on (model, prompt version, inputs)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT)")
        self._lock = threading.Lock()

    @staticmethod
    def key(*parts: str) -> str:
        return _hash("\x00".join(parts))

    def get(self, key: str) -> list[float] | None:
        with self._lock:
            row = self._db.execute("SELECT answer FROM answers WHERE key=?", (key,)).fetchone()
        return None if row is None else [float(x) for x in json.loads(row[0])]

    def put(self, key: str, answer: Sequence[float]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, json.dumps(list(answer))))
