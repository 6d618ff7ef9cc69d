// mode: write
// What a page's source said when it was last fetched or re-checked (docs/concepts/living-evidence.md): its HTTP
// validators (etag, last_modified: sent back as If-None-Match / If-Modified-Since by the next re-check), the sha256
// of its body (content_hash), when it was checked (checked_at) and, when the content changed, changed_at. A value
// the answer did not carry is removed (a server that drops its validators is asked unconditionally next time).
// Params: $rows = [{page_id, etag, last_modified, content_hash, changed}]
UNWIND $rows AS row
MATCH (p:Page {id: row.page_id})
SET p.etag = row.etag, p.last_modified = row.last_modified, p.content_hash = row.content_hash,
    p.checked_at = datetime()
FOREACH (_ IN CASE WHEN row.changed THEN [1] ELSE [] END | SET p.changed_at = datetime())
RETURN p.id AS page_id
