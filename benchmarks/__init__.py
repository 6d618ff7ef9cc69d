"""Benchmarks that compare Lyra with reconstructions of other systems: tooling beside the package, not in it.

Run from a checkout (the repository root on ``sys.path``): ``python -m benchmarks.scale --help``. The benchmarks that
measure a user's own install stay in the package as ``lyra bench pipeline|api|fetch|faiss|confidence|citations``.
"""
