// mode: read
// Proposal ids, newest first, optionally of one status and one component. Params: $status, $component, $limit
MATCH (p:Proposal)
WHERE ($status IS NULL OR p.status = $status) AND ($component IS NULL OR p.component = $component)
RETURN p.id AS id
ORDER BY p.created_at DESC, p.id DESC
LIMIT $limit
