// mode: write
// A calibration evaluation, versioned (1, 2, ...). Params: $id, $samples, $accuracy, $brier, $ece, $mce, $bins
// (JSON), $calibrator_version, $by_source (JSON)
MERGE (lock:LyraLock {name: 'calibration'})
WITH lock
CALL apoc.lock.nodes([lock])
OPTIONAL MATCH (old:CalibrationEvaluation)
WITH max(old.version) AS last
CREATE (e:CalibrationEvaluation {id: $id, version: coalesce(last, 0) + 1, created_at: datetime(), samples: $samples,
                                 accuracy: $accuracy, brier: $brier, ece: $ece, mce: $mce, bins: $bins,
                                 calibrator_version: $calibrator_version, by_source: $by_source})
RETURN e.id AS id, e.version AS version, e.created_at AS created_at
