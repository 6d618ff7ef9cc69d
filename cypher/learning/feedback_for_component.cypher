// mode: read
// The newest feedback records about one component (without their embeddings). Params: $component, $limit
MATCH (r:FeedbackRecord {component: $component})
RETURN r {.*, embedding: null, created_at: toString(r.created_at)} AS record
ORDER BY r.created_at DESC, r.id DESC
LIMIT $limit
