"""Tiny valid PDFs written by hand for the tests (no PDF writer with text support is installed): one page per
paragraph, Helvetica text in a content stream, an information dictionary, and a correct cross-reference table."""

from __future__ import annotations


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _lines(paragraph: str, width: int = 80) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in paragraph.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines


def make_pdf(
    pages: list[str], *, title: str | None = None, author: str | None = None, created: str | None = None
) -> bytes:
    """A PDF whose page ``i`` shows ``pages[i]``; ``created`` is a PDF date such as ``D:20210315120000Z``."""
    objects: list[bytes] = []  # object i+1
    n_pages = len(pages)
    font_id = 3 + 2 * n_pages
    info_id = font_id + 1
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    for i, paragraph in enumerate(pages):
        content_id = 4 + 2 * i
        objects.append(
            (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_id} 0 R "
                f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>"
            ).encode()
        )
        body = "BT /F1 11 Tf 14 TL 50 740 Td " + " ".join(f"({_escape(line)}) '" for line in _lines(paragraph))
        stream = (body + " ET").encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    info = {"Title": title, "Author": author, "CreationDate": created}
    entries = " ".join(f"/{key} ({_escape(value)})" for key, value in info.items() if value)
    objects.append(f"<< {entries} >>".encode("latin-1"))

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: list[int] = []
    for number, body_bytes in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body_bytes + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        info_id,
        xref,
    )
    return bytes(out)


def make_encrypted_pdf(text: str) -> bytes:
    """A PDF encrypted with a user password (pypdf can encrypt an existing document)."""
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([text], title="Secret"))))
    writer.encrypt(user_password="s3cret", owner_password="owner", algorithm="AES-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
