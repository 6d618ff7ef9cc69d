// mode: write
// What a paper's metadata said when its abstract was read or re-checked (docs/concepts/living-evidence.md): the
// sha256 of its abstract (paper_hash; case and spacing ignored), the record's version (paper_version: OpenAlex's
// updated_date, null when only Semantic Scholar answered), when it was checked (paper_checked_at) and, when the
// abstract changed, changed_at. Params: $rows = [{page_id, paper_hash, paper_version, changed}]
UNWIND $rows AS row
MATCH (p:Page {id: row.page_id})
SET p.paper_hash = row.paper_hash, p.paper_version = row.paper_version, p.paper_checked_at = datetime()
FOREACH (_ IN CASE WHEN row.changed THEN [1] ELSE [] END | SET p.changed_at = datetime())
RETURN p.id AS page_id
