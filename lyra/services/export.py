"""A task's evidence as a file: CSV for a spreadsheet, CSL-JSON / BibTeX / RIS for a reference manager, Markdown to
read.

Everything comes from :meth:`MaterialsService.pages` (the one reader of confidence and evidence), so an export says
exactly what ``get_materials`` says: the same scores, the same evidence items, only the task's own pages. The
citation formats list each page or paper once (keyed by its source id), with the claims it bears on in a note.

Source text (passages, titles, venues) is untrusted: text the scanner flagged is withheld unless the request reveals
it. In CSV a cell that a spreadsheet would run as a formula (``= + - @``, tab, carriage return first) is prefixed
with an apostrophe; in Markdown source text is escaped so it cannot become a link, an image or HTML; BibTeX values
are LaTeX-encoded with balanced braces (pylatexenc), written by bibtexparser; RIS by rispy.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lyra.models.api import (
    Evidence,
    EvidencePage,
    GetMaterialsRequest,
    MaterialClaim,
    Materials,
    MaterialsOptions,
    SourceText,
)
from lyra.models.export import EXPORT_FORMATS, ExportRequest, ExportResult
from lyra.services.materials import MaterialsService

log = logging.getLogger(__name__)

EVIDENCE_PER_CLAIM = 1000  # MaterialsOptions.evidence_limit's maximum
CLAIMS_PER_READ = 500
CSV_COLUMNS = (
    "claim_id",
    "claim",
    "claim_confidence",
    "claim_uncertainty",
    "claim_controversy",
    "relation",
    "judge",
    "confidence",
    "weight",
    "human_reviewed",
    "passage",
    "decisive_sentence",
    "source_id",
    "title",
    "url",
    "doi",
    "year",
    "venue",
    "domain_category",
    "edge_id",
    "fragment_id",
    "retraction",
)
RETRACTION_WORDS = {
    "retracted": "RETRACTED (its evidence counts for nothing)",
    "has_concern": "under an expression of concern (shown, not counted)",
    "corrected": "corrected (shown, not counted)",
    "superseded": "no longer on its page (counts for nothing; decision record 0016)",
}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~^$-])")
_BIBTEX_KEY = re.compile(r"[^A-Za-z0-9_:-]")


@dataclass
class Source:
    """One page or paper behind the evidence, with the claims it bears on."""

    page: EvidencePage
    claims: dict[str, set[str]] = field(default_factory=dict)  # claim id -> relations


@dataclass
class Collected:
    claims: list[MaterialClaim]
    sources: dict[str, Source]
    hypothesis: str
    truncated: list[str]


def text_of(value: SourceText | None, withheld: list[int]) -> str:
    """The source's text, or a marker when it was withheld (counted)."""
    if value is None:
        return ""
    if value.text is None:
        withheld[0] += 1
        return "[withheld: flagged by the scanner: " + "; ".join(value.findings) + "]"
    return value.text + (" …" if value.truncated else "")


