// mode: write
// A dangerous pattern found in a document fetched for a task: the finding is kept (append-only) on the domain,
// and the domain is a rejected source for every claim of the task (SOURCE_REJECTED, counted by the
// security rejection rate of decision record 0008).
// Kept as it is under decision record 0008's "a domain's claims are the claims extracted from its pages": the hostile
// document is never read by a model, so no claim is ever extracted from it, and SOURCE_REJECTED is the only link
// from the claims the finding rejects (get_materials: rejected / dangerous_pattern) to the domain that caused it.
// That blame rests on the domain's own document, not on a person's judgement of a claim, so it holds for claims a
// person wrote too. domains/rejection_rates counts these claims as security rejections (and in the domain's
// denominator); a later manual rejection of such a claim counts only against the domains it was extracted from.
// Params: $id, $task_id, $domain, $category, $url, $kinds, $detail
MERGE (d:Domain {name: $domain})
  ON CREATE SET d.domain_category = $category
CREATE (s:SecurityFinding {id: $id, task_id: $task_id, domain: $domain, url: $url, kinds: $kinds, detail: $detail,
                           detected_at: datetime()})
CREATE (s)-[:FOUND_ON]->(d)
WITH s, d
OPTIONAL MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
FOREACH (claim IN CASE WHEN c IS NULL THEN [] ELSE [c] END |
  MERGE (claim)-[x:SOURCE_REJECTED]->(d)
    ON CREATE SET x.reason = 'dangerous_pattern', x.cause_id = s.id, x.created_at = datetime())
RETURN s.id AS id, count(c) AS claims
