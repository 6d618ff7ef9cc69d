// mode: read
// How many fragments carry an embedding (compared with the FAISS index on start-up).
MATCH (f:Fragment)
WHERE f.embedding IS NOT NULL
RETURN count(f) AS fragments
