// mode: write
// Fragments are global and unique by text_hash: a known text keeps its id; the fragment is linked to the page.
// The fragment's embedding (when given) is stored on the node so the FAISS index can be rebuilt from Neo4j.
// A new fragment is labelled Unsequenced until fragment_index/sequence_fragments numbers it (how every process's
// FAISS index learns what others wrote).
// scanned_with: the version of the dangerous-pattern scanner that just passed the text's whole source (null: not
// scanned); the same text (one text_hash) is then known clean under that version, on whichever page it came from.
// Params: $rows = [{id, page_id, text, text_hash, extraction_method, position, embedding, scanned_with}]
UNWIND $rows AS row
MATCH (p:Page {id: row.page_id})
MERGE (f:Fragment {text_hash: row.text_hash})
  ON CREATE SET f.id = row.id, f.text = row.text, f.extraction_method = row.extraction_method,
                f.position = row.position, f.embedding = row.embedding,
                f:Unsequenced
SET f.scanned_with = coalesce(row.scanned_with, f.scanned_with)
MERGE (f)-[:EXTRACTED_FROM]->(p)
RETURN row.id AS requested_id, f.id AS id, f.id = row.id AS created
