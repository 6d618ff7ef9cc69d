"""Raw HTTP for the request-size tests (REST and the hostile-input suite): a chunked POST over a plain socket."""

from __future__ import annotations

import json
import select
import socket
from dataclasses import dataclass

CHUNK = 64 * 1024


@dataclass
class Answer:
    status: int
    body: dict[str, object]
    sent: int  # body bytes the client managed to send before the answer came


def post_chunked(port: int, path: str, head: bytes, padding: int, tail: bytes) -> Answer:
    """POST ``head + b" " * padding + tail`` with Transfer-Encoding: chunked (no Content-Length), stopping as soon as
    the server answers or closes; returns its status, JSON body and how much of the body was sent."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    sock.sendall(request.encode())
    pieces = [head, *([b" " * CHUNK] * (padding // CHUNK)), tail]
    sent = 0
    for piece in pieces:
        readable, _, _ = select.select([sock], [], [], 0)
        if readable:
            break
        try:
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(piece)
    else:
        sock.sendall(b"0\r\n\r\n")
    received = b""
    while b"\r\n\r\n" not in received or not _complete(received):
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            break
        if not data:
            break
        received += data
    sock.close()
    header, _, body = received.partition(b"\r\n\r\n")
    status = int(header.split(b" ", 2)[1])
    return Answer(status, json.loads(body) if body else {}, sent)


def _complete(received: bytes) -> bool:
    header, _, body = received.partition(b"\r\n\r\n")
    for line in header.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False
