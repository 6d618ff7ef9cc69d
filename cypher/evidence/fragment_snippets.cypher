// mode: read
// Fragments by id with a text snippet and their first page, for search results.
// Params: $ids
UNWIND $ids AS fid
MATCH (f:Fragment {id: fid})-[:EXTRACTED_FROM]->(p:Page)
WITH f, collect(p)[0] AS p
RETURN f.id AS fragment_id, left(f.text, 300) AS snippet, p.id AS page_id, p.url AS url, p.title AS title
