"""The synthetic evidence graph of the scale work's scale table, and its ground truth.

Shape (seeded, so a run can be repeated): ``claims`` claims with text; ``edges`` stance edges over unique
(fragment, claim) pairs, relation uniform over SUPPORTS / REFUTES / NEUTRAL, ``nli_confidence`` ~ U(0, 1);
``cites`` CITES edges between distinct random (citing, cited) page pairs; fragments = edges / 2 with text and
text_hash and no embedding; pages = fragments / 5 with url, domain and year. Every fragment sits on one page.

Everything is kept in flat lists (columns), so 500k edges cost a few tens of MB, not a dict per row.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from lyra.core.ids import text_hash

RELATIONS = ("SUPPORTS", "REFUTES", "NEUTRAL")
DOMAINS = 100  # pages are spread over this many domains
HOST = "scale-bench.invalid"  # every synthetic URL starts with https://scale-bench.invalid/<run>/
DOMAIN_SUFFIX = ".scale-bench.invalid"  # and every synthetic domain name ends with this


@dataclass
class ScaleData:
    """One generated graph. Indices tie the parts together (fragment -> page, edge -> fragment and claim)."""

    run: str
    page_urls: list[str]
    page_domains: list[str]
    page_years: list[int]
    fragment_page: list[int]
    fragment_texts: list[str]
    fragment_hashes: list[str]
    claim_texts: list[str]
    edge_fragment: list[int]
    edge_claim: list[int]
    edge_relation: list[str]
    edge_confidence: list[float]
    cite_citing: list[int]
    cite_cited: list[int]
    alpha: list[float] = field(default_factory=list)
    beta: list[float] = field(default_factory=list)
    counts: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def url_prefix(self) -> str:
        return f"https://{HOST}/{self.run}/"

    def ground_truth(self) -> None:
        """alpha/beta/counts per claim from the generated edges, by decision record 0003's formula (Beta(1,1) prior,
        SUPPORTS adds nli_confidence to alpha, REFUTES to beta, NEUTRAL nothing)."""
        n = len(self.claim_texts)
        alpha = [1.0] * n
        beta = [1.0] * n
        supports = [0] * n
        refutes = [0] * n
        neutral = [0] * n
        for claim, relation, weight in zip(self.edge_claim, self.edge_relation, self.edge_confidence, strict=True):
            if relation == "SUPPORTS":
                alpha[claim] += weight
                supports[claim] += 1
            elif relation == "REFUTES":
                beta[claim] += weight
                refutes[claim] += 1
            else:
                neutral[claim] += 1
        self.alpha, self.beta = alpha, beta
        self.counts = list(zip(supports, refutes, neutral, strict=True))


def sizes(edges: int) -> tuple[int, int]:
    """(fragments, pages) for a number of stance edges: fragments = edges / 2, pages = fragments / 5."""
    fragments = max(1, edges // 2)
    return fragments, max(1, fragments // 5)


def generate(claims: int, edges: int, cites: int, run: str, seed: int = 14) -> ScaleData:
    """The graph for ``claims`` / ``edges`` / ``cites``; ``run`` marks every URL, text and domain of it."""
    fragments, pages = sizes(edges)
    if edges > claims * fragments:
        raise ValueError(f"{edges} edges need more than {claims} claims x {fragments} fragments of unique pairs")
    if cites > pages * (pages - 1):
        raise ValueError(f"{cites} citations need more distinct page pairs than {pages} pages have")
    rng = random.Random(seed)
    prefix = f"https://{HOST}/{run}/"
    page_urls = [f"{prefix}p{i}" for i in range(pages)]
    page_domains = [f"d{i % DOMAINS}{DOMAIN_SUFFIX}" for i in range(pages)]
    page_years = [rng.randint(1990, 2025) for _ in range(pages)]
    fragment_page = [i % pages for i in range(fragments)]
    fragment_texts = [f"{run} synthetic passage {i} on page {i % pages}." for i in range(fragments)]
    fragment_hashes = [text_hash(t) for t in fragment_texts]
    claim_texts = [f"{run} synthetic claim {i}" for i in range(claims)]

    seen: set[int] = set()
    edge_fragment: list[int] = []
    edge_claim: list[int] = []
    while len(edge_fragment) < edges:  # bounded: edges <= claims * fragments (checked above)
        claim = rng.randrange(claims)
        fragment = rng.randrange(fragments)
        key = claim * fragments + fragment
        if key in seen:
            continue
        seen.add(key)
        edge_claim.append(claim)
        edge_fragment.append(fragment)
    edge_relation = [rng.choice(RELATIONS) for _ in range(edges)]
    edge_confidence = [rng.random() for _ in range(edges)]

    cited_pairs: set[int] = set()
    cite_citing: list[int] = []
    cite_cited: list[int] = []
    while len(cite_citing) < cites:  # bounded: cites <= pages * (pages - 1) (checked above)
        a, b = rng.randrange(pages), rng.randrange(pages)
        if a == b or a * pages + b in cited_pairs:
            continue
        cited_pairs.add(a * pages + b)
        cite_citing.append(a)
        cite_cited.append(b)

    data = ScaleData(
        run=run,
        page_urls=page_urls,
        page_domains=page_domains,
        page_years=page_years,
        fragment_page=fragment_page,
        fragment_texts=fragment_texts,
        fragment_hashes=fragment_hashes,
        claim_texts=claim_texts,
        edge_fragment=edge_fragment,
        edge_claim=edge_claim,
        edge_relation=edge_relation,
        edge_confidence=edge_confidence,
        cite_citing=cite_citing,
        cite_cited=cite_cited,
    )
    data.ground_truth()
    return data
