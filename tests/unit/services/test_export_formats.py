"""The export's escaping, property-tested: whatever a source's title says, a BibTeX entry built from it parses (braces
always balance) and keeps its letters; a CSV cell never starts a formula; Markdown source text never becomes a link,
an image or HTML. Pure functions, no Neo4j."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from lyra.services.export import latex, markdown_text, spreadsheet_cell

HOSTILE = st.text(
    alphabet=st.sampled_from(list("{}\\%&$#_^~[]()<>!*`|@=+-\n\t abcXYZ019üé–中")), min_size=0, max_size=60
)


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_any_title_makes_a_bibtex_entry_that_parses_and_keeps_its_letters(title: str) -> None:
    import pybtex.database
    from pylatexenc.latex2text import LatexNodes2Text

    entry = "@misc{key,\n  title = {" + latex(title) + "}\n}\n"
    parsed = pybtex.database.parse_string(entry, "bibtex")
    decoded = LatexNodes2Text().latex_to_text(parsed.entries["key"].fields["title"])
    assert re.findall(r"[A-Za-z0-9üé中]", decoded) == re.findall(r"[A-Za-z0-9üé中]", title)


@given(HOSTILE)
def test_a_csv_cell_never_starts_a_formula(text: str) -> None:
    cell = spreadsheet_cell(text)
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert cell in (text, "'" + text)


@given(HOSTILE)
def test_markdown_source_text_is_one_line_without_links_images_or_html(text: str) -> None:
    from markdown_it import MarkdownIt

    line = markdown_text(text)
    assert "\n" not in line
    tokens = MarkdownIt("commonmark").parse("- " + line)
    inline = [child for token in tokens if token.children for child in token.children]
    assert not [t for t in inline if t.type in {"link_open", "image", "html_inline", "code_inline", "em_open"}]
