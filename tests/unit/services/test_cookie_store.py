"""The secret store for cookies a person gave (resolve_auth with cookie): owner-only file, per task and domain."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from lyra.services.interventions import CookieStore
from lyra.sources.web.fetcher import cookie_for


def test_cookies_are_kept_per_task_and_domain_in_an_owner_only_file(tmp_path: Path) -> None:
    store = CookieStore(tmp_path / "auth" / "cookies.json")
    store.put("task_a", "journal.example", "pass=1")
    store.put("task_a", "news.example", "sid=2")
    store.put("task_b", "journal.example", "pass=3")
    assert store.for_task("task_a") == {"journal.example": "pass=1", "news.example": "sid=2"}
    assert store.domains("task_b") == {"journal.example"}
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert CookieStore(store.path).for_task("task_b") == {"journal.example": "pass=3"}  # another process's view
    assert store.drop_task("task_a") == 2 and store.for_task("task_a") == {} and store.domains("task_b")
    assert store.drop_task("task_a") == 0


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cookies.json"

    def write(n: int) -> None:
        store = CookieStore(path)  # separate objects: only the file lock orders them
        for i in range(10):
            store.put(f"task_{n}", f"d{i}.example", f"k={n}.{i}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store = CookieStore(path)
    assert all(len(store.for_task(f"task_{n}")) == 10 for n in range(4))


def test_a_cookie_matches_its_domain_and_subdomains_only() -> None:
    cookies = {"example.org": "a=1", "deep.example.org": "b=2"}
    assert cookie_for(cookies, "https://example.org/x") == "a=1"
    assert cookie_for(cookies, "https://www.example.org/x") == "a=1"
    assert cookie_for(cookies, "https://api.deep.example.org/x") == "b=2"  # the longest match
    assert cookie_for(cookies, "https://notexample.org/x") is None
    assert cookie_for(cookies, "https://example.org.evil.net/x") is None
    assert cookie_for({}, "https://example.org/") is None
