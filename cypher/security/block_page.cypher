// mode: write
// A page that carried a dangerous pattern is blocked for every task until a person clears it (feedback page_unblock):
// one PageBlock per page key (the canonical URL). The first finding keeps its time, task and detail; a later one
// only counts. Returns whether the page was blocked before.
// Params: $url, $page_url, $domain, $kinds, $detail, $finding_id, $task_id
MERGE (b:PageBlock {url: $url})
  ON CREATE SET b.page_url = $page_url, b.domain = $domain, b.kinds = $kinds, b.detail = $detail,
                b.finding_id = $finding_id, b.task_id = $task_id, b.blocked_at = datetime(), b.findings = 0
WITH b, b.findings > 0 AS was_blocked
SET b.findings = b.findings + 1
RETURN b.url AS url, was_blocked
