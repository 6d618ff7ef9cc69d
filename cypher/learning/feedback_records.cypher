// mode: read
// Feedback records by id (without their embeddings). Params: $ids
MATCH (r:FeedbackRecord)
WHERE r.id IN $ids
RETURN r {.*, embedding: null, created_at: toString(r.created_at)} AS record
