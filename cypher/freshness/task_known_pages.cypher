// mode: read
// The web pages a task read (http(s) URL, not a paper's abstract page: those are judged by their metadata), the
// least recently checked first, at most $limit: what a refresh re-checks with a conditional GET. A page that was
// never checked sorts by when it was read. Params: $task_id, $limit
MATCH (:Task {id: $task_id})-[rd:READ]->(p:Page)
WHERE NOT p.page_type IN ['local', 'academic', 'academic_abstract']
  AND (p.url STARTS WITH 'http://' OR p.url STARTS WITH 'https://')
RETURN p.id AS page_id, p.url AS url, p.etag AS etag, p.last_modified AS last_modified,
       p.content_hash AS content_hash, toString(p.checked_at) AS checked_at
ORDER BY coalesce(p.checked_at, rd.first_read_at) ASC, p.id
LIMIT $limit
