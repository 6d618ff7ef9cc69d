// mode: read
// Node and relationship counts by kind (used to report what a clean-up removed).
CALL () { MATCH (n:Task) RETURN count(n) AS tasks }
CALL () { MATCH (n:Claim) RETURN count(n) AS claims }
CALL () { MATCH (n:Fragment) RETURN count(n) AS fragments }
CALL () { MATCH (n:Page) RETURN count(n) AS pages }
CALL () { MATCH ()-[r:SUPPORTS|REFUTES|NEUTRAL]->() RETURN count(r) AS stance_edges }
CALL () { MATCH ()-[r:CITES]->() RETURN count(r) AS citations }
CALL () { MATCH (n:Job) RETURN count(n) AS jobs }
CALL () { MATCH (n:Intervention) RETURN count(n) AS interventions }
RETURN tasks, claims, fragments, pages, stance_edges, citations, jobs, interventions
