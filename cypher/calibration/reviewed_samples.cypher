// mode: read
// Calibration samples from human review: each NLICorrection of a model prediction (the model was wrong), and
// each human-reviewed edge whose relation was kept (the model was right). Confidences are the judge's raw ones.
CALL () {
  MATCH (n:NLICorrection)
  WHERE coalesce(n.predicted_by, 'model') = 'model'
  RETURN n.edge_id AS edge_id, n.predicted_label AS predicted_label, n.predicted_confidence AS predicted_confidence,
         n.correct_label AS correct_label, 'correction' AS source, n.corrected_at AS reviewed_at
  UNION ALL
  MATCH ()-[r:SUPPORTS|REFUTES|NEUTRAL]->()
  WHERE r.edge_human_corrected = true AND r.edge_previous_relation IS NULL
  RETURN r.id AS edge_id, toLower(type(r)) AS predicted_label,
         coalesce(r.nli_confidence_raw, r.nli_confidence) AS predicted_confidence,
         toLower(type(r)) AS correct_label, 'review' AS source, r.edge_corrected_at AS reviewed_at
}
RETURN edge_id, predicted_label, predicted_confidence, correct_label, source, reviewed_at
ORDER BY reviewed_at, edge_id
