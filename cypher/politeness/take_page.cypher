// mode: write
// The daily page budget of a domain, shared by every worker of every process: count one page for $domain on $day
// unless $limit pages were counted already. The increment reads the count it writes (so it is read afresh under
// the node's write lock, which is then held until commit); a count past the limit is taken back in the same
// transaction, so no other transaction ever sees it. MERGE on the unique key makes concurrent first calls of the
// day meet on one node. taken = true: the page may be fetched.
// Params: $key (domain|day), $domain, $day (ISO date, UTC), $limit
MERGE (d:DomainDay {key: $key})
  ON CREATE SET d.domain = $domain, d.day = $day, d.pages = 0, d.refused = 0, d.created_at = datetime()
SET d.pages = d.pages + 1
WITH d, d.pages <= $limit AS taken
SET d.pages = CASE WHEN taken THEN d.pages ELSE d.pages - 1 END,
    d.refused = CASE WHEN taken THEN d.refused ELSE d.refused + 1 END,
    d.updated_at = datetime()
RETURN taken, d.pages AS pages
