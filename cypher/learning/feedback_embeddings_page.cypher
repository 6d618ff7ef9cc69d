// mode: read
// Feedback records' embeddings in id order, one page after $after (to rebuild the FAISS index). Params: $after,
// $limit
MATCH (r:FeedbackRecord)
WHERE r.id > $after AND r.embedding IS NOT NULL
RETURN r.id AS id, r.embedding AS embedding
ORDER BY r.id
LIMIT $limit
