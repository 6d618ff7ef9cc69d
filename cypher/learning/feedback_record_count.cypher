// mode: read
// How many feedback records carry an embedding (the FAISS index must hold as many).
MATCH (r:FeedbackRecord)
WHERE r.embedding IS NOT NULL
RETURN count(r) AS records
