// mode: write
// A fitted calibrator, versioned (1, 2, ...); it becomes the active one only when $activate.
// Params: $method, $a, $b, $train_samples, $holdout_samples, $ece_before, $ece_after, $brier_before,
// $brier_after, $improves, $activate
MERGE (lock:LyraLock {name: 'calibration'})
WITH lock
CALL apoc.lock.nodes([lock])
OPTIONAL MATCH (old:Calibrator)
WITH max(old.version) AS last
CREATE (k:Calibrator {version: coalesce(last, 0) + 1, method: $method, a: $a, b: $b, created_at: datetime(),
                      train_samples: $train_samples, holdout_samples: $holdout_samples,
                      ece_before: $ece_before, ece_after: $ece_after, brier_before: $brier_before,
                      brier_after: $brier_after, improves: $improves, active: false})
WITH k
CALL (k) {
  WITH k WHERE $activate
  MATCH (other:Calibrator) WHERE other.active = true
  SET other.active = false
  RETURN count(other) AS deactivated
}
SET k.active = $activate, k.activated_at = CASE WHEN $activate THEN datetime() ELSE null END
RETURN k.version AS version, k.active AS active
