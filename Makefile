# The two commands of the README. Both install whatever is missing first.
.PHONY: demo test lint bench eval clean-state

demo:            ## start the managed Neo4j, load the example graph, print its materials
	scripts/setup.sh
	.venv/bin/lyra demo

test:            ## ruff + mypy + pytest against the managed test Neo4j
	scripts/test.sh

lint:
	.venv/bin/ruff check lyra tests
	.venv/bin/ruff format --check lyra tests
	.venv/bin/mypy

bench:           ## the benchmarks quoted in the README
	.venv/bin/lyra bench confidence --claims 10000 --edges-per-claim 20
	.venv/bin/lyra bench faiss --fragments 100000
	.venv/bin/lyra bench pipeline --synthetic 10000
	.venv/bin/lyra bench api
	.venv/bin/lyra bench citations --sources 10 --candidates 100 --stage1-top-k 5 --pages 1000

eval:            ## stance judge quality on the held-out test half of the labelled set
	.venv/bin/lyra eval nli --split test

clean-state:     ## stop the managed instances and delete .lyra/ (all local graph data)
	-.venv/bin/lyra neo4j stop
	-.venv/bin/lyra neo4j stop --instance test
	rm -rf .lyra
