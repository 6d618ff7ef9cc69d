// mode: write
// A person clears a page block (feedback page_unblock; the FeedbackEvent keeps the audit). Returns what was cleared,
// nothing when the page is not blocked. Params: $url
MATCH (b:PageBlock {url: $url})
WITH b, b.url AS url, b.page_url AS page_url, b.domain AS domain, b.kinds AS kinds, b.finding_id AS finding_id,
     toString(b.blocked_at) AS blocked_at
DELETE b
RETURN url, page_url, domain, kinds, finding_id, blocked_at
