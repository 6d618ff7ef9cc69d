// mode: read
// Fragments with their page's domain and its category, for building candidate pairs.
// Params: $ids
UNWIND $ids AS fid
MATCH (f:Fragment {id: fid})-[:EXTRACTED_FROM]->(p:Page)
OPTIONAL MATCH (p)-[:IN_DOMAIN]->(d:Domain)
WITH f, collect(d.domain_category)[0] AS category, collect(p.id)[0] AS page_id, collect(p.domain)[0] AS domain
RETURN f.id AS id, f.text AS text, f.embedding AS embedding, category AS domain_category, page_id, domain
