"""Lyra: an evidence graph for AI-assisted research, stored in Neo4j."""

__version__ = "0.1.0"
