"""The managed local Neo4j: a real Neo4j 5.26 Community server run from Maven Central jars on 127.0.0.1.

Layout under the state folder (``.lyra/`` in a checkout)::

    neo4j/home/lib, neo4j/home/plugins        jars fetched by config/neo4j/pom.xml (shared by all instances)
    neo4j/<instance>/conf/neo4j.conf, apoc.conf
    neo4j/<instance>/data, logs, run, import
    neo4j/<instance>/password                 generated before the first start (never a default)
    neo4j/<instance>/neo4j.pid
    neo4j/<instance>/ports.json               {"bolt": N, "http": M}: the instance's ports, written once

An instance is any name matching ``[a-z][a-z0-9_-]{0,31}`` (``default`` for the demo's data, ``test`` for the test
suite's, any other for a second checkout or a throw-away server). Its ports, in order: ``LYRA_NEO4J_BOLT_PORT`` /
``LYRA_NEO4J_HTTP_PORT`` when set (written into its ``ports.json`` at the next start); its ``ports.json``; for the
names that existed before (``KNOWN_PORTS``: existing state folders and the docs use them) their fixed ports;
otherwise a free pair, allocated once and written into ``ports.json`` so it stays the same.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from lyra.core.errors import Neo4jServerError
from lyra.core.settings import Settings
from lyra.graph.query_guard import server_procedure_allowlist

log = logging.getLogger(__name__)

INSTANCE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
PORTS_FILE = "ports.json"
# The one list of fixed ports: the names that existed before instances could be any name keep theirs, so existing
# state folders and the docs stay right. test2..test6 let several checkouts (or parallel test runs) each use a
# throw-away instance of their own; scratch is the one the offline-import tests stop, replace and start without
# touching the instance the rest of a run uses. Any other name gets a free pair (see instance_ports).
KNOWN_PORTS: dict[str, tuple[int, int]] = {
    "default": (7687, 7474),
    "test": (7688, 7475),
    "test2": (7689, 7476),
    "test3": (7690, 7477),
    "test4": (7691, 7478),
    "test5": (7692, 7479),
    "test6": (7693, 7480),
    "scratch": (7694, 7481),
}
NEO4J_USERNAME = "neo4j"
_SERVERS: list[subprocess.Popen[bytes]] = []  # servers this process started (see LocalNeo4j.start)


@dataclass(frozen=True)
class ServerStatus:
    instance: str
    running: bool
    pid: int | None
    bolt_uri: str
    browser_url: str
    installed: bool
    initialised: bool


def check_instance_name(name: str) -> str:
    """``name`` if it is a valid instance name (``[a-z][a-z0-9_-]{0,31}``), else :class:`Neo4jServerError`."""
    if not INSTANCE_NAME.fullmatch(name):
        raise Neo4jServerError(
            f"invalid instance name {name!r}",
            hint="an instance name is a lower-case letter, then up to 31 of a-z, 0-9, '_' and '-'",
        )
    return name


def _read_ports(path: Path) -> tuple[int, int] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        bolt, http = int(data["bolt"]), int(data["http"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (bolt, http) if 0 < bolt < 65536 and 0 < http < 65536 else None


def _write_ports(path: Path, ports: tuple[int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"bolt": ports[0], "http": ports[1]}) + "\n", encoding="utf-8")
    tmp.replace(path)


def managed_instances(state_dir: Path) -> dict[str, tuple[int, int]]:
    """Every instance whose ports are known: the fixed names, then each ``<state>/neo4j/<name>/ports.json``."""
    found = dict(KNOWN_PORTS)
    root = state_dir / "neo4j"
    if root.is_dir():
        for path in sorted(root.glob(f"*/{PORTS_FILE}")):
            name = path.parent.name
            ports = _read_ports(path)
            if ports is not None and INSTANCE_NAME.fullmatch(name):
                found[name] = ports
    return found


def _free_port_pair(taken: set[int]) -> tuple[int, int]:
    """Two distinct ports on 127.0.0.1 that nothing listens on now and no other instance uses."""
    import socket

    ports: list[int] = []
    while len(ports) < 2:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in taken and port not in ports:
            ports.append(port)
    return ports[0], ports[1]


def instance_ports(settings: Settings, instance: str) -> tuple[int, int]:
    """(bolt, http) of ``instance``: from the settings when given, else written once (see the module docstring)."""
    check_instance_name(instance)
    path = settings.paths.state_dir / "neo4j" / instance / PORTS_FILE
    stored = _read_ports(path) or KNOWN_PORTS.get(instance)
    if stored is None:
        if settings.neo4j.neo4j_bolt_port is not None and settings.neo4j.neo4j_http_port is not None:
            stored = (settings.neo4j.neo4j_bolt_port, settings.neo4j.neo4j_http_port)
        else:
            taken = {port for pair in managed_instances(settings.paths.state_dir).values() for port in pair}
            taken |= {p for p in (settings.neo4j.neo4j_bolt_port, settings.neo4j.neo4j_http_port) if p is not None}
            stored = _free_port_pair(taken)
            _write_ports(path, stored)
            log.info("instance %r: allocated bolt %d, http %d (%s)", instance, stored[0], stored[1], path)
    return (settings.neo4j.neo4j_bolt_port or stored[0], settings.neo4j.neo4j_http_port or stored[1])


def instance_for_uri(uri: str | None, state_dir: Path) -> str | None:
    """The managed instance whose Bolt address ``uri`` is (bolt or neo4j scheme on 127.0.0.1/localhost), if any."""
    if not uri:
        return None
    from urllib.parse import urlparse

    parsed = urlparse(uri)
    if parsed.scheme not in ("bolt", "neo4j") or parsed.hostname not in ("127.0.0.1", "localhost"):
        return None
    for name, (bolt, _http) in managed_instances(state_dir).items():
        if parsed.port == bolt:
            return name
    return None


class LocalNeo4j:
    """Installs, starts, checks and stops one managed Neo4j instance."""

    def __init__(self, settings: Settings, instance: str | None = None) -> None:
        self.settings = settings
        self.instance = check_instance_name(settings.neo4j.neo4j_instance if instance is None else instance)
        self.bolt_port, self.http_port = instance_ports(settings, self.instance)
        root = settings.paths.state_dir / "neo4j"
        self.home = root / "home"
        self.dir = root / self.instance
        self.ports_file = self.dir / PORTS_FILE
        self.conf_dir = self.dir / "conf"
        self.data_dir = self.dir / "data"
        self.logs_dir = self.dir / "logs"
        self.pid_file = self.dir / "neo4j.pid"
        self.password_file = self.dir / "password"
        self.console_log = self.logs_dir / "console.log"

    # ------------------------------------------------------------------ facts
    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/browser/"

    def installed(self) -> bool:
        lib = self.home / "lib"
        return lib.is_dir() and any(lib.glob("neo4j-5.*.jar")) and any((self.home / "plugins").glob("apoc-*.jar"))

    def initialised(self) -> bool:
        return self.password_file.exists() and (self.data_dir / "dbms" / "auth.ini").exists()

    def password(self) -> str:
        if not self.password_file.exists():
            flag = "" if self.instance == "default" else f" --instance {self.instance}"
            raise Neo4jServerError(
                f"the managed Neo4j instance {self.instance!r} has no password yet",
                hint=f"run `lyra neo4j start{flag}` first",
            )
        return self.password_file.read_text(encoding="utf-8").strip()

    def pid(self) -> int | None:
        """The server's pid if our pid file names a live Neo4j process."""
        try:
            pid = int(self.pid_file.read_text(encoding="utf-8").strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            return None
        if "CommunityEntryPoint" not in cmdline or str(self.dir) not in cmdline:
            return None
        return pid

    def status(self) -> ServerStatus:
        pid = self.pid()
        return ServerStatus(
            instance=self.instance,
            running=pid is not None and self._answers(),
            pid=pid,
            bolt_uri=self.bolt_uri,
            browser_url=self.browser_url,
            installed=self.installed(),
            initialised=self.initialised(),
        )

    def env_lines(self) -> list[str]:
        return [
            f"export NEO4J_URI={self.bolt_uri}",
            f"export NEO4J_USERNAME={NEO4J_USERNAME}",
            f"export NEO4J_PASSWORD={self.password()}",
        ]

    def log_tail(self, lines: int = 40) -> str:
        chunks: list[str] = []
        for path in (self.console_log, self.logs_dir / "neo4j.log", self.logs_dir / "debug.log"):
            if path.exists():
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
                chunks.append(f"--- {path} (last {lines} lines) ---\n" + "\n".join(text[-lines:]))
        return "\n".join(chunks) or "(no log written)"

    # ---------------------------------------------------------------- install
    def install(self) -> None:
        """Fetch the server, APOC core and the Browser jar from Maven Central (cached in ~/.m2)."""
        if self.installed():
            return
        pom = self.settings.paths.config_dir / "neo4j" / "pom.xml"
        if not pom.exists():
            raise Neo4jServerError(f"missing {pom}; cannot fetch the Neo4j jars")
        mvn = shutil.which("mvn")
        if mvn is None:
            raise Neo4jServerError("Maven (`mvn`) is not installed; it fetches the Neo4j jars from Maven Central")
        log.info("fetching Neo4j jars from Maven Central into %s (first run only)", self.home)
        self.home.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom), "package", f"-Dneo4j.home={self.home}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not self.installed():
            raise Neo4jServerError(
                "fetching the Neo4j jars failed:\n" + (proc.stdout + proc.stderr)[-4000:],
                hint="check that Maven Central is reachable and ~/.m2 is writable",
            )

    # ------------------------------------------------------------------ start
    def _java(self) -> str:
        java_home = os.environ.get("JAVA_HOME")
        if java_home and (Path(java_home) / "bin" / "java").exists():
            return str(Path(java_home) / "bin" / "java")
        java = shutil.which("java")
        if java is None:
            raise Neo4jServerError("no `java` found; Neo4j 5.26 needs Java 17 or 21")
        return java

    def _config_files(self) -> dict[str, str]:
        """The text of conf/neo4j.conf and conf/apoc.conf, as every start writes them."""
        s = self.settings
        conf = f"""# Written by `lyra neo4j start`; edits are overwritten on the next start.
server.directories.data={self.data_dir}
server.directories.logs={self.logs_dir}
server.directories.plugins={self.home / "plugins"}
server.directories.lib={self.home / "lib"}
server.directories.import={self.dir / "import"}
server.directories.run={self.dir / "run"}
server.default_listen_address=127.0.0.1
server.default_advertised_address=127.0.0.1
server.bolt.enabled=true
server.bolt.listen_address=127.0.0.1:{self.bolt_port}
server.bolt.advertised_address=127.0.0.1:{self.bolt_port}
server.http.enabled=true
server.http.listen_address=127.0.0.1:{self.http_port}
server.http.advertised_address=127.0.0.1:{self.http_port}
server.https.enabled=false
server.memory.pagecache.size={s.neo4j.neo4j_pagecache}
dbms.memory.transaction.total.max={s.neo4j.neo4j_tx_memory_max}
db.memory.transaction.max={s.neo4j.neo4j_transaction_memory_max}
dbms.usage_report.enabled=false
dbms.security.auth_enabled=true
# Hardening (docs/guides/query-door.md): only the plug-in procedures and functions Lyra and its query
# door use are loaded, none runs unrestricted, and Cypher reads no files and no URLs (LOAD CSV, APOC loaders).
dbms.security.procedures.allowlist={server_procedure_allowlist()}
dbms.security.allow_csv_import_from_file_urls=false
internal.dbms.cypher_ip_blocklist=0.0.0.0/0,::/0
"""
        apoc = (
            "# Written by `lyra neo4j start`; edits are overwritten on the next start.\n"
            "apoc.export.file.enabled=false\n"
            "apoc.import.file.enabled=false\n"
            "apoc.import.file.use_neo4j_config=true\n"
            "apoc.trigger.enabled=false\n"
        )
        return {"neo4j.conf": conf, "apoc.conf": apoc}

    def _write_config(self) -> None:
        """Write the configuration afresh (every start does, so an existing instance gets the current hardening)."""
        for sub in ("conf", "data", "logs", "run", "import"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        for name, text in self._config_files().items():
            (self.conf_dir / name).write_text(text, encoding="utf-8")

    def config_outdated(self) -> bool:
        """True when the configuration on disk is not what a start would write now (a running server started
        before an upgrade keeps its old settings until it is restarted)."""
        for name, text in self._config_files().items():
            path = self.conf_dir / name
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                return True
        return False

    def _neo4j_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("JAVA_OPTS", "NEO4J_CONF", "NEO4J_HOME")}
        env["NEO4J_HOME"] = str(self.home)
        env["NEO4J_CONF"] = str(self.conf_dir)
        return env

    def _set_initial_password(self) -> None:
        # hex only: a password starting with "-" would be read by neo4j-admin as an option
        password = secrets.token_hex(20)
        proc = subprocess.run(
            [
                self._java(),
                "-cp",
                f"{self.home / 'lib'}/*",
                "org.neo4j.cli.AdminTool",
                "dbms",
                "set-initial-password",
                password,
            ],
            env=self._neo4j_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise Neo4jServerError(f"setting the initial Neo4j password failed:\n{proc.stdout}{proc.stderr}")
        self.password_file.write_text(password + "\n", encoding="utf-8")
        self.password_file.chmod(0o600)

    def _answers(self) -> bool:
        """True when a driver can log in and run ``RETURN 1``."""
        from neo4j import GraphDatabase
        from neo4j.exceptions import Neo4jError, ServiceUnavailable

        try:
            password = self.password()
        except Neo4jServerError:
            return False
        try:
            with (
                GraphDatabase.driver(self.bolt_uri, auth=(NEO4J_USERNAME, password), connection_timeout=3) as driver,
                driver.session(database="neo4j") as session,
            ):
                record = session.run("RETURN 1 AS ok").single()
                return bool(record is not None and record["ok"] == 1)
        except (ServiceUnavailable, Neo4jError, OSError):
            return False
        except Exception:  # the driver raises a few non-Neo4jError types while the server boots
            return False

    def _port_busy(self) -> bool:
        import socket

        for port in (self.bolt_port, self.http_port):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.settimeout(0.5)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return True
        return False

    def start(self) -> ServerStatus:
        """Start the instance (or reuse a running one) and wait until ``RETURN 1`` answers."""
        if _read_ports(self.ports_file) != (self.bolt_port, self.http_port):
            _write_ports(self.ports_file, (self.bolt_port, self.http_port))  # written once; instance_for_uri reads it
        if self.pid() is not None:
            if self._wait_ready(None, timeout=self.settings.neo4j.neo4j_start_timeout):
                log.info("reusing the running Neo4j instance %r (pid %s)", self.instance, self.pid())
                if self.config_outdated():
                    flag = "" if self.instance == "default" else f" --instance {self.instance}"
                    log.warning(
                        "the running Neo4j instance %r was started with an older configuration (security "
                        "hardening included); restart it to apply the current one: lyra neo4j stop%s && "
                        "lyra neo4j start%s",
                        self.instance,
                        flag,
                        flag,
                    )
                return self.status()
            raise Neo4jServerError(
                f"Neo4j instance {self.instance!r} runs (pid {self.pid()}) but does not answer RETURN 1\n"
                + self.log_tail()
            )
        if self._port_busy():
            raise Neo4jServerError(
                f"port {self.bolt_port} or {self.http_port} on 127.0.0.1 is already taken by another process",
                hint="stop that process, or point Lyra at it with NEO4J_URI/NEO4J_USERNAME/NEO4J_PASSWORD",
            )
        self.install()
        self._write_config()
        if not self.initialised():
            # A data folder without our password would keep the default; start over cleanly.
            if (self.data_dir / "dbms").exists() and not self.password_file.exists():
                raise Neo4jServerError(
                    f"{self.data_dir} holds a database whose password Lyra does not know",
                    hint=f"remove {self.dir} to start a fresh instance",
                )
            self._set_initial_password()
        cmd = [
            self._java(),
            "-cp",
            f"{self.home / 'plugins'}/*:{self.conf_dir}/*:{self.home / 'lib'}/*",
            f"-Xms{self.settings.neo4j.neo4j_heap}",
            f"-Xmx{self.settings.neo4j.neo4j_heap}",
            "-XX:+UseG1GC",
            "-XX:-OmitStackTraceInFastThrow",
            "-XX:+DisableExplicitGC",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/java.io=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "-Dfile.encoding=UTF-8",
            "org.neo4j.server.CommunityEntryPoint",
            f"--home-dir={self.home}",
            f"--config-dir={self.conf_dir}",
            "--console-mode",
        ]
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        with self.console_log.open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._neo4j_env(),
                cwd=str(self.dir),
                start_new_session=True,
            )
        self.pid_file.write_text(f"{proc.pid}\n", encoding="utf-8")
        # The server outlives this call (and may outlive this process); keep the handle so it is not collected while
        # the server runs (Popen warns when a running child's handle is dropped).
        _SERVERS.append(proc)
        log.info("started Neo4j instance %r (pid %s); waiting for it to answer", self.instance, proc.pid)
        if not self._wait_ready(proc, timeout=self.settings.neo4j.neo4j_start_timeout):
            code = proc.poll()
            if code is None:
                self._terminate(proc.pid)
            self.pid_file.unlink(missing_ok=True)
            raise Neo4jServerError(
                f"Neo4j instance {self.instance!r} did not answer RETURN 1 within "
                f"{self.settings.neo4j.neo4j_start_timeout:.0f}s (exit code {code})\n{self.log_tail()}"
            )
        return self.status()

    def _wait_ready(self, proc: subprocess.Popen[bytes] | None, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                return False
            if proc is None and self.pid() is None:
                return False
            if self._answers():
                return True
            time.sleep(1.0)
        return False

    # ------------------------------------------------------------------- stop
    def _terminate(self, pid: int, timeout: float = 60.0) -> None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            with contextlib.suppress(ChildProcessError):  # reap it if it is our child
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.3)
        log.warning("Neo4j (pid %s) did not stop within %.0fs; killing it", pid, timeout)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    def offline_import(self, nodes: list[tuple[str, Path]], relationships: list[tuple[str, Path]]) -> str:
        """Build the database ``neo4j`` afresh from CSV files with Neo4j's offline importer
        (``neo4j-admin database import full``); the instance must be stopped. ``nodes``: (labels joined by ':',
        file); ``relationships``: (type, file); each file starts with the importer's header row. Returns the
        importer's output; Neo4jServerError when it fails."""
        if self.pid() is not None:
            raise Neo4jServerError(f"Neo4j instance {self.instance!r} must be stopped for an offline import")
        self._write_config()
        cmd = [
            self._java(),
            "-cp",
            f"{self.home / 'lib'}/*",
            "org.neo4j.cli.AdminTool",
            "database",
            "import",
            "full",
            "neo4j",  # the database first: the list-valued options would take a trailing name for a file
            "--overwrite-destination=true",
            "--multiline-fields=true",
            "--threads=2",
            *(f"--nodes={labels}={path}" for labels, path in nodes),
            *(f"--relationships={kind}={path}" for kind, path in relationships),
        ]
        proc = subprocess.run(
            cmd, env=self._neo4j_env(), capture_output=True, text=True, check=False, cwd=str(self.dir), timeout=3600
        )
        if proc.returncode != 0:
            raise Neo4jServerError(f"the offline import failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
        return proc.stdout

    def stop(self) -> bool:
        """Stop the instance; returns False when it was not running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        self._terminate(pid)
        self.pid_file.unlink(missing_ok=True)
        return True
