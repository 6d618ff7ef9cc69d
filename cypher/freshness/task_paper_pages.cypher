// mode: read
// The paper pages a task read (Semantic Scholar / OpenAlex abstracts), the least recently checked first, at most
// $limit: what a refresh re-checks by their metadata (docs/concepts/living-evidence.md). A page never checked sorts
// by when it was read. Params: $task_id, $limit
MATCH (:Task {id: $task_id})-[rd:READ]->(p:Page)
WHERE p.page_type = 'academic_abstract'
RETURN p.id AS page_id, p.url AS url, p.doi AS doi, p.paper_hash AS paper_hash,
       p.paper_version AS paper_version, toString(p.paper_checked_at) AS checked_at
ORDER BY coalesce(p.paper_checked_at, rd.first_read_at) ASC, p.id
LIMIT $limit
