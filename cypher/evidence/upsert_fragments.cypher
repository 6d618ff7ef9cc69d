// mode: write
// Fragments are global and unique by text_hash: a known text keeps its id; the fragment is linked to the page.
// The fragment's embedding (when given) is stored on the node so the FAISS index can be rebuilt from Neo4j.
// A new fragment is labelled Unsequenced until fragment_index/sequence_fragments numbers it (how every process's
// FAISS index learns what others wrote).
// Params: $rows = [{id, page_id, text, text_hash, extraction_method, position, embedding}]
UNWIND $rows AS row
MATCH (p:Page {id: row.page_id})
MERGE (f:Fragment {text_hash: row.text_hash})
  ON CREATE SET f.id = row.id, f.text = row.text, f.extraction_method = row.extraction_method,
                f.position = row.position, f.embedding = row.embedding,
                f:Unsequenced
MERGE (f)-[:EXTRACTED_FROM]->(p)
RETURN row.id AS requested_id, f.id AS id, f.id = row.id AS created
