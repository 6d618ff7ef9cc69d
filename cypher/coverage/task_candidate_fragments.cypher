// mode: read
// The fragments a task can judge its claims against: every fragment of every page the task READ, with its embedding
// and the domains and categories of those pages (only this task's pages: a fragment shared with another task's page
// is weighed by where this task read it). Params: $task_id
MATCH (:Task {id: $task_id})-[:READ]->(p:Page)<-[:EXTRACTED_FROM]-(f:Fragment)
OPTIONAL MATCH (p)-[:IN_DOMAIN]->(d:Domain)
WITH f, collect(DISTINCT [p.domain, d.domain_category]) AS sources
RETURN f.id AS id, f.text AS text, f.embedding AS embedding, [s IN sources | s[0]] AS domains,
       [s IN sources | s[1]] AS categories
ORDER BY f.id
