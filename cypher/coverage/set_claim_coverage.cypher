// mode: write
// What the last ranking of a task found for each claim, kept on the claim for materials and status (a later ingest
// or judge_remaining replaces it): coverage_fragments (the task's fragments then), coverage_candidates (pairs at or
// above the relevance floor, the claim's own sources left out), coverage_below_floor, coverage_own_source (fragments
// left out because the claim was extracted from them or from an exact or near duplicate of them),
// coverage_judged (candidates with a stance edge), coverage_ranked_at.
// Params: $rows = [{claim_id, fragments, candidates, below_floor, own_source, judged}]
UNWIND $rows AS row
MATCH (c:Claim {id: row.claim_id})
SET c.coverage_fragments = row.fragments, c.coverage_candidates = row.candidates,
    c.coverage_below_floor = row.below_floor, c.coverage_own_source = row.own_source,
    c.coverage_judged = row.judged, c.coverage_ranked_at = datetime()
RETURN count(c) AS claims
