"""A claim and three passages about it: a finding, a null finding and an off-topic passage (the pipeline test's
corpus; the stance artifact test judges the same pairs)."""

from __future__ import annotations

SUPPORT = (
    "In a randomised trial of 640 adults with hypertension, drug Q lowered systolic blood pressure by 11 mmHg "
    "compared with placebo after 12 weeks (95% CI 8 to 14; p<0.001)."
)
NULL = (
    "In a second trial of 520 adults, drug Q did not lower systolic blood pressure compared with placebo "
    "(mean difference -0.6 mmHg, 95% CI -2.9 to 1.7; p=0.61)."
)
OFF_TOPIC = "Tomato seedlings need warm soil, steady watering and at least eight hours of direct sun a day to thrive."
CLAIM = "Drug Q lowers systolic blood pressure in adults with hypertension."
