"""Logging set-up: everything goes to stderr, because stdout carries MCP stdio and CLI output."""

from __future__ import annotations

import logging
import sys


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The driver is chatty at INFO about routing/notifications.
    logging.getLogger("neo4j").setLevel(logging.WARNING)
    for chatty in ("faiss", "faiss.loader", "sentence_transformers", "transformers", "httpx", "trafilatura"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
