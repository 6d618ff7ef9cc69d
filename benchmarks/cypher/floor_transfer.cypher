// mode: read
// The write floor of `python -m benchmarks.scale --floor`: what sending a batch of rows to Neo4j and reading their ids back
// costs, with no write at all (the same rows and batch size the write statements get).
// Params: $rows = [{id, ...}]
UNWIND $rows AS row
RETURN row.id AS id
