// mode: read
// One domain's stored state (category and dynamic block), if the domain is known. Params: $domain
MATCH (d:Domain {name: $domain})
RETURN d.name AS domain, d.domain_category AS domain_category, coalesce(d.domain_blocked, false) AS blocked,
       d.domain_block_reason AS domain_block_reason, d.domain_block_detail AS detail,
       d.domain_block_cause_id AS cause_id, d.domain_blocked_at AS blocked_at,
       d.original_domain_category AS original_domain_category