def spreadsheet_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: one that starts like a formula gets a leading apostrophe."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def markdown_text(text: str) -> str:
    """Source text on one Markdown line, every character with a Markdown or HTML meaning escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def judge_of(item: Evidence) -> str:
    """Who drew the edge (an edge written before judges were named says only human or offline)."""
    if item.judge:
        return item.judge
    return "human" if item.edge_human_corrected else "offline"


def collect(pages: Iterable[Materials]) -> Collected:
    claims: list[MaterialClaim] = []
    sources: dict[str, Source] = {}
    truncated: list[str] = []
    hypothesis = ""
    for page in pages:
        hypothesis = page.hypothesis
        for claim in page.claims:
            claims.append(claim)
            if claim.evidence_truncated:
                truncated.append(claim.claim_id)
            for item in claim.evidence:
                for evidence_page in item.pages:
                    source = sources.setdefault(evidence_page.source_id, Source(evidence_page))
                    source.claims.setdefault(claim.claim_id, set()).add(item.relation)
    return Collected(claims, sources, hypothesis, truncated)


# ----------------------------------------------------------------------------- formats
def to_csv(data: Collected, withheld: list[int]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for claim in data.claims:
        for item in claim.evidence:
            row: list[Any] = [
                claim.claim_id,
                claim.text,
                f"{claim.confidence:.6f}",
                f"{claim.uncertainty:.6f}",
                f"{claim.controversy:.6f}",
                item.relation,
                judge_of(item),
                f"{item.nli_confidence:.6f}",
                f"{item.weight:.6f}",
                "yes" if item.edge_human_corrected else "no",
                text_of(item.passage, withheld),
                text_of(item.decisive_sentence, withheld),
                item.source_id,
                text_of(item.title, withheld),
                item.url,
                item.doi,
                item.year,
                text_of(item.venue, withheld),
                item.source_domain_category,
                item.edge_id,
                item.fragment_id,
                "retracted" if item.retracted else "superseded" if item.superseded else (item.retraction or ""),
            ]
            writer.writerow([spreadsheet_cell(cell) for cell in row])
    return out.getvalue()


def source_note(source: Source, claim_text: dict[str, str]) -> str:
    parts = []
    for claim_id, relations in sorted(source.claims.items()):
        parts.append(f"{'/'.join(sorted(relations))}: {claim_text.get(claim_id, claim_id)}")
    status = source.page.retraction
    flag = f"{RETRACTION_WORDS[status.state].split(' (')[0].upper()}. " if status and status.state != "none" else ""
    return flag + "Lyra evidence. " + " | ".join(parts)


def to_csl_json(data: Collected, withheld: list[int]) -> str:
    claim_text = {c.claim_id: c.text for c in data.claims}
    items: list[dict[str, Any]] = []
    for source_id, source in data.sources.items():
        page = source.page
        item: dict[str, Any] = {
            "id": source_id,
            "type": "article-journal" if page.doi else "webpage",
            "title": text_of(page.title, withheld) or (page.url or source_id),
            "note": source_note(source, claim_text),
        }
        if page.url:
            item["URL"] = page.url
        if page.doi:
            item["DOI"] = page.doi
        if page.year is not None:
            item["issued"] = {"date-parts": [[page.year]]}
        venue = text_of(page.venue, withheld)
        if venue:
            item["container-title"] = venue
        items.append(item)
    return json.dumps(items, ensure_ascii=False, indent=2) + "\n"


def latex(value: str) -> str:
    """A BibTeX field value: LaTeX-encoded, with every brace of the source written as a command, so the value's
    braces always balance whatever the source says."""
    from pylatexenc.latexencode import unicode_to_latex

    encoded = unicode_to_latex(
        value, non_ascii_only=False, replacement_latex_protection="braces-all", unknown_char_policy="keep"
    )
    return str(encoded).replace("\\{", "{\\textbraceleft}").replace("\\}", "{\\textbraceright}")


def bibtex_key(source_id: str, used: set[str]) -> str:
    base = _BIBTEX_KEY.sub("_", source_id) or "source"
    key, n = base, 1
    while key in used:
        n += 1
        key = f"{base}_{n}"
    used.add(key)
    return key


def url_value(url: str) -> str:
    """A URL in a BibTeX value: characters BibTeX counts (braces) or LaTeX reads (backslash) percent-encoded."""
    return url.replace("\\", "%5C").replace("{", "%7B").replace("}", "%7D")


def to_bibtex(data: Collected, withheld: list[int]) -> str:
    from bibtexparser.entrypoint import write_string
    from bibtexparser.library import Library
    from bibtexparser.model import Entry, Field

    logging.getLogger("pylatexenc").setLevel(logging.ERROR)  # it warns once per character it keeps as it is
    claim_text = {c.claim_id: c.text for c in data.claims}
    library = Library()
    used: set[str] = set()
    for source_id, source in data.sources.items():
        page = source.page
        fields = [Field("title", latex(text_of(page.title, withheld) or (page.url or source_id)))]
        if page.year is not None:
            fields.append(Field("year", str(page.year)))
        venue = text_of(page.venue, withheld)
        if venue and page.doi:
            fields.append(Field("journal", latex(venue)))
        elif venue:
            fields.append(Field("howpublished", latex(venue)))
        if page.doi:
            fields.append(Field("doi", url_value(page.doi)))
        if page.url:
            fields.append(Field("url", url_value(page.url)))
        fields.append(Field("note", latex(source_note(source, claim_text))))
        library.add(Entry("article" if page.doi else "misc", bibtex_key(source_id, used), fields))
    return str(write_string(library))


def to_ris(data: Collected, withheld: list[int]) -> str:
    import rispy

    claim_text = {c.claim_id: c.text for c in data.claims}
    entries: list[dict[str, Any]] = []
    for source_id, source in data.sources.items():
        page = source.page
        entry: dict[str, Any] = {
            "type_of_reference": "JOUR" if page.doi else "ELEC",
            "id": source_id,
            "title": " ".join((text_of(page.title, withheld) or (page.url or source_id)).split()),
            "notes": [" ".join(source_note(source, claim_text).split())],
        }
        if page.year is not None:
            entry["year"] = str(page.year)
        if page.doi:
            entry["doi"] = page.doi
        if page.url:
            entry["urls"] = [page.url]
        venue = " ".join(text_of(page.venue, withheld).split())
        if venue:
            entry["journal_name" if page.doi else "secondary_title"] = venue
        entries.append(entry)
    return str(rispy.dumps(entries))


def to_markdown(data: Collected, task_id: str, withheld: list[int]) -> str:
    lines = [f"# Evidence for task `{task_id}`", ""]
    if data.hypothesis:
        lines += [f"Hypothesis: {markdown_text(data.hypothesis)}", ""]
    lines += [
        "Confidence is the mean of Beta(alpha, beta) over the claim's SUPPORTS and REFUTES evidence; passages, "
        "titles and venues below are the sources' own text, quoted as data.",
        "",
    ]
    for claim in data.claims:
        low, high = claim.credible_interval_95
        lines += [
            f"## {markdown_text(claim.text)}",
            "",
            f"- confidence {claim.confidence:.3f} (95% interval {low:.3f}–{high:.3f}), uncertainty "
            f"{claim.uncertainty:.3f}, controversy {claim.controversy:.3f}",
            f"- evidence: {claim.supports_count} supporting, {claim.refutes_count} refuting, "
            f"{claim.neutral_count} neutral; {claim.independent_sources} independent supporting sources",
            f"- status: {claim.source_verification_status} ({claim.verification_reason.replace('_', ' ')})"
            + ("; rejected by a reviewer" if claim.claim_adoption_status == "not_adopted" else ""),
            "",
        ]
        for item in claim.evidence:
            cite = [markdown_text(text_of(item.title, withheld)) or "untitled"]
            if item.year is not None:
                cite.append(str(item.year))
            if item.doi:
                cite.append("doi " + markdown_text(item.doi))
            elif item.url:
                cite.append(markdown_text(item.url))
            lines.append(
                f"- **{item.relation}** ({judge_of(item)}, confidence {item.nli_confidence:.2f}, weight "
                f"{item.weight:.2f}): {'; '.join(cite)}"
                + (f" — {RETRACTION_WORDS['retracted']}" if item.retracted else "")
                + (f" — {RETRACTION_WORDS['superseded']}" if item.superseded and not item.retracted else "")
                + (f" — {RETRACTION_WORDS[item.retraction]}" if item.retraction in ("has_concern", "corrected") else "")
            )
            passage = text_of(item.passage, withheld)
            if passage:
                lines.append(f"  > {markdown_text(passage)}")
        if claim.evidence_truncated:
            lines.append("- … more evidence than one export lists")
        lines.append("")
    return "\n".join(lines)


class ExportService:
    def __init__(self, materials: MaterialsService) -> None:
        self.materials = materials

    def _pages(self, request: ExportRequest) -> Iterator[Materials]:
        return self.materials.pages(
            GetMaterialsRequest(
                task_id=request.task_id,
                limit=CLAIMS_PER_READ,
                options=MaterialsOptions(
                    evidence_limit=EVIDENCE_PER_CLAIM,
                    include_neutral=request.include_neutral,
                    include_not_adopted=request.include_not_adopted,
                    reveal_flagged=request.reveal_flagged,
                ),
            )
        )

    def export(self, request: ExportRequest) -> ExportResult:
        data = collect(self._pages(request))
        withheld = [0]
        match request.format:
            case "csv":
                content = to_csv(data, withheld)
            case "csl-json":
                content = to_csl_json(data, withheld)
            case "bibtex":
                content = to_bibtex(data, withheld)
            case "ris":
                content = to_ris(data, withheld)
            case "markdown":
                content = to_markdown(data, request.task_id, withheld)
        media_type, extension = EXPORT_FORMATS[request.format]
        log.info(
            "exported task %s as %s: %d claims, %d sources",
            request.task_id,
            request.format,
            len(data.claims),
            len(data.sources),
        )
        return ExportResult(
            task_id=request.task_id,
            format=request.format,
            media_type=media_type,
            filename=f"{request.task_id}-evidence.{extension}",
            content=content,
            claims=len(data.claims),
            evidence_items=sum(len(c.evidence) for c in data.claims),
            sources=len(data.sources),
            withheld=withheld[0],
            evidence_truncated_claims=data.truncated,
        )
