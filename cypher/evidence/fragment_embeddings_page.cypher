// mode: read
// One page of (fragment id, embedding) rows in id order, for rebuilding the FAISS index from Neo4j.
// Params: $after (last id of the previous page, '' to start), $limit
MATCH (f:Fragment)
WHERE f.id > $after AND f.embedding IS NOT NULL
RETURN f.id AS id, f.embedding AS embedding
ORDER BY f.id
LIMIT $limit
