// mode: write
// A near-duplicate passage found on another page: the existing fragment is linked to that page too,
// so the page keeps its evidence and nothing is lost.
// Params: $rows = [{fragment_id, page_id}]
UNWIND $rows AS row
MATCH (f:Fragment {id: row.fragment_id})
MATCH (p:Page {id: row.page_id})
MERGE (f)-[:EXTRACTED_FROM]->(p)
RETURN f.id AS id
