// mode: read
// The passages a page carries (its fragments, EXTRACTED_FROM it) with their text and whether they are superseded
// on it (no longer in the version last read, see freshness/supersede_passages). Params: $page_id
MATCH (:Page {id: $page_id})<-[e:EXTRACTED_FROM]-(f:Fragment)
RETURN f.id AS fragment_id, f.text AS text, e.superseded_at IS NOT NULL AS superseded
ORDER BY f.id
