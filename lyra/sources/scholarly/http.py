"""The HTTP layer both scholarly clients share.

One :class:`ApiHttp` per API wraps one shared ``httpx.Client`` and adds, in this order for every request:

1. the on-disk response cache (:class:`ResponseCache`, sqlite, keyed by API + method + URL + sorted query + body
   hash, secrets left out; TTL from ``LYRA_SCHOLARLY_CACHE_TTL_SECONDS``, 0 disables it). A hit sends nothing;
2. the task's request budget (:class:`RequestBudget`): a request past ``max_requests`` raises
   :class:`~lyra.core.errors.BudgetExhausted` instead of being sent;
3. the API's rate limit (:class:`RateLimiter`, one per API and base URL for the whole process, thread-safe);
4. retries by ``stamina`` on 429, 5xx and transport errors (timeouts included), exponential backoff with jitter,
   ``Retry-After`` honoured exactly; bounded attempts and total time; a ``Retry-After`` longer than the longest
   allowed wait gives up at once instead of sleeping.

Failures become :class:`~lyra.core.errors.SourceUnavailable` naming the API (retries exhausted, timeouts, malformed
JSON, refused keys); a 404 is an answer (``None``). :class:`Usage` counts requests, cache hits, retries, 429s and
errors per API.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import stamina

from lyra import __version__
from lyra.core.errors import BudgetExhausted, SourceUnavailable

log = logging.getLogger(__name__)

USAGE_FIELDS = ("requests", "cache_hits", "retries", "rate_limited", "errors")


def user_agent(contact: str | None) -> str:
    """A polite User-Agent naming Lyra and, when configured, who to contact."""
    return f"Lyra/{__version__} (evidence platform; mailto:{contact})" if contact else f"Lyra/{__version__}"


class Usage:
    """Per-API counters: ``requests`` sent, ``cache_hits``, ``retries``, ``rate_limited`` (429 answers) and
    ``errors`` (requests that finally failed). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(USAGE_FIELDS, 0)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


class RequestBudget:
    """At most ``max_requests`` requests sent over the network (cache hits are free), shared by every API of a
    task; ``None`` is no limit. Thread-safe."""

    def __init__(self, max_requests: int | None = None) -> None:
        self.max_requests = max_requests
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def take(self, api: str) -> None:
        with self._lock:
            if self.max_requests is not None and self._used >= self.max_requests:
                raise BudgetExhausted(
                    f"scholarly API request budget used up ({self.max_requests} requests); {api} request not sent",
                    hint="raise the task's max_requests, or rely on cached answers",
                )
            self._used += 1


class RateLimiter:
    """Spaces requests at least ``1 / per_second`` seconds apart, across threads. A caller goes when the interval
    since the previous caller *went* has passed, checked under a lock after every sleep, so a caller that wakes late
    pushes the next one back instead of letting two requests leave closer together than the interval."""

    def __init__(self, per_second: float) -> None:
        self.interval = 1.0 / per_second
        self._next = 0.0
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Wait for this caller's turn; returns the monotonic time at which it was cleared to go."""
        while True:
            with self._lock:
                now = time.monotonic()
                if now >= self._next:
                    self._next = now + self.interval
                    return now
                wait = self._next - now
            time.sleep(wait)


