// mode: read
// Every page block, newest first, at most $limit. Params: $limit
MATCH (b:PageBlock)
RETURN b.url AS url, b.page_url AS page_url, b.domain AS domain, b.kinds AS kinds, b.detail AS detail,
       b.finding_id AS finding_id, b.task_id AS task_id, b.blocked_at AS blocked_at, b.findings AS findings
ORDER BY b.blocked_at DESC, b.url
LIMIT $limit
