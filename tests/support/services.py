"""Debian's PostgreSQL and Redis servers on loopback, for the deployment tests.

Each server is a real one started from the Debian packages (``postgresql``,
``redis-server``; ``scripts/test`` installs them), on 127.0.0.1 and a free port,
its data in a temporary folder, stopped and deleted when its ``with`` block ends.
PostgreSQL refuses to run as root, so as root its cluster belongs to the
``postgres`` user the package creates and runs as that user.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

INSTALL = "apt-get install -y postgresql redis-server"
POSTGRES_ROOT = Path("/usr/lib/postgresql")
START_TIMEOUT_S = 120


class ServiceMissing(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited at start ({proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} in {START_TIMEOUT_S} s")


def postgres_bin() -> Path:
    """The newest installed PostgreSQL's binaries (Debian keeps them off the PATH)."""
    versions = sorted(
        (p for p in POSTGRES_ROOT.glob("*/bin") if (p / "postgres").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not versions:
        raise ServiceMissing(f"no PostgreSQL under {POSTGRES_ROOT}: {INSTALL}")
    return versions[-1]


@dataclass(frozen=True)
class PostgresDatabase:
    """One database on the server, and the user owning it."""

    host: str
    port: int
    name: str
    user: str
    password: str

    def env(self) -> dict[str, str]:
        """The variables deploy/dagster.yaml reads."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_DB": self.name,
            "DAGSTER_PG_USERNAME": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
        }

    def url(self) -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{self.name}"


class PostgresServer:
    """A PostgreSQL cluster of its own: ``initdb`` into a temporary folder, then
    ``postgres`` listening on 127.0.0.1 only (no Unix socket), password
    authentication (scram) for every connection."""

    SUPERUSER = "ragproof"

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.port = free_port()
        self.password = secrets.token_hex(12)
        self._as_postgres = os.geteuid() == 0
        # Not under TMPDIR, which may be a folder only root can enter.
        shared = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
        self._folder = Path(tempfile.mkdtemp(prefix="ragproof-pg-", dir=shared))
        self._proc: subprocess.Popen | None = None
        self._databases = 0

    def _run_as(self) -> dict:
        if not self._as_postgres:
            return {}
        user = pwd.getpwnam("postgres")
        return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}

    def start(self) -> PostgresServer:
        data, pwfile = self._folder / "data", self._folder / "pw"
        pwfile.write_text(self.password + "\n", encoding="utf-8")
        if self._as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self._folder, user.pw_uid, user.pw_gid)
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        subprocess.run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(data),
                "-U",
                self.SUPERUSER,
                "--pwfile",
                str(pwfile),
                "--auth",
                "scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
            **self._run_as(),
        )
        self._proc = subprocess.Popen(
            [
                str(self.bin / "postgres"),
                "-D",
                str(data),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-k",
                "",
                # A test server: nothing it holds must outlive it.
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self._folder / "server.log", "wb"),  # noqa: SIM115
            **self._run_as(),
        )
        wait_for_port(self.port, self._proc, "postgres")
        return self

    def admin(self, sql: str, database: str = "postgres") -> None:
        """Run ``sql`` as the superuser (autocommit: CREATE DATABASE needs it)."""
        import psycopg2

        conn = psycopg2.connect(
            host="127.0.0.1",
            port=self.port,
            user=self.SUPERUSER,
            password=self.password,
            dbname=database,
            connect_timeout=30,
        )
        try:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(sql)
        finally:
            conn.close()

    def new_database(self) -> PostgresDatabase:
        """A new database and a user of its own owning it (not a superuser)."""
        self._databases += 1
        name = f"dagster_{self._databases}_{secrets.token_hex(3)}"
        password = secrets.token_hex(12)
        self.admin(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        self.admin(f"CREATE DATABASE {name} OWNER {name}")
        return PostgresDatabase("127.0.0.1", self.port, name, name, password)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            # SIGINT: PostgreSQL's fast shutdown.
            self._proc.send_signal(2)
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


class RedisServer:
    """``redis-server`` on 127.0.0.1 and a free port, nothing saved to disk."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceMissing(f"no redis-server on the PATH: {INSTALL}")
        self.binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._folder = Path(tempfile.mkdtemp(prefix="ragproof-redis-"))
        self._proc: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        self._proc = subprocess.Popen(
            [
                self.binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self._folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self._proc, "redis-server")
        return self

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