_LIMITERS: dict[tuple[str, str, float], RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def shared_limiter(api: str, base_url: str, per_second: float) -> RateLimiter:
    """The process-wide limiter of one API at one base URL: every task's client of that API shares it, so the
    rate holds however many jobs run at once."""
    with _LIMITERS_LOCK:
        return _LIMITERS.setdefault((api, base_url, per_second), RateLimiter(per_second))


class ResponseCache:
    """Answers (status + body) on disk for ``ttl_seconds``, keyed by :meth:`key`. Thread-safe; several processes
    may share the file (WAL). ``read`` false: nothing is answered from it, every fresh answer still replaces the
    one kept (a refresh's re-check: the job that reads a changed paper again then finds the answer the check saw,
    docs/concepts/living-evidence.md)."""

    def __init__(self, path: Path, ttl_seconds: float, *, read: bool = True) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.ttl_seconds = ttl_seconds
        self.read = read
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, status INTEGER, body TEXT, stored REAL)"
        )
        self._lock = threading.Lock()

    @staticmethod
    def key(api: str, method: str, url: str, params: Mapping[str, str], body: object | None) -> str:
        query = "&".join(f"{k}={v}" for k, v in sorted(params.items()))
        payload = "" if body is None else json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256("\x00".join((api, method, url, query, payload)).encode("utf-8")).hexdigest()

    def get(self, key: str) -> tuple[int, str] | None:
        if not self.read:
            return None
        with self._lock:
            row = self._db.execute("SELECT status, body, stored FROM responses WHERE key=?", (key,)).fetchone()
        if row is None or time.time() - row[2] > self.ttl_seconds:
            return None
        return int(row[0]), str(row[1])

    def put(self, key: str, status: int, body: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", (key, status, body, time.time()))

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    initial_wait: float = 1.0
    max_wait: float = 60.0
    timeout: float = 180.0


class _RetryableStatus(Exception):
    """An answer worth trying again (429, 5xx), raised inside the retry loop only."""

    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ApiHttp:
    """One API's door to the network: base URL, fixed headers and query parameters (``secret_params`` are sent but
    never part of a cache key), the shared client, cache, budget, limiter, retries and counters."""

    def __init__(
        self,
        name: str,
        base_url: str,
        client: httpx.Client,
        *,
        limiter: RateLimiter,
        retry: RetryPolicy,
        usage: Usage | None = None,
        budget: RequestBudget | None = None,
        cache: ResponseCache | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        secret_params: Mapping[str, str] | None = None,
        key_hint: str | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.limiter = limiter
        self.retry = retry
        self.usage = usage or Usage()
        self.budget = budget or RequestBudget()
        self.cache = cache
        self.headers = dict(headers or {})
        self.params = dict(params or {})
        self.secret_params = dict(secret_params or {})
        self.key_hint = key_hint

    def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        """The decoded JSON answer, or None for a 404."""
        return self._request("GET", path, dict(params or {}), None)

    def post(self, path: str, params: Mapping[str, str] | None, body: object) -> Any:
        return self._request("POST", path, dict(params or {}), body)

    def _request(self, method: str, path: str, params: dict[str, str], body: object | None) -> Any:
        url = self.base_url + path
        cache_key = ResponseCache.key(self.name, method, url, {**self.params, **params}, body)
        if self.cache is not None and (hit := self.cache.get(cache_key)) is not None:
            self.usage.add("cache_hits")
            return self._decode(method, path, *hit)
        response = self._send_with_retries(method, url, path, {**self.params, **params, **self.secret_params}, body)
        value = self._decode(method, path, response.status_code, response.text)
        if self.cache is not None:
            self.cache.put(cache_key, response.status_code, response.text)
        return value

    def _decode(self, method: str, path: str, status: int, text: str) -> Any:
        if status == 404:
            return None
        if status >= 400:
            self.usage.add("errors")
            hint = self.key_hint if status in (401, 403) else None
            raise SourceUnavailable(f"{self.name} refused {method} {path}: HTTP {status} {text[:200]}", hint=hint)
        try:
            return json.loads(text)
        except ValueError as exc:
            self.usage.add("errors")
            raise SourceUnavailable(
                f"{self.name} answered {method} {path} with malformed JSON ({exc}): {text[:80]!r}"
            ) from exc

    def _retry_hook(self, exc: Exception) -> bool | float:
        if isinstance(exc, _RetryableStatus):
            if exc.retry_after is None:
                return True
            # Honour Retry-After exactly; one longer than the longest allowed wait is not worth sleeping through.
            return exc.retry_after if exc.retry_after <= self.retry.max_wait else False
        return isinstance(exc, httpx.TransportError)

    def _send_with_retries(
        self, method: str, url: str, path: str, params: dict[str, str], body: object | None
    ) -> httpx.Response:
        attempts = 0
        try:
            for attempt in stamina.retry_context(
                on=self._retry_hook,
                attempts=self.retry.attempts,
                timeout=self.retry.timeout,
                wait_initial=self.retry.initial_wait,
                wait_max=self.retry.max_wait,
                wait_jitter=self.retry.initial_wait,
            ):
                with attempt:
                    attempts += 1
                    if attempts > 1:
                        self.usage.add("retries")
                    return self._send_once(method, url, params, body)
        except _RetryableStatus as exc:
            self.usage.add("errors")
            detail = f"{exc.status} after {attempts} attempt{'s' if attempts > 1 else ''}"
            if exc.retry_after is not None and exc.retry_after > self.retry.max_wait:
                detail += f" (Retry-After {exc.retry_after:.0f} s is longer than the {self.retry.max_wait:.0f} s wait)"
            raise SourceUnavailable(
                f"{self.name} unavailable: {detail} ({method} {path})",
                hint=self.key_hint if exc.status == 429 else None,
            ) from exc
        except httpx.TimeoutException as exc:
            self.usage.add("errors")
            raise SourceUnavailable(
                f"{self.name} unavailable: no answer in time after {attempts} attempt{'s' if attempts > 1 else ''} "
                f"({type(exc).__name__}, {method} {path})"
            ) from exc
        except httpx.TransportError as exc:
            self.usage.add("errors")
            raise SourceUnavailable(
                f"{self.name} unavailable: {type(exc).__name__} after {attempts} attempts ({method} {path}): {exc}"
            ) from exc
        raise AssertionError("unreachable: stamina either returns or raises")  # pragma: no cover

    def _send_once(self, method: str, url: str, params: dict[str, str], body: object | None) -> httpx.Response:
        self.budget.take(self.name)
        self.limiter.acquire()
        self.usage.add("requests")
        response = self.client.request(method, url, params=params, json=body, headers=self.headers)
        if response.status_code == 429:
            self.usage.add("rate_limited")
        if response.status_code == 429 or response.status_code >= 500:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            log.info("%s answered %s to %s %s", self.name, response.status_code, method, url)
            raise _RetryableStatus(response.status_code, retry_after)
        return response
