#!/usr/bin/env bash
# The test command: installs what is missing, starts the managed *test* Neo4j (bolt 7688, http 7475,
# separate from the demo's data), runs ruff (lint and format), mypy, the strict docs build and pytest against it,
# and stops it again if it started it. Extra arguments go to pytest. Fails when a check fails or when no test ran.
# LYRA_TEST_INSTANCE=test2 (or any instance name) runs against another managed instance, e.g. for a second checkout.
# LYRA_TEST_SETUP=0 skips the install step, LYRA_TEST_LINT=0 the ruff and mypy checks (`make test-integration`,
# `make test-models`);
# LYRA_VENV names another virtual environment than .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${LYRA_VENV:-.venv}
[ "${LYRA_TEST_SETUP:-1}" = 1 ] && scripts/setup.sh --dev
[ -x "$venv/bin/python" ] || { echo "no $venv: run make setup" >&2; exit 2; }

instance=${LYRA_TEST_INSTANCE:-test}
was_running=0
"$venv/bin/lyra" neo4j status --instance "$instance" >/dev/null 2>&1 && was_running=1
"$venv/bin/lyra" neo4j start --instance "$instance" >&2
if [ $was_running -eq 0 ]; then
  trap '"$venv/bin/lyra" neo4j stop --instance "$instance" >&2 || true' EXIT
fi
eval "$("$venv/bin/lyra" neo4j env --instance "$instance")"
export NEO4J_URI NEO4J_USERNAME NEO4J_PASSWORD
# the instance's Browser address, as `lyra neo4j status` prints it (its ports are written once, in its folder)
browser_url=$("$venv/bin/lyra" neo4j status --instance "$instance" | sed -n 's#^browser_url: \(http://[^/]*\)/browser/$#\1#p')
export LYRA_NEO4J_HTTP_URL=$browser_url
export LYRA_REQUIRE_NEO4J=1

if [ "${LYRA_TEST_LINT:-1}" = 1 ]; then
  "$venv/bin/ruff" check lyra tests benchmarks scripts
  "$venv/bin/ruff" format --check lyra tests benchmarks scripts
  "$venv/bin/mypy"
  "$venv/bin/mypy" benchmarks
  # the documentation site: a broken link, a broken anchor or a page missing from the nav fails
  NO_MKDOCS_2_WARNING=1 "$venv/bin/mkdocs" build --strict --quiet
fi

set +e
"$venv/bin/pytest" "$@"
status=$?
set -e
if [ $status -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit $status
