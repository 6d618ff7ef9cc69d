"""Settings nested by concern, read from the same flat environment as always (lyra/core/settings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from lyra.cli.common import experiment_from_env, setting_error
from lyra.core.errors import ConfigError
from lyra.core.settings import (
    CONCERNS,
    FIELD_CONCERN,
    ROOT_FIELDS,
    ExperimentSettings,
    Settings,
    env_names,
    env_variable,
    load_experiment_settings,
    load_settings,
)


def test_every_field_name_is_unique_across_the_concerns() -> None:
    seen: dict[str, str] = {}
    for concern, model in CONCERNS.items():
        for name in model.model_fields:
            assert name not in seen, f"{name} is a setting of both {seen[name]} and {concern}"
            assert name not in ROOT_FIELDS and name not in CONCERNS, name
            seen[name] = concern
    assert seen == FIELD_CONCERN
    assert set(Settings.model_fields) == {*CONCERNS, *ROOT_FIELDS}


def test_the_experiment_switches_are_not_user_settings() -> None:
    assert not set(ExperimentSettings.model_fields) & set(FIELD_CONCERN)
    assert set(ExperimentSettings.model_fields) == {
        "stance_mode",
        "stance_premise_sentences",
        "stance_calibrate",
        "stance_claim_first",
    }


def test_the_claim_first_prompt_is_an_opt_in_experiment_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LYRA_STANCE_CLAIM_FIRST", raising=False)
    assert load_experiment_settings().stance_claim_first is False  # the prompt the shipped combiner was fitted on
    monkeypatch.setenv("LYRA_STANCE_CLAIM_FIRST", "true")
    assert load_experiment_settings().stance_claim_first is True
    assert "stance_claim_first" not in FIELD_CONCERN


@pytest.mark.parametrize(
    ("variable", "value", "concern", "field", "expected"),
    [
        ("LYRA_WEB_MAX_BYTES", "5000", "web", "web_max_bytes", 5000),
        ("LYRA_STATE_DIR", "/tmp/lyra-state", "paths", "state_dir", Path("/tmp/lyra-state")),
        ("LYRA_JOB_WORKERS", "3", "jobs", "job_workers", 3),
        (
            "LYRA_API_ALLOWED_ORIGINS",
            "http://localhost:6274,https://A.example",
            "api",
            "api_allowed_origins",
            ["http://localhost:6274", "https://a.example"],
        ),
        ("LYRA_FETCH_ALLOW_HOSTS", "127.0.0.1,[::1]", "web", "fetch_allow_hosts", ["127.0.0.1", "[::1]"]),
        ("LYRA_WEB_SEARCH_ENGINES", '["searxng"]', "search", "web_search_engines", ["searxng"]),
        ("LYRA_STANCE_USE_LLM", "false", "models", "stance_use_llm", False),
        ("LYRA_NLI_TOP_K", "2", "learning", "nli_top_k", 2),
        ("LYRA_S2_REQUESTS_PER_SECOND", "0.5", "scholarly", "s2_requests_per_second", 0.5),
        ("NEO4J_URI", "bolt://db.example:7687", "neo4j", "neo4j_uri", "bolt://db.example:7687"),
        ("NEO4J_USER", "reader", "neo4j", "neo4j_username", "reader"),
        ("LYRA_NEO4J_DATABASE", "other", "neo4j", "neo4j_database", "other"),
        ("OLLAMA_HOST", "http://127.0.0.1:11434", "models", "ollama_host", "http://127.0.0.1:11434"),
        ("lyra_chunk_max_chars", "500", "pipeline", "chunk_max_chars", 500),  # names are case-insensitive
        ("LYRA_WEB__WEB_TIMEOUT_SECONDS", "3", "web", "web_timeout_seconds", 3.0),  # the nested spelling
    ],
)
def test_a_flat_environment_variable_lands_in_its_concern(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, concern: str, field: str, expected: object
) -> None:
    for name in env_names(field):  # a spelling set by the machine (the test script exports NEO4J_USERNAME) would win
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, value)
    assert getattr(getattr(load_settings(), concern), field) == expected


def test_a_conventional_name_wins_over_lyras_own_and_an_argument_over_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://first:7687")
    monkeypatch.setenv("LYRA_NEO4J_URI", "bolt://second:7687")
    assert load_settings().neo4j.neo4j_uri == "bolt://first:7687"
    assert load_settings(neo4j_uri="neo4j://third:7687").neo4j.neo4j_uri == "neo4j://third:7687"
    assert env_names("neo4j_uri") == ("NEO4J_URI", "LYRA_NEO4J_URI", "LYRA_NEO4J__NEO4J_URI")


def test_cross_field_rules_hold_within_a_concern(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LYRA_CONFIG_DIR", str(tmp_path))
    paths = load_settings().paths
    assert (paths.domains_file, paths.allowed_roots) == (tmp_path / "domains.yaml", [tmp_path / "examples"])
    with pytest.raises(ValidationError, match=r"LYRA_JOB_STALE_SECONDS .* at least twice"):
        load_settings(job_heartbeat_seconds=5, job_stale_seconds=6)
    # an environment value and an argument of the same concern meet before the concern's checks run
    monkeypatch.setenv("LYRA_JOB_HEARTBEAT_SECONDS", "5")
    assert load_settings(job_stale_seconds=10).jobs.job_stale_seconds == 10


def test_flat_and_nested_arguments_and_copies(tmp_path: Path) -> None:
    settings = load_settings(web_max_bytes=4096, api={"api_port": 9000}, api_host="127.0.0.2")
    assert (settings.web.web_max_bytes, settings.api.api_port, settings.api.api_host) == (4096, 9000, "127.0.0.2")
    copy = settings.model_copy(update={"state_dir": tmp_path, "web_robots_txt": False})
    assert (copy.paths.state_dir, copy.web.web_robots_txt, copy.web.web_max_bytes) == (tmp_path, False, 4096)
    assert settings.web.web_robots_txt is True and copy.api is settings.api  # the original is untouched
    with pytest.raises(ValueError, match="unknown setting 'web_max_byte'"):
        settings.model_copy(update={"web_max_byte": 1})


def test_an_unknown_name_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="web_max_byte"):
        load_settings(web_max_byte=1)
    monkeypatch.setenv("LYRA_WEB__TIMEOUT", "3")  # the nested spelling names no field of web
    with pytest.raises(ValidationError, match=r"web\.timeout") as refused:
        load_settings()
    assert env_variable(refused.value.errors()[0]["loc"]) == "LYRA_WEB__TIMEOUT"
    monkeypatch.delenv("LYRA_WEB__TIMEOUT")
    monkeypatch.setenv("LYRA_WEB__NEO4J_URI", "bolt://x:7687")  # a setting, but of another concern
    with pytest.raises(ValidationError, match=r"web\.neo4j_uri"):
        load_settings()


def test_other_lyra_variables_are_not_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LYRA_REQUIRE_NEO4J", "1")  # read by the test suite, not a setting
    monkeypatch.setenv("LYRA_WEB", "not a concern value")
    assert load_settings().web.web_max_bytes == 20_000_000


@pytest.mark.parametrize(
    ("variable", "value", "message", "hint"),
    [
        (
            "LYRA_WEB_TIMEOUT_SECONDS",
            "abc",
            "setting web_timeout_seconds: Input should be a valid number",
            "check LYRA_WEB_TIMEOUT_SECONDS in the environment",
        ),
        (
            "LYRA_API_PORT",
            "99999",
            "setting api_port: Input should be less than or equal to 65535",
            "check LYRA_API_PORT in the environment",
        ),
        ("NEO4J_URI", "http://x", "setting NEO4J_URI: NEO4J_URI must start with", "check NEO4J_URI in the environment"),
        (
            "LYRA_JOBS__JOB_WORKERS",
            "0",
            "setting job_workers: Input should be greater than or equal to 1",
            "check LYRA_JOB_WORKERS in the environment",
        ),
        (
            "LYRA_SCHOLARLY__RETRIES",
            "3",
            "setting retries: Extra inputs are not permitted",
            "check LYRA_SCHOLARLY__RETRIES in the environment",
        ),
    ],
)
def test_a_bad_value_names_the_setting_and_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str, hint: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as bad:
        load_settings()
    error = setting_error(bad.value)
    assert error.message.startswith(message), error.message
    assert error.hint == hint


def test_the_experiment_switches_are_read_by_the_comparing_commands_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LYRA_STANCE_MODE", "three_way")
    monkeypatch.setenv("LYRA_STANCE_CALIBRATE", "false")
    assert load_experiment_settings() == ExperimentSettings(stance_mode="three_way", stance_calibrate=False)
    assert load_experiment_settings(stance_mode="two_question").stance_mode == "two_question"
    assert ExperimentSettings().stance_mode == "hybrid"  # the product's defaults, whatever the environment says
    assert not hasattr(load_settings().models, "stance_mode")
    monkeypatch.setenv("LYRA_STANCE_PREMISE_SENTENCES", "0")
    with pytest.raises(ConfigError, match="setting stance_premise_sentences: Input should be greater than"):
        experiment_from_env()
