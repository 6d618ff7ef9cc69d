// mode: read
// Waits (up to $seconds) until every index is online, e.g. right after the schema was applied.
CALL db.awaitIndexes($seconds)
