"""The browser backend: Debian's chromium driven by Playwright, for pages whose text only appears after scripts run.

:class:`ChromiumRenderer` never lets chromium reach the network by itself. Every request the page makes (documents,
scripts, XHR/fetch, stylesheets) is intercepted with ``page.route("**/*")`` and answered from the fetcher's own
``fetch`` callback, which applies the SSRF guard, the domain gate, robots.txt, the rate limit and the size and time
limits to it like to any page; what the fetcher refuses is aborted. Images, media and fonts are aborted without
asking (text does not need them). As a second line, chromium is started with a proxy that does not exist and no
proxy bypass for loopback, so a request that escaped interception (a WebSocket, a service worker: blocked too) fails
instead of connecting; DNS prefetching and non-proxied WebRTC are off.

Chromium is the one at ``LYRA_CHROMIUM_PATH`` (``/usr/bin/chromium``, Debian's package): ``playwright install`` is
never run. Playwright's synchronous API belongs to the thread that started it, so one worker thread owns the browser
and renders one page at a time for every caller (each in a fresh context: no cookies or storage carried over).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from lyra.core.errors import ConfigError
from lyra.sources.web.types import RawResponse

log = logging.getLogger(__name__)

__all__ = ["CHROMIUM_ARGS", "ChromiumRenderer"]

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--dns-prefetch-disable",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--proxy-server=http://127.0.0.1:9",  # nothing listens there: an unintercepted request fails
    "--proxy-bypass-list=<-loopback>",  # and loopback is not exempt from that proxy
]
SKIPPED_RESOURCES = frozenset({"image", "media", "font"})
DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection", "set-cookie"})

_Job = tuple[RawResponse, Callable[[str], RawResponse], float, "Future[str]"]


class ChromiumRenderer:
    """A :class:`~lyra.sources.web.fetcher.PageRenderer` over Debian's chromium (see the module docstring)."""

    def __init__(self, chromium_path: Path, *, settle_seconds: float = 2.0) -> None:
        if not chromium_path.exists():
            raise ConfigError(
                f"chromium not found at {chromium_path}",
                hint="install Debian's chromium (apt-get install chromium) or set LYRA_CHROMIUM_PATH",
            )
        self.chromium_path = chromium_path
        self.settle_seconds = settle_seconds
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ callers' side
    def render(self, page: RawResponse, fetch: Callable[[str], RawResponse], timeout: float) -> str:
        """The HTML of ``page`` after its scripts ran; ``page`` is served as fetched, everything else via ``fetch``."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lyra-chromium", daemon=True)
                self._thread.start()
        done: Future[str] = Future()
        self._jobs.put((page, fetch, timeout, done))
        return done.result(timeout=timeout + 30.0)

    def close(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join(timeout=30.0)

    # ------------------------------------------------------------------ the browser's thread
    def _run(self) -> None:
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=str(self.chromium_path), args=CHROMIUM_ARGS)
                try:
                    while (job := self._jobs.get()) is not None:
                        page, fetch, timeout, done = job
                        if done.set_running_or_notify_cancel():
                            try:
                                done.set_result(self._render(browser, page, fetch, timeout))
                            except Exception as exc:
                                done.set_exception(exc)
                finally:
                    browser.close()
        except Exception as exc:
            log.error("chromium could not be started: %s", exc)
            while True:  # fail whatever is waiting, and what comes until close()
                try:
                    job = self._jobs.get(timeout=1.0)
                except queue.Empty:
                    if self._thread is None:
                        return
                    continue
                if job is None:
                    return
                job[3].set_exception(exc)

    def _render(self, browser: Any, page: RawResponse, fetch: Callable[[str], RawResponse], timeout: float) -> str:
        context = browser.new_context(service_workers="block", accept_downloads=False, java_script_enabled=True)
        try:
            tab = context.new_page()
            served_first = False

            def handle(route: Any) -> None:
                nonlocal served_first
                request = route.request
                if request.resource_type in SKIPPED_RESOURCES or request.method not in ("GET", "HEAD"):
                    route.abort("blockedbyclient")
                    return
                if not served_first and request.url == page.url and request.is_navigation_request():
                    served_first = True
                    got = page
                else:
                    try:
                        got = fetch(request.url)
                    except Exception as exc:  # refused by the fetcher (SSRF, gate, robots, limits)
                        log.info("browser request %s refused: %s", request.url, exc)
                        route.abort("blockedbyclient")
                        return
                headers = {k: v for k, v in got.headers.items() if k.lower() not in DROPPED_HEADERS}
                route.fulfill(status=got.status, headers=headers, body=got.body)

            tab.route("**/*", handle)
            tab.goto(page.url, wait_until="load", timeout=timeout * 1000)
            with contextlib.suppress(Exception):  # a page that keeps polling still has its text by now
                tab.wait_for_load_state("networkidle", timeout=self.settle_seconds * 1000)
            html: str = tab.content()
            return html
        finally:
            context.close()
