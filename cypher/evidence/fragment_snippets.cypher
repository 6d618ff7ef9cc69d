// mode: read
// Fragments by id with their text and one page carrying them, for search results: within a task ($task_id) a page
// that task READ (never another task's copy), oldest read first; without one, the oldest page. scanned_with: the
// scanner version that passed the fragment's source at ingest (lyra.sources.untrusted).
// Params: $ids, $task_id (null: any task)
UNWIND $ids AS fid
MATCH (f:Fragment {id: fid})-[:EXTRACTED_FROM]->(p:Page)
OPTIONAL MATCH (t:Task {id: $task_id})
WITH f, p, CASE WHEN t IS NOT NULL AND (t)-[:READ]->(p) THEN 0 ELSE 1 END AS elsewhere
ORDER BY elsewhere, p.crawled_at, p.id
WITH f, collect(p)[0] AS p
RETURN f.id AS fragment_id, f.text AS text, f.scanned_with AS scanned_with, p.id AS page_id, p.url AS url,
       p.title AS title
