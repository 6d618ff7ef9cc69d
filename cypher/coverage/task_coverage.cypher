// mode: read
// A task's candidate pairs summed over its claims (as their last ranking left them, coverage/set_claim_coverage),
// how many claims were never ranked, and how many pages the task read. Params: $task_id
MATCH (t:Task {id: $task_id})
OPTIONAL MATCH (t)-[:HAS_CLAIM]->(c:Claim)
RETURN count(c) AS claims, count(c.coverage_candidates) AS ranked,
       coalesce(sum(c.coverage_candidates), 0) AS candidates,
       coalesce(sum(CASE WHEN c.coverage_judged > c.coverage_candidates THEN c.coverage_candidates
                         ELSE c.coverage_judged END), 0) AS judged,
       coalesce(sum(c.coverage_below_floor), 0) AS below_floor,
       coalesce(sum(c.coverage_own_source), 0) AS own_source,
       COUNT { (t)-[:READ]->(:Page) } AS pages_read
