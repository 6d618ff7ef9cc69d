"""PDF files in local ingest: text and metadata through pypdf; an encrypted, damaged or text-less PDF is skipped
with the reason and the walk goes on."""

from __future__ import annotations

from pathlib import Path

from lyra.sources.local_files import SkippedDocument, SourceDocument, WalkLimits, iter_documents
from tests.support.pdf_maker import make_encrypted_pdf, make_pdf

TEXT = "Melatonin taken one hour before bed shortened the time needed to fall asleep by seven minutes on average."


def read(folder: Path, limits: WalkLimits = WalkLimits()) -> tuple[dict[str, SourceDocument], dict[str, str]]:
    docs: dict[str, SourceDocument] = {}
    skipped: dict[str, str] = {}
    for item in iter_documents([folder], limits):
        if isinstance(item, SkippedDocument):
            skipped[Path(item.origin).name] = item.reason
        else:
            docs[Path(item.origin).name] = item
    return docs, skipped


def test_a_pdf_file_becomes_a_document_with_its_text_title_author_and_year(tmp_path: Path) -> None:
    pdf = make_pdf([TEXT, "A second page."], title="Melatonin trial", author="K. Sato", created="D:20200102")
    (tmp_path / "trial.pdf").write_bytes(pdf)
    docs, skipped = read(tmp_path)
    assert skipped == {}
    doc = docs["trial.pdf"]
    assert "fall asleep by seven minutes" in " ".join(doc.text.split()) and "A second page." in doc.text
    assert doc.title == "Melatonin trial" and doc.author == "K. Sato" and doc.year == 2020
    assert doc.page_type == "local" and doc.extraction_method == "pypdf"
    assert doc.url == (tmp_path / "trial.pdf").resolve().as_uri()
    assert doc.raw is not None and "Melatonin trial" in doc.raw  # metadata is scanned for dangerous patterns too


def test_a_pdf_without_metadata_takes_its_file_name_as_title(tmp_path: Path) -> None:
    (tmp_path / "sleep_study.pdf").write_bytes(make_pdf([TEXT]))
    docs, _ = read(tmp_path)
    assert docs["sleep_study.pdf"].title == "sleep study" and docs["sleep_study.pdf"].year is None


def test_encrypted_broken_and_empty_pdfs_are_skipped_with_a_reason_and_the_rest_is_read(tmp_path: Path) -> None:
    (tmp_path / "a_good.pdf").write_bytes(make_pdf([TEXT]))
    (tmp_path / "locked.pdf").write_bytes(make_encrypted_pdf(TEXT))
    (tmp_path / "cut.pdf").write_bytes(make_pdf([TEXT])[:200])
    (tmp_path / "fake.pdf").write_text("this is not a PDF at all")
    (tmp_path / "blank.pdf").write_bytes(make_pdf([""]))
    (tmp_path / "z_note.md").write_text("# Note\n\nStill read after the bad PDFs.\n")
    docs, skipped = read(tmp_path)
    assert sorted(docs) == ["a_good.pdf", "z_note.md"]
    assert "password" in skipped["locked.pdf"]
    assert skipped["cut.pdf"].startswith("broken PDF")
    assert "not a PDF" in skipped["fake.pdf"]
    assert "no text" in skipped["blank.pdf"]


def test_only_the_first_pages_of_a_long_pdf_are_read(tmp_path: Path) -> None:
    (tmp_path / "long.pdf").write_bytes(make_pdf([f"Page number {i} of the report." for i in range(6)]))
    docs, _ = read(tmp_path, WalkLimits(max_pdf_pages=2))
    assert "Page number 1" in docs["long.pdf"].text and "Page number 2" not in docs["long.pdf"].text
