// mode: read
// What the garbage collection would remove now (it runs these counts first, dry run or not), and how many jobs of
// existing tasks are running. A page is *in use* when a Task READ it or one of its fragments has a stance edge to a
// claim a Task holds; a fragment *stays* when it has such an edge itself or one of its pages is in use (a passage
// below a task's relevance floor has no edge, but the task read it: it stays for the claims the task adds later). Garbage, in the order it
// is removed (each step counted as if the steps before it had run):
// * claims no Task holds (no (:Task)-[:HAS_CLAIM]->), with their stance edges;
// * fragments that do not stay (once those claims are gone: no stance edge at all, and no page in use);
// * CITES edges whose two pages both hold no fragment that stays;
// * pages that hold no fragment that stays and have no CITES edge to a page that holds one;
// * jobs no Task holds (no (:Task)-[:HAS_JOB]->);
// * intervention items no Task holds (no (:Task)-[:HAS_INTERVENTION]->);
// * per-domain daily page counts of days before $before (ISO date, UTC; only today's count limits fetching).
// Params: $before
CALL () {
  MATCH (c:Claim)
  WHERE NOT EXISTS { (:Task)-[:HAS_CLAIM]->(c) }
  RETURN count(c) AS claims, coalesce(sum(COUNT { (c)<-[:SUPPORTS|REFUTES|NEUTRAL]-() }), 0) AS stance_edges
}
CALL () {
  MATCH (f:Fragment)
  WHERE NOT EXISTS { (f)-[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task) }
    AND NOT EXISTS { (f)<-[:EXTRACTED_FROM]-(:Claim)<-[:HAS_CLAIM]-(:Task) }  // the source of a held claim stays
    AND NOT EXISTS { (f)-[:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task) }
    AND NOT EXISTS {
      (f)-[:EXTRACTED_FROM]->(:Page)<-[:EXTRACTED_FROM]-(:Fragment)
        -[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task)
    }
  RETURN count(f) AS fragments
}
CALL () {
  // p keeps a fragment: p is in use, or one of its fragments is also on a page in use
  MATCH (p:Page)-[r:CITES]->(q:Page)
  WHERE NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment)-[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task) }
    AND NOT EXISTS {
      (p)<-[:EXTRACTED_FROM]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)<-[:EXTRACTED_FROM]-(:Fragment)
        -[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task)
    }
    AND NOT EXISTS { (p)<-[:READ]-(:Task) }
    AND NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task) }
    AND NOT EXISTS { (q)<-[:EXTRACTED_FROM]-(:Fragment)-[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task) }
    AND NOT EXISTS {
      (q)<-[:EXTRACTED_FROM]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)<-[:EXTRACTED_FROM]-(:Fragment)
        -[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task)
    }
    AND NOT EXISTS { (q)<-[:READ]-(:Task) }
    AND NOT EXISTS { (q)<-[:EXTRACTED_FROM]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task) }
  RETURN count(r) AS citations
}
CALL () {
  MATCH (p:Page)
  WHERE NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment)-[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task) }
    AND NOT EXISTS {
      (p)<-[:EXTRACTED_FROM]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)<-[:EXTRACTED_FROM]-(:Fragment)
        -[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task)
    }
    AND NOT EXISTS { (p)<-[:READ]-(:Task) }
    AND NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task) }
    AND NOT EXISTS {
      (p)-[:CITES]-(q:Page)
      WHERE EXISTS { (q)<-[:EXTRACTED_FROM]-(:Fragment)-[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task) }
         OR EXISTS {
           (q)<-[:EXTRACTED_FROM]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)<-[:EXTRACTED_FROM]-(:Fragment)
             -[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task)
         }
         OR EXISTS { (q)<-[:READ]-(:Task) }
         OR EXISTS { (q)<-[:EXTRACTED_FROM]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task) }
    }
  RETURN count(p) AS pages
}
CALL () {
  MATCH (j:Job)
  WHERE NOT EXISTS { (:Task)-[:HAS_JOB]->(j) }
  RETURN count(j) AS jobs
}
CALL () {
  MATCH (i:Intervention)
  WHERE NOT EXISTS { (:Task)-[:HAS_INTERVENTION]->(i) }
  RETURN count(i) AS interventions
}
CALL () {
  MATCH (d:DomainDay)
  WHERE d.day < $before
  RETURN count(d) AS domain_days
}
CALL () {
  // a running job no Task holds writes nothing any task uses (and is itself garbage), so it does not count
  MATCH (j:Job {state: 'running'})
  WHERE EXISTS { (:Task)-[:HAS_JOB]->(j) }
  RETURN count(j) AS running_jobs
}
RETURN claims, stance_edges, fragments, citations, pages, jobs, interventions, domain_days, running_jobs
