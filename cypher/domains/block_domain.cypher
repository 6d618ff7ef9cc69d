// mode: write
// A dynamic block on a domain (dangerous_pattern | high_rejection_rate), kept on its Domain node: the first block
// keeps its time and cause; the category before the block is kept as original_domain_category.
// Params: $domain, $category, $reason_code, $detail, $cause_id
MERGE (d:Domain {name: $domain})
  ON CREATE SET d.domain_category = $category
WITH d, coalesce(d.domain_blocked, false) AS was_blocked
SET d.domain_blocked = true,
    d.domain_block_reason = CASE WHEN was_blocked THEN d.domain_block_reason ELSE $reason_code END,
    d.domain_block_detail = CASE WHEN was_blocked THEN d.domain_block_detail ELSE $detail END,
    d.domain_block_cause_id = CASE WHEN was_blocked THEN d.domain_block_cause_id ELSE $cause_id END,
    d.domain_blocked_at = CASE WHEN was_blocked THEN d.domain_blocked_at ELSE datetime() END,
    d.original_domain_category = coalesce(d.original_domain_category, d.domain_category)
RETURN d.name AS domain, was_blocked, d.domain_block_reason AS domain_block_reason
