// mode: read
// Fragments numbered after $after, in sequence order (one page of a FAISS index's catch-up): ids only; the
// embeddings are fetched only for the ids the index does not hold yet.
// Params: $after, $limit
MATCH (f:Fragment)
WHERE f.seq > $after
RETURN f.id AS id, f.seq AS seq
ORDER BY f.seq
LIMIT $limit
