"""Domain policy from ``config/domains.yaml``: categories, politeness, denylist and user overrides, hot-reloaded.

:class:`DomainPolicy` is one validated, immutable snapshot of the file. :class:`ReloadingDomainPolicy` wraps the
path and swaps in a new snapshot when the file changes, without a restart; a broken edit keeps the previous
snapshot and is reported through ``last_error`` and the log.

Lookup rules (all sections):

* domains are normalised (lowercase, trailing dot, IDN to punycode) and a leading ``www.`` is dropped, so
  ``www.example.com`` is looked up as
  ``example.com``. Entries therefore may not start with ``www.``;
* an exact entry beats any suffix glob, and the longest suffix glob beats shorter ones
  (see :mod:`lyra.sources.domain_patterns`); ``*.example.com`` does not cover ``example.com`` itself;
* ``denylist`` entries follow the same semantics: an exact ``bad.example`` denies only that host (and its
  ``www.`` form); list ``*.bad.example`` as well to deny its subdomains;
* ``user_overrides`` are exact-match only and change the category and politeness only — never block or
  unblock (decision record 0012). Human blocks and unblocks go through the ``feedback`` tool.

Categories weight ranking and are attached to edges as metadata; they never enter confidence (decision record 0007).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lyra.core.errors import ConfigError, InvalidInputError
from lyra.models.graph import DomainCategory
from lyra.sources.domain_patterns import PatternIndex, normalise_domain, validate_pattern

__all__ = [
    "CATEGORY_NAMES",
    "CategoryRule",
    "DomainPolicy",
    "DomainsConfig",
    "Politeness",
    "PolitenessConfig",
    "PolitenessDefault",
    "PolitenessRule",
    "ReloadingDomainPolicy",
    "UserOverride",
]

log = logging.getLogger(__name__)

CATEGORY_NAMES: tuple[str, ...] = get_args(DomainCategory)
PolitenessSource = Literal["user_override", "domain", "default"]


def _pattern(value: str, *, allow_public_suffix: bool) -> str:
    """Validate a pattern inside a pydantic validator: the error message becomes the field's message."""
    try:
        pattern = validate_pattern(value, field="domain", allow_public_suffix=allow_public_suffix)
    except InvalidInputError as exc:
        raise ValueError(exc.reason) from None
    if pattern.startswith("www."):
        raise ValueError(
            f"write {pattern.removeprefix('www.')!r}: lookups drop a leading 'www.', so this never matches"
        )
    return pattern


def _deny_pattern(value: str) -> str:
    return _pattern(value, allow_public_suffix=False)


