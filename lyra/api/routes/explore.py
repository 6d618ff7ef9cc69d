"""Explore the graph: read-only Cypher, the named views, similarity search."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Query

from lyra.api.params import NoQuery
from lyra.api.routing import FeatureRouter, Ops, fields
from lyra.models import api

router = FeatureRouter("explore")


@router.operation("list_views")
def list_views(ops: Ops, _query: Annotated[NoQuery, Query()]) -> api.ViewList:
    """The named read-only Cypher views."""
    return ops.list_views()


@router.operation("query_view")
def query_view(ops: Ops, name: str, body: Annotated[api.ViewBody | None, Body()] = None) -> api.QueryResult:
    """Run a named view with its parameters."""
    return ops.query_view(api.QueryViewRequest(name=name, **fields(body)))


@router.operation("query_graph")
def query_graph(ops: Ops, request: api.QueryGraphRequest) -> api.QueryResult:
    """Read-only Cypher (refused unless EXPLAIN says read-only), with a timeout and a row limit."""
    return ops.query_graph(request)


@router.operation("vector_search")
def vector_search(ops: Ops, request: api.VectorSearchRequest) -> api.SearchResults:
    """Fragments and/or claims most similar to a text."""
    return ops.vector_search(request)
