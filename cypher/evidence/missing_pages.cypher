// mode: read
// Which of the given page ids do not exist. Params: $page_ids
UNWIND $page_ids AS pid
OPTIONAL MATCH (p:Page {id: pid})
WITH pid WHERE p IS NULL
RETURN collect(pid) AS missing
