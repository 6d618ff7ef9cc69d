"""What every test shares, whatever its level.

The tree mirrors the package (CONTRIBUTING.md, "Where a test goes"): ``tests/unit/<package>/`` holds the tests of
one ``lyra`` package with no Neo4j and no model weights, ``tests/integration/<area>/`` the tests of a door or a
service against the real Neo4j (and, where marked ``models``, the real offline models); ``tests/support/`` holds
the helpers and subprocess scripts they share. Fixtures live in the conftest of the level that uses them
(``tests/unit/conftest.py``, ``tests/integration/conftest.py``); only what both levels need belongs here, and
nothing does yet. ``tests/unit/architecture/test_test_layout.py`` keeps this shape.
"""
