// mode: write
// Make one calibrator version the active one (the others inactive); $version = 0 deactivates them all.
// Returns the versions' new states (no row when the version does not exist and is not 0).
// Params: $version
OPTIONAL MATCH (target:Calibrator {version: $version})
WITH target
WHERE target IS NOT NULL OR $version = 0
MATCH (k:Calibrator)
SET k.active = (k.version = $version),
    k.activated_at = CASE WHEN k.version = $version THEN datetime() ELSE k.activated_at END
RETURN k.version AS version, k.active AS active
ORDER BY version
