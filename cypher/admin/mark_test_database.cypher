// mode: write
// Marks the database as a disposable Lyra test database.
MERGE (m:LyraTestDatabase {id: 'lyra-test'})
  ON CREATE SET m.created_at = datetime()
RETURN m.id AS id
