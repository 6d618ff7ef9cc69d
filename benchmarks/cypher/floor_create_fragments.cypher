// mode: write
// The write floor of `python -m benchmarks.scale --floor`: new fragments written blindly, with no identity check (no MERGE on
// text_hash, no check for an existing link), each linked to its page as a new fragment is; the labels, properties
// and indexes are those of evidence/upsert_fragments. Not a write path of Lyra: it would break decision record 0002 (a known
// text must keep its fragment) and exists only to show what the identity checks cost. Params: $rows as in
// evidence/upsert_fragments
UNWIND $rows AS row
MATCH (p:Page {id: row.page_id})
CREATE (f:Fragment:Unsequenced {id: row.id, text_hash: row.text_hash, text: row.text,
                                extraction_method: row.extraction_method, position: row.position})
CREATE (f)-[:EXTRACTED_FROM]->(p)
RETURN f.id AS id
