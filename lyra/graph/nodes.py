"""neomodel node classes: the graph data model as Python classes.

They describe the labels and properties people see in Neo4j Browser. Single-node reads and writes
(tasks, one claim, one page) go through them; bulk writes use batched UNWIND statements from
``cypher/evidence/``. Constraints are *not* installed by neomodel: ``cypher/schema/`` owns them.
neomodel reserves the attribute name ``id``, so the ``id`` property is mapped as ``uid``
(``db_property="id"``): in the database it is ``id``, as everywhere else in Lyra.
A claim also carries its per-task label ``Task_<task_id>``, added by ``cypher/evidence/create_claims``.
"""

from __future__ import annotations

from neomodel import (
    DateTimeNeo4jFormatProperty,
    IntegerProperty,
    RelationshipFrom,
    RelationshipTo,
    StringProperty,
    StructuredNode,
)

TASK_STATUSES = {s: s for s in ("created", "running", "paused", "completed", "failed", "cancelled")}


class TaskNode(StructuredNode):
    __label__ = "Task"
    uid = StringProperty(required=True, db_property="id")
    hypothesis = StringProperty(required=True)
    status = StringProperty(default="created", choices=TASK_STATUSES)
    created_at = DateTimeNeo4jFormatProperty(default_now=True)
    updated_at = DateTimeNeo4jFormatProperty(default_now=True)
    claims = RelationshipTo("lyra.graph.nodes.ClaimNode", "HAS_CLAIM")


class ClaimNode(StructuredNode):
    __label__ = "Claim"
    uid = StringProperty(required=True, db_property="id")
    task_id = StringProperty(required=True)
    text = StringProperty(required=True)
    claim_adoption_status = StringProperty(
        default="adopted", choices={"adopted": "adopted", "not_adopted": "not_adopted"}
    )
    claim_rejection_reason = StringProperty()
    claim_rejected_at = DateTimeNeo4jFormatProperty()
    created_at = DateTimeNeo4jFormatProperty(default_now=True)
    task = RelationshipFrom("lyra.graph.nodes.TaskNode", "HAS_CLAIM")
    # the passages an extracted claim came from (none for a claim a person wrote)
    extracted_from = RelationshipTo("lyra.graph.nodes.FragmentNode", "EXTRACTED_FROM")


class DomainNode(StructuredNode):
    __label__ = "Domain"
    name = StringProperty(required=True)
    domain_category = StringProperty()


class PageNode(StructuredNode):
    __label__ = "Page"
    uid = StringProperty(required=True, db_property="id")
    url = StringProperty(required=True)
    doi = StringProperty()
    title = StringProperty()
    domain = StringProperty()
    year = IntegerProperty()
    venue = StringProperty()
    page_type = StringProperty()
    crawled_at = DateTimeNeo4jFormatProperty()
    in_domain = RelationshipTo("lyra.graph.nodes.DomainNode", "IN_DOMAIN")
    cites = RelationshipTo("lyra.graph.nodes.PageNode", "CITES")


class FragmentNode(StructuredNode):
    __label__ = "Fragment"
    uid = StringProperty(required=True, db_property="id")
    text = StringProperty(required=True)
    text_hash = StringProperty(required=True)
    extraction_method = StringProperty()
    position = IntegerProperty()
    page = RelationshipTo("lyra.graph.nodes.PageNode", "EXTRACTED_FROM")
