// mode: read
// Domains carrying a dynamic block (dangerous_pattern | high_rejection_rate), newest first.
MATCH (d:Domain)
WHERE d.domain_blocked = true
RETURN d.name AS domain, d.domain_block_reason AS domain_block_reason, d.domain_block_detail AS detail,
       d.domain_block_cause_id AS cause_id, d.domain_blocked_at AS blocked_at,
       d.original_domain_category AS original_domain_category
ORDER BY d.domain_blocked_at DESC
