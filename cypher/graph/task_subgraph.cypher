// mode: read
// A task's evidence subgraph as plain node and edge lists: the task, its claims, the fragments with stance
// edges to them, the pages of them the task READ (never another task's copy) and their domains, and CITES between
// those pages. At most $limit stance edges. Fragment captions are the whole text with the scanner stamp
// (scanned_with); the caller shortens and marks them (lyra.sources.untrusted), and page titles too.
// Params: $task_id, $limit
MATCH (t:Task {id: $task_id})
OPTIONAL MATCH (t)-[:HAS_CLAIM]->(c:Claim)
WITH t, collect(c) AS claims
CALL (claims) {
  UNWIND claims AS c
  MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
  WITH r, f, c ORDER BY r.id LIMIT $limit
  RETURN collect({id: r.id, type: type(r), source: f.id, target: c.id, nli_confidence: r.nli_confidence,
                  source_domain_category: r.source_domain_category,
                  edge_human_corrected: coalesce(r.edge_human_corrected, false)}) AS stance,
         collect(DISTINCT f) AS fragments
}
CALL (t, fragments) {
  UNWIND fragments AS f
  MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
  WHERE (t)-[:READ]->(p)
  OPTIONAL MATCH (p)-[:IN_DOMAIN]->(d:Domain)
  RETURN collect(DISTINCT p) AS pages, collect(DISTINCT d) AS domains,
         collect(DISTINCT {type: 'EXTRACTED_FROM', source: f.id, target: p.id}) AS extracted,
         collect(DISTINCT CASE WHEN d IS NOT NULL THEN {type: 'IN_DOMAIN', source: p.id, target: d.name} END) AS in_domain
}
CALL (pages) {
  UNWIND pages AS a
  MATCH (a)-[x:CITES]->(b:Page)
  WHERE b IN pages
  RETURN collect({id: x.id, type: 'CITES', source: a.id, target: b.id}) AS cites
}
WITH t, claims, stance, fragments, pages, domains, extracted, in_domain, cites,
     COUNT { (t)-[:HAS_CLAIM]->(:Claim)<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment) } AS stance_total
RETURN
  [{id: t.id, label: 'Task', caption: t.hypothesis}] +
  [c IN claims | {id: c.id, label: 'Claim', caption: c.text,
                  claim_adoption_status: coalesce(c.claim_adoption_status, 'adopted')}] +
  [f IN fragments | {id: f.id, label: 'Fragment', caption: f.text, scanned_with: f.scanned_with}] +
  [p IN pages | {id: p.id, label: 'Page', caption: p.title, url: p.url, year: p.year, domain: p.domain}] +
  [d IN domains | {id: d.name, label: 'Domain', caption: d.name, domain_category: d.domain_category}] AS nodes,
  [c IN claims | {type: 'HAS_CLAIM', source: t.id, target: c.id}] + stance + extracted + in_domain + cites AS edges,
  stance_total > size(stance) AS truncated
