// mode: write
// A person clears a page block (feedback page_unblock; the FeedbackEvent keeps the audit). Returns what was cleared,
// nothing when the page is not blocked. Params: $url
MATCH (b:PageBlock {url: $url})
WITH b, b {.*} AS cleared
DELETE b
RETURN cleared.url AS url, cleared.page_url AS page_url, cleared.domain AS domain, cleared.kinds AS kinds,
       cleared.finding_id AS finding_id, cleared.blocked_at AS blocked_at
