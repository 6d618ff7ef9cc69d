"""Test doubles shipped with Lyra, for users' own tests and the offline demo (the way httpx ships ``MockTransport``).

``scholarly``: :class:`~lyra.testing.scholarly.ReplayServer`, a local HTTP server speaking Semantic Scholar's and
OpenAlex's shapes from a corpus file, with fault injection and a request log (``python -m lyra.testing.scholarly``).

Nothing on the product's real paths imports this package: only the demo (``lyra.services.demo``), the benchmarks
(``lyra.bench``) and tests do (``tests/unit/architecture/test_layers.py`` holds that rule). It may import
``sources``, ``models`` and ``core``.
"""
