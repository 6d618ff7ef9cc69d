// mode: read
// The page blocks among the given page keys (canonical URLs). Params: $urls
UNWIND $urls AS key
MATCH (b:PageBlock {url: key})
RETURN b.url AS url, b.page_url AS page_url, b.domain AS domain, b.kinds AS kinds, b.detail AS detail,
       b.finding_id AS finding_id, b.task_id AS task_id, b.blocked_at AS blocked_at, b.findings AS findings
