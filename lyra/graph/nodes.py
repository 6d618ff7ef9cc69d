"""neomodel node classes: the declared schema of the nodes Lyra creates one at a time.

A class here states what Lyra *writes*: required properties, allowed values (``choices``), defaults and typed
timestamps, checked by neomodel before the node is saved. Only ``Task`` is created node by node; everything else
(claims, pages, fragments, stance edges, jobs, override rules) is written in batches by named statements under
``cypher/`` that validate their input in pydantic first. Reads do not inflate these classes: a graph may hold nodes
written by someone else (Neo4j Browser, an import), so repositories read plain properties through named statements
and tolerate what they find (see :mod:`lyra.graph.tasks`).

Constraints are *not* installed by neomodel: ``cypher/schema/`` owns them. neomodel reserves the attribute name
``id``, so the ``id`` property is mapped as ``uid`` (``db_property="id"``): in the database it is ``id``, as
everywhere else in Lyra. Every query neomodel issues runs through
:class:`lyra.graph.connection.InstrumentedQueryRunner` (timed, slow ones logged, errors as LyraError).
"""

from __future__ import annotations

from neomodel import DateTimeNeo4jFormatProperty, StringProperty, StructuredNode

TASK_STATUSES = {s: s for s in ("created", "running", "paused", "completed", "failed", "cancelled")}


class TaskNode(StructuredNode):
    __label__ = "Task"
    uid = StringProperty(required=True, db_property="id")
    hypothesis = StringProperty(required=True)
    status = StringProperty(default="created", choices=TASK_STATUSES)
    created_at = DateTimeNeo4jFormatProperty(default_now=True)
    updated_at = DateTimeNeo4jFormatProperty(default_now=True)
