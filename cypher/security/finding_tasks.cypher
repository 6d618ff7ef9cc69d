// mode: read
// How many distinct tasks met a dangerous pattern on a domain (SecurityFinding, append-only), with a few of the
// pages: the escalation to a domain block counts these. Params: $domain
MATCH (s:SecurityFinding {domain: $domain})
WITH count(DISTINCT s.task_id) AS tasks, collect(DISTINCT s.url) AS urls
RETURN tasks, urls[..5] AS urls
