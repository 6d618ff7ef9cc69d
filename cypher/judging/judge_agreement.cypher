// mode: read
// Per-judge calibration samples of one task (docs/concepts/assistant-judge.md, "Each judge measured"): for every
// (fragment, claim) pair of the task a person judged (a (:Judgment) of rank 2, feedback edge_correct), the person's
// latest verdict is the truth, and every other judge that gave the pair a verdict before the person's first one
// gives one sample: its latest such verdict. An assistant's verdict is read from its own Judgment (the relation and
// the confidence it stated); the offline judge writes no Judgment, so its verdict is the one a later Judgment
// replaced (previous_judge offline:<id>, or none recorded: offline:unknown; previous_relation, previous_confidence:
// the weight it drew the edge with). Returns one row per sample, labels in lower case. Params: $task_id
MATCH (h:Judgment {task_id: $task_id})
WHERE h.judge_rank = 2
WITH h ORDER BY h.at, h.id
WITH h.claim_id AS claim_id, h.fragment_id AS fragment_id, collect(h) AS people
WITH claim_id, fragment_id, people[0].at AS first_at, people[-1].relation AS human_relation
CALL (claim_id, fragment_id, first_at) {
  MATCH (j:Judgment {task_id: $task_id})
  WHERE j.claim_id = claim_id AND j.fragment_id = fragment_id AND j.at <= first_at
  UNWIND [CASE WHEN coalesce(j.judge_rank, 0) = 1 THEN [j.judge, j.relation, j.confidence] END,
          CASE WHEN j.previous_relation IS NOT NULL
                    AND coalesce(j.previous_judge, 'offline:unknown') STARTS WITH 'offline:'
               THEN [coalesce(j.previous_judge, 'offline:unknown'), j.previous_relation, j.previous_confidence]
          END] AS verdict
  WITH j, verdict WHERE verdict IS NOT NULL
  WITH verdict[0] AS judge, verdict, j ORDER BY j.at DESC, j.id DESC
  WITH judge, collect(verdict)[0] AS latest
  RETURN judge, toLower(latest[1]) AS relation, toFloat(latest[2]) AS confidence
}
RETURN claim_id, fragment_id, judge, relation, confidence, toLower(human_relation) AS human_relation
ORDER BY judge, claim_id, fragment_id
