# The README's two commands are `make demo` and `make test`; both install whatever is missing first (through
# `make setup`, the one place that installs). The other targets use the .venv as it is (VENV=... names another).
.PHONY: setup demo test test-unit test-integration test-models lint docs reference screenshots wheel bench bench-scale eval lock clean-state

VENV ?= .venv
BIN := $(VENV)/bin

setup:           ## install everything (Debian packages, .venv from requirements-dev.lock, Neo4j jars, the local LLM)
	scripts/setup.sh --dev

demo:            ## start the managed Neo4j, load the example graph, print its materials
	scripts/setup.sh
	$(BIN)/lyra demo

test:            ## the whole suite: ruff (lint, format) + mypy + pytest against the managed test Neo4j (CI runs this)
	LYRA_VENV=$(VENV) scripts/test.sh

test-unit:       ## tests/unit/<package>/ only: no Neo4j, no model weights (about 40 s)
	$(BIN)/python -m pytest -q tests/unit -m "not neo4j and not models"

test-integration: ## tests/integration/<area>/ against the managed test Neo4j (LYRA_TEST_INSTANCE=test2 … for another)
	LYRA_VENV=$(VENV) LYRA_TEST_SETUP=0 LYRA_TEST_LINT=0 scripts/test.sh -q tests/integration

test-models:     ## the tests marked `models` (the real offline models; most also need the managed test Neo4j)
	LYRA_VENV=$(VENV) LYRA_TEST_SETUP=0 LYRA_TEST_LINT=0 scripts/test.sh -q -m models tests

lint:            ## ruff check + ruff format --check + mypy (strict)
	$(BIN)/ruff check lyra tests benchmarks scripts
	$(BIN)/ruff format --check lyra tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/mypy benchmarks
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs:            ## the documentation site (docs/ -> site/), strictly: a broken link, anchor or missing page fails
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

reference:       ## regenerate docs/reference/*.md from the code (settings, catalogue, OpenAPI, errors, Cypher)
	$(BIN)/python scripts/gen_reference.py

screenshots:     ## docs/images/*.png: the report page and Neo4j Browser, taken with Debian's chromium
	$(BIN)/python scripts/screenshots.py

wheel:           ## build dist/lyra-*.whl (cypher/ and config/'s run-time files inside, as lyra/_resources)
	rm -rf build
	$(BIN)/python -m pip wheel --no-deps --no-build-isolation -w dist .

lock:            ## rewrite requirements.lock and requirements-dev.lock from the packages installed in the .venv
	$(BIN)/python scripts/lock.py

bench:           ## the benchmarks quoted in docs/evaluation/benchmarks.md
	$(BIN)/lyra bench confidence --claims 10000 --edges-per-claim 20
	$(BIN)/lyra bench faiss --fragments 100000
	$(BIN)/lyra bench pipeline --synthetic 10000
	$(BIN)/lyra bench api
	$(BIN)/lyra bench citations --sources 10 --candidates 100 --stage1-top-k 5 --pages 1000

bench-scale:     ## issue 14's table: Lyra beside a SQLite reconstruction of the original (benchmarks/, from a checkout)
	$(BIN)/python -m benchmarks.scale --claims 10000 --edges 100000 --cites 20000 --rounds 2 --floor

eval:            ## stance judge quality on the held-out test half of the labelled set
	$(BIN)/lyra eval nli --split test

clean-state:     ## stop every managed instance (each .lyra/neo4j/<name>/ with a conf/) and delete .lyra/ (all local graph data)
	-for conf in .lyra/neo4j/*/conf; do \
	  [ -d "$$conf" ] && LYRA_STATE_DIR=.lyra $(BIN)/lyra neo4j stop --instance "$$(basename "$$(dirname "$$conf")")"; \
	done
	rm -rf .lyra
