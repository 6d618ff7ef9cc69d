// mode: read
// How much the database holds, and whether it is a Lyra test database (the wipe guard reads this).
CALL () { MATCH (n) RETURN count(n) AS nodes }
CALL () { MATCH (m:LyraTestDatabase) RETURN count(m) AS test_markers }
RETURN nodes, test_markers
