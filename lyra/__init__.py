"""Lyra: an evidence graph for AI-assisted research, stored in Neo4j."""

import os as _os

# torch's OpenMP workers spin-wait after each call and starve llama.cpp's threads on a 2-core machine
# (measured: ~5x slower stance judging when the embedder and the LLM alternate). Passive waiting fixes it.
# Must be set before torch is first imported; an explicit setting by the user wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
