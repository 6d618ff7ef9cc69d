// mode: read
// The pages with a DOI that a task read, whose retraction status a check reads fresh
// (docs/concepts/retractions.md): the least recently checked first (never checked first of all), at most $limit,
// so a bounded check works through a large task over several runs. Params: $task_id, $limit
MATCH (:Task {id: $task_id})-[:READ]->(p:Page)
WHERE p.doi IS NOT NULL AND p.doi <> ''
RETURN p.id AS page_id, p.doi AS doi, p.retraction_state AS state
ORDER BY p.retraction_checked_at IS NOT NULL, p.retraction_checked_at, p.id
LIMIT $limit
