// mode: read
// Stored calibration evaluations, newest first. Params: $limit
MATCH (e:CalibrationEvaluation)
RETURN e.id AS id, e.version AS version, e.created_at AS created_at, e.samples AS samples, e.accuracy AS accuracy,
       e.brier AS brier, e.ece AS ece, e.mce AS mce, e.bins AS bins, e.calibrator_version AS calibrator_version,
       e.by_source AS by_source
ORDER BY e.version DESC
LIMIT $limit
