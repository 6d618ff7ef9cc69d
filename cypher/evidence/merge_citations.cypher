// mode: write
// CITES between two known pages; one relationship per (citing, cited) pair.
// Params: $rows = [{id, citing_page_id, cited_page_id, citation_source}]
UNWIND $rows AS row
MATCH (a:Page {id: row.citing_page_id})
MATCH (b:Page {id: row.cited_page_id})
MERGE (a)-[r:CITES]->(b)
  ON CREATE SET r.id = row.id, r.citation_source = row.citation_source, r.created_at = datetime()
RETURN row.id AS requested_id, r.id AS id, r.id = row.id AS created