# Denylist entries can refuse whole sites, so public-suffix globs (*.com, *.github.io) are refused.
DenyPattern = Annotated[str, AfterValidator(_deny_pattern)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CategoryRule(_Strict):
    """``domains[]``: give every domain matching ``domain`` this category. Public-suffix globs (``*.edu``) are fine."""

    domain: str
    category: DomainCategory

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        return _pattern(value, allow_public_suffix=True)


class PolitenessDefault(_Strict):
    qps: float = Field(default=1.0, gt=0)
    max_pages_per_day: int = Field(default=500, ge=1)


class PolitenessRule(_Strict):
    """``politeness.domains[]``: crawl limits for domains matching ``domain``; unset fields fall back to the default."""

    domain: str
    qps: float | None = Field(default=None, gt=0)
    max_pages_per_day: int | None = Field(default=None, ge=1)

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        return _pattern(value, allow_public_suffix=True)

    @model_validator(mode="after")
    def _something_set(self) -> PolitenessRule:
        if self.qps is None and self.max_pages_per_day is None:
            raise ValueError("set qps and/or max_pages_per_day")
        return self


class PolitenessConfig(_Strict):
    default: PolitenessDefault = PolitenessDefault()
    domains: list[PolitenessRule] = Field(default_factory=list)


class UserOverride(_Strict):
    """``user_overrides[]``: a person's exact-domain change of category and/or politeness (never a block/unblock)."""

    domain: str
    domain_category: DomainCategory | None = None
    qps: float | None = Field(default=None, gt=0)
    max_pages_per_day: int | None = Field(default=None, ge=1)
    reason: str | None = None

    @field_validator("domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        if "*" in value:
            raise ValueError("wildcards are not allowed here; user_overrides match one exact domain")
        # An exact override reaches only that host, so single-label pseudo-hosts such as `local` are fine.
        return _pattern(value, allow_public_suffix=True)

    @field_validator("domain_category")
    @classmethod
    def _not_blocked(cls, value: DomainCategory | None) -> DomainCategory | None:
        if value == "blocked":
            raise ValueError("user_overrides cannot block a domain; use the feedback tool")
        return value

    @model_validator(mode="after")
    def _something_set(self) -> UserOverride:
        if self.domain_category is None and self.qps is None and self.max_pages_per_day is None:
            raise ValueError("set at least one of domain_category, qps, max_pages_per_day")
        return self


class DomainsConfig(_Strict):
    """The whole of ``config/domains.yaml``."""

    categories: dict[str, float]
    default_category: DomainCategory = "unverified"
    domains: list[CategoryRule] = Field(default_factory=list)
    politeness: PolitenessConfig = PolitenessConfig()
    denylist: list[DenyPattern] = Field(default_factory=list)
    user_overrides: list[UserOverride] = Field(default_factory=list)

    @field_validator("categories")
    @classmethod
    def _seven_categories(cls, value: dict[str, float]) -> dict[str, float]:
        missing = [name for name in CATEGORY_NAMES if name not in value]
        unknown = sorted(name for name in value if name not in CATEGORY_NAMES)
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if unknown:
            problems.append(f"unknown {', '.join(unknown)}")
        if problems:
            raise ValueError(f"{'; '.join(problems)} (exactly these are required: {', '.join(CATEGORY_NAMES)})")
        for name, weight in value.items():
            if not 0.0 <= weight <= 1.0:
                raise ValueError(f"the weight of {name!r} must be between 0 and 1, not {weight}")
        return value


class Politeness(_Strict):
    """Crawl limits that apply to one domain, and which layer supplied them."""

    qps: float
    max_pages_per_day: int
    source: PolitenessSource


def _lookup_key(domain: str) -> str | None:
    """The key a domain is looked up by: normalised, with a leading ``www.`` dropped; ``None`` if unusable."""
    try:
        key = normalise_domain(domain)
    except ValueError:
        return None
    key = key.removeprefix("www.")
    return key or None


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(top level)"


def _error_text(error: Any) -> str:
    if error.get("type") == "value_error" and "ctx" in error:
        return str(error["ctx"]["error"])
    return str(error["msg"])


class DomainPolicy:
    """One validated snapshot of ``config/domains.yaml``. Immutable; safe to share between threads."""

    def __init__(self, config: DomainsConfig, *, path: Path | None = None, version: int = 1) -> None:
        self.config = config
        self.path = path
        self.version = version
        self.loaded_at = datetime.now(UTC)
        # Validated patterns are normalised already, so they key the indexes as they are.
        self._categories: PatternIndex[str] = PatternIndex((rule.domain, rule.category) for rule in config.domains)
        self._politeness: PatternIndex[PolitenessRule] = PatternIndex(
            (rule.domain, rule) for rule in config.politeness.domains
        )
        self._denylist: PatternIndex[str] = PatternIndex((pattern, pattern) for pattern in config.denylist)
        self._overrides = {override.domain: override for override in config.user_overrides}

    @classmethod
    def load(cls, path: Path, *, version: int = 1) -> DomainPolicy:
        """Read and validate ``path``; raise :class:`ConfigError` naming the entry and field that is wrong."""
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping (categories:, domains:, ...)")
        try:
            config = DomainsConfig.model_validate(data)
        except ValidationError as exc:
            lines = [f"{path}: {_location(tuple(err['loc']))}: {_error_text(err)}" for err in exc.errors()]
            raise ConfigError("\n".join(lines)) from None
        problems = _cross_checks(config)
        if problems:
            raise ConfigError("\n".join(f"{path}: {problem}" for problem in problems))
        return cls(config, path=path, version=version)

    # -- categories -------------------------------------------------------------------------------------------

    def original_category(self, domain: str) -> str:
        """The category from ``domains`` (exact, then the longest suffix) or the default, ignoring user_overrides."""
        key = _lookup_key(domain)
        found = self._categories.find(key) if key else None
        return found if found is not None else self.config.default_category

    def category(self, domain: str) -> str:
        """The effective category: a user override's category first, then :meth:`original_category`.

        An override never turns a ``blocked`` domain into something else (load-time checks refuse that too).
        """
        original = self.original_category(domain)
        override = self.user_override(domain)
        if override is None or override.domain_category is None or original == "blocked":
            return original
        return override.domain_category

    def weight(self, category: str) -> float:
        """The ranking weight of ``category``."""
        try:
            return self.config.categories[category]
        except KeyError:
            raise InvalidInputError(
                "category", f"unknown category {category!r}", hint=f"one of {', '.join(CATEGORY_NAMES)}"
            ) from None

    # -- politeness ---------------------------------------------------------------------------------------------

    def politeness(self, domain: str) -> Politeness:
        """Crawl limits for ``domain``, resolved field by field: user override, then domain rule, then default.

        ``source`` names the highest layer that supplied at least one of the two values.
        """
        default = self.config.politeness.default
        key = _lookup_key(domain)
        rule = self._politeness.find(key) if key else None
        override = self.user_override(domain)
        qps, pages = default.qps, default.max_pages_per_day
        source: PolitenessSource = "default"
        layers: list[tuple[float | None, int | None, PolitenessSource]] = []
        if rule is not None:
            layers.append((rule.qps, rule.max_pages_per_day, "domain"))
        if override is not None:
            layers.append((override.qps, override.max_pages_per_day, "user_override"))
        for layer_qps, layer_pages, layer_source in layers:
            if layer_qps is not None:
                qps, source = layer_qps, layer_source
            if layer_pages is not None:
                pages, source = layer_pages, layer_source
        return Politeness(qps=qps, max_pages_per_day=pages, source=source)

    # -- denylist and overrides ---------------------------------------------------------------------------------

    def denylist_match(self, domain: str) -> str | None:
        """The denylist pattern that covers ``domain`` (exact first, then the longest suffix), or ``None``.

        Exact entries are exact: ``bad.example`` does not deny ``x.bad.example``. User overrides have no effect here.
        """
        key = _lookup_key(domain)
        return self._denylist.find(key) if key else None

    def user_override(self, domain: str) -> UserOverride | None:
        """The user override for exactly this domain (a leading ``www.`` ignored), or ``None``."""
        key = _lookup_key(domain)
        return self._overrides.get(key) if key else None


def _cross_checks(config: DomainsConfig) -> list[str]:
    """Checks that span entries: duplicates, and overrides that would unblock a blocked domain."""
    problems: list[str] = []

    def duplicates(section: str, patterns: list[str]) -> None:
        seen: dict[str, int] = {}
        for index, pattern in enumerate(patterns):
            if pattern in seen:
                problems.append(
                    f"{section}[{index}].domain: {pattern!r} is already listed at {section}[{seen[pattern]}]"
                )
            else:
                seen[pattern] = index

    duplicates("domains", [rule.domain for rule in config.domains])
    duplicates("politeness.domains", [rule.domain for rule in config.politeness.domains])
    duplicates("user_overrides", [override.domain for override in config.user_overrides])
    seen_deny: dict[str, int] = {}
    for index, pattern in enumerate(config.denylist):
        if pattern in seen_deny:
            problems.append(f"denylist[{index}]: {pattern!r} is already listed at denylist[{seen_deny[pattern]}]")
        seen_deny.setdefault(pattern, index)

    probe = DomainPolicy(config)
    for index, override in enumerate(config.user_overrides):
        if probe.original_category(override.domain) == "blocked":
            problems.append(
                f"user_overrides[{index}].domain: {override.domain!r} is blocked by the domains table; "
                "user_overrides cannot unblock a domain (use the feedback tool)"
            )
    return problems


class ReloadingDomainPolicy:
    """A :class:`DomainPolicy` that follows edits to its file without a restart.

    Every accessor first calls :meth:`_maybe_reload`, which ``stat()``s the file at most once per
    ``check_interval`` seconds and reloads when its modification time (ns) or size changed. A reload that fails
    keeps the previous policy, logs the error and records it in ``last_error``; callers never see the exception.
    The broken version is not re-read until the file changes again. The first load, in the constructor, has no
    previous policy to fall back on and raises :class:`ConfigError`. Thread-safe.
    """

    def __init__(self, path: Path, *, check_interval: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.check_interval = check_interval
        self._clock = clock
        self._lock = threading.Lock()
        signature = self._stat_signature()
        self._policy = DomainPolicy.load(path)
        self._signature = signature
        self._last_check = clock()
        self._stat_failed = False
        self.last_error: str | None = None

    def _stat_signature(self) -> tuple[int, int]:
        stat = self.path.stat()
        return stat.st_mtime_ns, stat.st_size

    def _fail(self, message: str) -> None:
        if message != self.last_error:
            log.error("domain policy: keeping version %d: %s", self._policy.version, message)
        self.last_error = message

    def _maybe_reload(self) -> None:
        with self._lock:
            now = self._clock()
            if now - self._last_check < self.check_interval:
                return
            self._last_check = now
            try:
                signature = self._stat_signature()
            except OSError as exc:
                self._stat_failed = True
                self._fail(f"cannot stat {self.path}: {exc}")
                return
            if signature == self._signature:
                if self._stat_failed:  # the file is back, unchanged: the loaded policy matches it
                    self._stat_failed = False
                    self.last_error = None
                return
            self._stat_failed = False
            # Remember the signature before reading: a write racing with the read shows up as a new change.
            self._signature = signature
            try:
                policy = DomainPolicy.load(self.path, version=self._policy.version + 1)
            except ConfigError as exc:
                self._fail(exc.message)
                return
            except Exception as exc:  # never let a reload break the caller
                self._fail(f"unexpected error while reloading {self.path}: {exc!r}")
                return
            self._policy = policy
            self.last_error = None
            log.info("domain policy: loaded version %d from %s", policy.version, self.path)

    def current(self) -> DomainPolicy:
        """The policy in force now (after a reload check)."""
        self._maybe_reload()
        return self._policy

    @property
    def version(self) -> int:
        return self.current().version

    @property
    def loaded_at(self) -> datetime:
        return self.current().loaded_at

    def category(self, domain: str) -> str:
        return self.current().category(domain)

    def original_category(self, domain: str) -> str:
        return self.current().original_category(domain)

    def weight(self, category: str) -> float:
        return self.current().weight(category)

    def politeness(self, domain: str) -> Politeness:
        return self.current().politeness(domain)

    def denylist_match(self, domain: str) -> str | None:
        return self.current().denylist_match(domain)

    def user_override(self, domain: str) -> UserOverride | None:
        return self.current().user_override(domain)
