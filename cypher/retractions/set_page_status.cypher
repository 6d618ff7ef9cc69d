// mode: write
// A retraction check's answers, kept on the page nodes (pages are shared: a retraction is a fact about the paper,
// not about one task): retraction_state (retracted | has_concern | corrected | none), retraction_checked_at, and
// retraction_notices (a JSON list of {kind, label, notice_doi, date, source}: what Crossref and Retraction Watch
// know; read it in Neo4j Browser with apoc.convert.fromJsonList(p.retraction_notices)). A page found retracted for
// the first time gets retracted_at (now), retraction_notice_doi and retraction_source (publisher,
// retraction-watch, openalex); a retraction is never undone by a later answer (the state stays 'retracted': the
// edges it withdrew stay withdrawn). Answers of sources that could not be reached ('unknown') are not written.
// Params: $rows = [{page_id, state, notices, notice_doi, source}] (one per page)
UNWIND $rows AS row
MATCH (p:Page {id: row.page_id})
WITH p, row, row.state = 'retracted' AND p.retracted_at IS NULL AS newly
SET p.retraction_state = CASE WHEN p.retracted_at IS NOT NULL THEN 'retracted' ELSE row.state END,
    p.retraction_checked_at = datetime(), p.retraction_notices = row.notices
FOREACH (_ IN CASE WHEN newly THEN [1] ELSE [] END |
  SET p.retracted_at = datetime(), p.retraction_notice_doi = row.notice_doi, p.retraction_source = row.source)
RETURN p.id AS page_id, p.retraction_state AS state, newly, toString(p.retracted_at) AS retracted_at
