# The two commands of the README. Both install whatever is missing first.
.PHONY: demo test lint bench clean-state

demo:            ## start the managed Neo4j, load the example graph, print its materials
	scripts/setup.sh
	.venv/bin/lyra demo

test:            ## ruff + mypy + pytest against the managed test Neo4j
	scripts/test.sh

lint:
	.venv/bin/ruff check lyra tests
	.venv/bin/ruff format --check lyra tests
	.venv/bin/mypy

bench:           ## confidence benchmark at the issue's size (10k claims x 20 edges)
	.venv/bin/lyra bench confidence --claims 10000 --edges-per-claim 20

clean-state:     ## stop the managed instances and delete .lyra/ (all local graph data)
	-.venv/bin/lyra neo4j stop
	-.venv/bin/lyra neo4j stop --instance test
	rm -rf .lyra
