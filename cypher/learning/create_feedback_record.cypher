// mode: write
// A feedback record (append-only: records are only ever created). Params: $row (all of the record's properties,
// with its embedding)
CREATE (r:FeedbackRecord)
SET r = $row, r.created_at = datetime()
RETURN r.id AS id, toString(r.created_at) AS created_at
