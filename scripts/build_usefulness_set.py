"""Build ``tests/data/usefulness_pairs.jsonl``: labelled (claim, paper) pairs for measuring Stage 2 of citation
expansion (how useful a paper's title and abstract look for the task's claims).

Labels:

* ``relevant``: the abstract supports or contradicts the claim (SciFact / Check-COVID SUPPORT or CONTRADICT);
* ``on_topic``: an abstract on the claim's topic that does not decide it (SciFact NEI: cited by the claim's author
  but judged not to decide it). Check-COVID gives none: its NEI pairs reuse the abstract that decides the claim;
* ``off_topic``: the abstract of another claim of the same data set (never one paired with this claim).

Plus the bundled fictional scholarly corpus (``config/examples/scholarly/corpus.json``) against the demo hypothesis,
labelled by hand (``fixture``), and the bicycle paper and the caffeine-and-sleep test corpus as off-topic papers.

The split is by claim: ``test`` = claim fold 0 of :func:`lyra.ml.evaluation.claim_fold` (sha256 of the claim text),
``dev`` = the other folds. Abstracts are cut at 1,500 characters (the default ``LYRA_CITATION_ABSTRACT_CHARS``, what
Stage 2 reads). Deterministic (``random.Random(SEED)``):

    python scripts/build_usefulness_set.py [--shared ../shared/training] [--out tests/data/usefulness_pairs.jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from lyra.ml.evaluation import HELD_OUT_FOLD, claim_fold
from lyra.services.demo import SCHOLARLY_DEMO_HYPOTHESIS

ROOT = Path(__file__).resolve().parent.parent
SEED = 25
ABSTRACT_CHARS = 1500
# pairs per (data set, split, label)
COUNTS: dict[str, dict[str, dict[str, int]]] = {
    "scifact": {
        "test": {"relevant": 40, "on_topic": 40, "off_topic": 40},
        "dev": {"relevant": 20, "on_topic": 20, "off_topic": 20},
    },
    "check_covid": {
        "test": {"relevant": 25, "on_topic": 0, "off_topic": 25},
        "dev": {"relevant": 12, "on_topic": 0, "off_topic": 12},
    },
}
FILES = {"scifact": ["scifact_train.jsonl"], "check_covid": ["check_covid_train.jsonl", "check_covid_dev.jsonl"]}
# the fictional demo corpus against SCHOLARLY_DEMO_HYPOTHESIS, labelled by hand
FIXTURE_LABELS = {
    "seed": "relevant",
    "r_meal_timing": "relevant",
    "r_ad_libitum": "relevant",
    "r_null_trf": "relevant",
    "r_weight_meta": "relevant",
    "c_followup": "relevant",
    "c_shiftwork": "relevant",
    "c_review": "relevant",
    "r_clamp_method": "on_topic",
    "r_circadian": "on_topic",
    "r_bicycle": "off_topic",
}
CAFFEINE_OFF_TOPIC = ("hub", "ref0", "ref2", "ref9", "cit1")


def _rows(shared: Path, names: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in names:
        with (shared / name).open(encoding="utf-8") as fh:
            rows.extend({**json.loads(line), "file": name} for line in fh if line.strip())
    return rows


def _pair(pid: str, split: str, claim: str, title: str, abstract: str, label: str, source: str) -> dict[str, Any]:
    return {
        "id": pid,
        "split": split,
        "label": label,
        "claim": claim,
        "title": title,
        "abstract": abstract[:ABSTRACT_CHARS],
        "source": source,
    }


def _split(claim: str) -> str:
    return "test" if claim_fold(claim) == HELD_OUT_FOLD else "dev"


def training_pairs(shared: Path, rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for dataset, names in FILES.items():
        rows = _rows(shared, names)
        titles_of: dict[str, set[str]] = defaultdict(set)
        deciding: dict[str, set[str]] = defaultdict(set)
        for r in rows:
            titles_of[r["claim"]].add(r["evidence_title"])
            if r["label"] != "NEI":
                deciding[r["claim"]].add(r["evidence_title"])
        by_title = {r["evidence_title"]: r for r in rows}
        all_titles = sorted(by_title)
        for split, wanted in COUNTS[dataset].items():
            decisive = [r for r in rows if r["label"] != "NEI" and _split(r["claim"]) == split]
            neutral = [
                r
                for r in rows
                if r["label"] == "NEI"
                and _split(r["claim"]) == split
                and r["evidence_title"] not in deciding[r["claim"]]
            ]
            picked = _one_per_claim(decisive, rng, wanted["relevant"])
            for r in picked:
                out.append(
                    _pair(
                        r["pair_id"], split, r["claim"], r["evidence_title"], r["evidence_text"], "relevant", r["file"]
                    )
                )
            for r in _one_per_claim(neutral, rng, wanted["on_topic"]):
                out.append(
                    _pair(
                        r["pair_id"], split, r["claim"], r["evidence_title"], r["evidence_text"], "on_topic", r["file"]
                    )
                )
            for r in picked[: wanted["off_topic"]]:
                other = by_title[rng.choice([t for t in all_titles if t not in titles_of[r["claim"]]])]
                out.append(
                    _pair(
                        f"{r['pair_id']}~{other['pair_id']}",
                        split,
                        r["claim"],
                        other["evidence_title"],
                        other["evidence_text"],
                        "off_topic",
                        f"{r['file']} (abstract of {other['pair_id']})",
                    )
                )
    return out


def _one_per_claim(rows: list[dict[str, Any]], rng: random.Random, n: int) -> list[dict[str, Any]]:
    first: dict[str, dict[str, Any]] = {}
    for r in rows:
        first.setdefault(r["claim"], r)
    claims = sorted(first)
    rng.shuffle(claims)
    if len(claims) < n:  # pragma: no cover - the counts above fit the shared files
        raise SystemExit(f"only {len(claims)} claims available, {n} wanted")
    return [first[c] for c in claims[:n]]


def fixture_pairs() -> list[dict[str, Any]]:
    demo = json.loads((ROOT / "config" / "examples" / "scholarly" / "corpus.json").read_text(encoding="utf-8"))
    caffeine = json.loads((ROOT / "tests" / "data" / "scholarly" / "corpus.json").read_text(encoding="utf-8"))
    papers = {p["id"]: p for p in demo["papers"]}
    others = {p["id"]: p for p in caffeine["papers"]}
    claim = SCHOLARLY_DEMO_HYPOTHESIS
    out = [
        _pair(
            f"fixture-demo-{pid}",
            "test",
            claim,
            papers[pid]["title"],
            papers[pid]["abstract"],
            label,
            "config/examples/scholarly/corpus.json",
        )
        for pid, label in FIXTURE_LABELS.items()
    ]
    out += [
        _pair(
            f"fixture-caffeine-{pid}",
            "test",
            claim,
            others[pid]["title"],
            others[pid]["abstract"],
            "off_topic",
            "tests/data/scholarly/corpus.json",
        )
        for pid in CAFFEINE_OFF_TOPIC
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "training")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "usefulness_pairs.jsonl")
    args = parser.parse_args()
    rng = random.Random(SEED)
    pairs = training_pairs(args.shared, rng) + fixture_pairs()
    with args.out.open("w", encoding="utf-8") as fh:
        for p in pairs:
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for p in pairs:
        counts[(p["split"], p["label"])] += 1
    print(f"wrote {len(pairs)} pairs to {args.out}: {dict(sorted(counts.items()))}", file=sys.stderr)


if __name__ == "__main__":
    main()
