// mode: read
// Which of these fragment ids still exist (a FAISS hit on a fragment a clean-up deleted is dropped).
// Params: $ids
UNWIND $ids AS id
MATCH (f:Fragment {id: id})
RETURN f.id AS id
