"""The changes resource's URI and the template match the unknown-resource check uses."""

from __future__ import annotations

from lyra.mcp.server import CHANGES_URI, _template_matches, changes_uri


def test_a_tasks_changes_uri_matches_the_template_and_nothing_else_does() -> None:
    assert changes_uri("vitamin_d") == "lyra://tasks/vitamin_d/changes"
    assert _template_matches(CHANGES_URI, changes_uri("vitamin_d"))
    assert not _template_matches(CHANGES_URI, "lyra://tasks/a/b/changes")
    assert not _template_matches(CHANGES_URI, "lyra://tasks//changes")
    assert not _template_matches(CHANGES_URI, "file:///etc/passwd")
    assert not _template_matches(CHANGES_URI, "lyra://tasks/x/changes/more")
    assert not _template_matches("lyra://a.b/{id}", "lyra://aXb/1")  # the template's text is literal
