// mode: write
// Removes Domain nodes whose name ends with a suffix and that no page is in any more (used by the scale
// benchmark to remove its synthetic domains after their pages). Params: $suffix
MATCH (d:Domain)
WHERE d.name ENDS WITH $suffix AND NOT EXISTS { (:Page)-[:IN_DOMAIN]->(d) }
DETACH DELETE d
RETURN count(*) AS domains
