// mode: write
// Graphs written before (Task)-[:READ]->(Page) existed: a task with stance edges but no READ relationship is given
// READ to every page of the fragments its claims were judged against. Where such a fragment sits on pages of several
// tasks the old graph cannot tell which one this task read, so it is credited to all of them (only for these old
// tasks; every ingest since records exactly the pages it read). Cheap when there is nothing to do: tasks are few.
// Runs with the schema. Params: none
MATCH (t:Task)
WHERE NOT EXISTS { (t)-[:READ]->(:Page) }
  AND EXISTS { (t)-[:HAS_CLAIM]->(:Claim)<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment) }
CALL (t) {
  MATCH (t)-[:HAS_CLAIM]->(:Claim)<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)-[:EXTRACTED_FROM]->(p:Page)
  WITH DISTINCT p
  MERGE (t)-[r:READ]->(p)
    ON CREATE SET r.first_read_at = datetime(), r.last_read_at = datetime(), r.cause_id = 'backfill'
  RETURN count(r) AS pages
}
RETURN count(t) AS tasks, sum(pages) AS pages
