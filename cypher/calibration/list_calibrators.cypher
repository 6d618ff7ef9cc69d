// mode: read
// Every calibrator version, newest first.
MATCH (k:Calibrator)
RETURN k.version AS version, k.method AS method, k.a AS a, k.b AS b, k.active AS active, k.created_at AS created_at,
       k.train_samples AS train_samples, k.holdout_samples AS holdout_samples, k.ece_before AS ece_before,
       k.ece_after AS ece_after, k.brier_before AS brier_before, k.brier_after AS brier_after, k.improves AS improves
ORDER BY k.version DESC
