"""Print the markdown table of docs/evaluation/stance-variants.md from `lyra eval nli --json` outputs.

    python scripts/stance_variants_table.py DIR VARIANT [VARIANT ...]

reads DIR/eval-<variant>-<set>.json for the sets ccdev (Check-COVID dev), sf0 (SciFact train claim fold 0) and
cc0 (Check-COVID train claim fold 0), and prints one row per variant: macro-F1 per set and their mean, recall
S / C / N, S<->C swaps and ECE per set, and the judge's pairs/s on Check-COVID dev.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SETS = ("ccdev", "sf0", "cc0")


def _load(path: Path) -> dict[str, Any]:
    """The JSON report, ignoring lines a wrapper printed around it (lines starting with '===')."""
    text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("==="))
    data: dict[str, Any] = json.loads(text)
    return data


def row(folder: Path, variant: str) -> str:
    runs = {s: _load(folder / f"eval-{variant}-{s}.json") for s in SETS}
    f1 = [runs[s]["macro_f1"] for s in SETS]
    recall = [
        "/".join(f"{runs[s]['per_class'][k]['recall']:.2f}" for k in ("entailment", "contradiction", "neutral"))
        for s in SETS
    ]
    swaps = "/".join(f"{runs[s]['swap_rate']:.0%}" for s in SETS)
    ece = "/".join(f"{runs[s]['ece']:.3f}" for s in SETS)
    cells = [
        variant,
        *(f"{x:.3f}" for x in f1),
        f"**{sum(f1) / len(f1):.3f}**",
        " · ".join(recall),
        swaps,
        ece,
        f"{runs['ccdev']['pairs_per_second']:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    folder = Path(sys.argv[1])
    print(
        "| variant | CC dev F1 | SF fold 0 F1 | CC fold 0 F1 | mean F1 | recall S/C/N (CC dev · SF0 · CC0) "
        "| swaps | ECE | pairs/s (CC dev) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for variant in sys.argv[2:]:
        try:
            print(row(folder, variant))
        except (FileNotFoundError, ValueError) as exc:  # not run, or still running
            print(f"| {variant} | not scored yet: {type(exc).__name__} |")


if __name__ == "__main__":
    main()
