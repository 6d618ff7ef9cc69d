// mode: write
// Store claim embeddings (similarity search over claims).
// Params: $rows = [{id, embedding}]
UNWIND $rows AS row
MATCH (c:Claim {id: row.id})
SET c.embedding = row.embedding
RETURN count(c) AS updated
