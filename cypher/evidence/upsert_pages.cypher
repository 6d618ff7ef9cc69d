// mode: write
// Pages are global (decision record 0002): a page already known by DOI, else by URL, keeps its id; otherwise it is created.
// A page found again keeps its values; missing title, year, venue or DOI are filled in.
// Each page is linked to its Domain, created on first sight with its category.
// Params: $rows = [{id, url, doi, title, domain, domain_category, year, venue, page_type}]
UNWIND $rows AS row
OPTIONAL MATCH (by_doi:Page {doi: row.doi})
OPTIONAL MATCH (by_url:Page {url: row.url})
WITH row, coalesce(by_doi, by_url) AS found
CALL (row, found) {
  WITH row, found
  WHERE found IS NULL
  CREATE (p:Page {id: row.id, url: row.url, title: row.title, domain: row.domain, year: row.year,
                  venue: row.venue, page_type: row.page_type, crawled_at: datetime()})
  SET p.doi = row.doi
  RETURN p, true AS created
  UNION
  WITH row, found
  WHERE found IS NOT NULL
  // a page first known only from a citation list gains what a later, fuller record knows; nothing is overwritten
  SET found.title = coalesce(found.title, row.title), found.year = coalesce(found.year, row.year),
      found.venue = coalesce(found.venue, row.venue), found.doi = coalesce(found.doi, row.doi)
  RETURN found AS p, false AS created
}
MERGE (d:Domain {name: p.domain})
  ON CREATE SET d.domain_category = row.domain_category
MERGE (p)-[:IN_DOMAIN]->(d)
RETURN row.id AS requested_id, p.id AS id, created
