"""refresh_task's schedule periods: a whole number and one unit, strictly; the maximum is 366 days."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lyra.models.refresh import SCHEDULE_MAX_SECONDS, RefreshRequest, parse_every


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("12h", 43_200), ("7d", 604_800), ("2w", 1_209_600), ("366d", 31_622_400)]
)
def test_periods_parse_to_seconds(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@pytest.mark.parametrize("text", ["7", "d", "7 d", " 7d", "7d\n", "7D", "0d", "07d", "1.5d", "-1d", "7dd", "1y", "P7D"])
def test_anything_else_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match="whole number and one unit"):
        parse_every(text)


def test_the_maximum_is_a_year() -> None:
    assert parse_every("52w") <= SCHEDULE_MAX_SECONDS
    with pytest.raises(ValueError, match="maximum, 366d"):
        parse_every("367d")


def test_the_request_field_takes_a_period_off_or_nothing() -> None:
    assert RefreshRequest(task_id="abc", schedule="7d").schedule == "7d"
    assert RefreshRequest(task_id="abc", schedule="off").schedule == "off"
    assert RefreshRequest(task_id="abc").schedule is None
    with pytest.raises(ValidationError) as err:
        RefreshRequest(task_id="abc", schedule="weekly")
    assert err.value.errors()[0]["loc"] == ("schedule",)
