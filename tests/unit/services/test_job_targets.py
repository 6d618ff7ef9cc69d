"""A target's identity: the canonical value duplicates are detected on (no I/O: only URL, DOI and query targets)."""

from __future__ import annotations

import pytest

from lyra.core.errors import InvalidInputError
from lyra.models.api import Target
from lyra.services.jobs import job_key, normalise_target

PAGE = "http://127.0.0.1:8000/corpus/ghana.html"


def url(value: str) -> str:
    return normalise_target(Target(kind="url", value=value), [], "value")


@pytest.mark.parametrize(
    "same",
    [
        f"{PAGE}#x",  # the fragment never reaches the server
        f"{PAGE}#",
        "HTTP://127.0.0.1:8000/corpus/ghana.html",  # scheme and host are case-insensitive
        f"  {PAGE}  ",
    ],
)
def test_a_url_that_makes_the_same_request_is_the_same_target(same: str) -> None:
    assert url(same) == url(PAGE) == PAGE
    assert job_key("t", "url", url(same)) == job_key("t", "url", url(PAGE))


@pytest.mark.parametrize(
    "other",
    [
        f"{PAGE}/",  # a trailing slash is sent to the server, so it is another request (often a 404)
        "http://127.0.0.1:8000/corpus/GHANA.html",  # paths are case-sensitive
        f"{PAGE}?page=2",
    ],
)
def test_a_url_that_makes_another_request_is_another_target(other: str) -> None:
    assert url(other) != url(PAGE)


def test_a_trailing_slash_is_kept_on_a_file_name_and_on_a_folder_whose_name_has_a_dot() -> None:
    assert url(f"{PAGE}/#x") == f"{PAGE}/"
    assert url("https://example.org/docs/v1.2/") == "https://example.org/docs/v1.2/"
    assert url("https://example.org/docs/v1.2/") != url("https://example.org/docs/v1.2")


def test_a_default_port_and_an_empty_path_are_spelled_one_way() -> None:
    assert url("http://Example.org:80") == url("http://example.org/") == "http://example.org/"
    assert url("https://example.org:443/a") == "https://example.org/a"
    assert url("https://example.org:8443/a") == "https://example.org:8443/a"
    assert url("http://[::1]:80/a#b") == "http://[::1]/a"


def test_a_doi_and_a_query_are_compared_normalised() -> None:
    doi = normalise_target(Target(kind="doi", value="https://doi.org/10.5555/ABC.1"), [], "value")
    assert doi == normalise_target(Target(kind="doi", value="doi:10.5555/abc.1"), [], "value") == "10.5555/abc.1"
    assert normalise_target(Target(kind="query", value="  Vitamin   D "), [], "value") == "vitamin d"


def test_a_url_without_a_host_or_of_another_scheme_is_refused() -> None:
    for bad in ("ftp://example.org/x", "http:///x", "http://[::1/x"):
        with pytest.raises(InvalidInputError):
            url(bad)
