"""`ragproof` commands forked from a process that has already imported the command
line, so a test's command does not pay its imports again.

A `ragproof` process spends most of a small run's CPU importing: the command line
(pandas, DuckDB, Arrow), Dagster, and the SQLite storages of the instance, about
4 s of the 5 s a run of six cases takes. The suite starts hundreds of them. Here
one server process per pytest process imports those modules once (the list the
run's own step forkserver preloads, ``execution.step_preload_modules``), then
forks a child per command. The child becomes the command as its own exec would:
stdout and stderr are the test's pipes, the working folder, ``os.environ`` and
``sys.argv`` are the test's, and it runs the installed `ragproof` script itself
as ``__main__`` to the end, so its exit code, its exit handlers and the processes
it starts are those of a fresh process. Nothing is mocked: the same script, the
same code and files, only the imports are shared.

What a fork cannot give a child is read once at import, and the kernel's copy of
the environment (``/proc/self/environ``). So a command is forked only when its
environment differs from the server's in variables that are read when used
(``FORKABLE_VARIABLES``: the store, the Dagster home, the judge, the S3
credentials); any other difference (PYTHONPATH, RAGPROOF_EXECUTOR, which the code
location reads when it loads, a planted secret a test looks for in
``/proc/self/environ``) runs the command by exec as before. So does everything
when the server cannot start (no ``os.pidfd_open``, a thread at import).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import locale
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

# Read by the product when used, never at import: a command whose environment
# differs from the server's only in these can be forked.
FORKABLE_VARIABLES = frozenset(
    {
        "DAGSTER_HOME",
        "RAGPROOF_STORE",
        "RAGPROOF_DEBUG",
        "RAGPROOF_MAX_COST_USD",
        "RAGPROOF_SERVE_URL",
        "RAGPROOF_SUITES",
        "RAGPROOF_TRACES",
        "RAGPROOF_TRACES_CONFIG",
        "RAGPROOF_TRACES_WORKDIR",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "LITELLM_LOCAL_MODEL_COST_MAP",
        "PYTEST_CURRENT_TEST",  # pytest names the running test here; nothing reads it
    }
)
FORKABLE_PREFIXES = ("RAGPROOF_JUDGE_",)
# What the `ragproof` script imports before its first line of work.
SCRIPT_IMPORT = "ragproof_cli"
STEP_MODULES_MODULE = "ragproof_cli.execution"
# Generous: on a machine loaded 10-20 times over, the imports alone took past 120 s, and a
# server not ready in time leaves its whole pytest worker exec-ing every command.
START_TIMEOUT_S = 600.0
_BOOT = "import sys; from tests.support.preloaded_cli import serve; serve(sys.argv[1], sys.argv[2])"


def forkable(name: str) -> bool:
    return name in FORKABLE_VARIABLES or name.startswith(FORKABLE_PREFIXES)


def fixed_part(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a forked command inherits from the server as they were at import."""
    return {name: value for name, value in env.items() if not forkable(name)}


def script_interpreter(script: Path) -> str:
    """The interpreter the script's ``#!`` line names (what its exec would run)."""
    first = script.read_bytes().split(b"\n", 1)[0].decode()
    return first[2:].strip() if first.startswith("#!") else sys.executable


# ---- the server process ----------------------------------------------------


def _preload() -> None:
    importlib.import_module(SCRIPT_IMPORT)
    execution = importlib.import_module(STEP_MODULES_MODULE)
    for name in execution.step_preload_modules():
        importlib.import_module(name)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 2)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            break
        data += more
    return json.loads(data), fds


def _become_command(request: dict, stdout_fd: int, stderr_fd: int) -> None:
    """In the forked child: run the `ragproof` script as a fresh process would.
    Never returns: the script's ``sys.exit`` ends the process."""
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    os.close(stdout_fd)
    os.close(stderr_fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # found again from this TMPDIR
    script = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(script)  # where an exec'd script's folder is
    runpy.run_path(script, run_name="__main__")
    sys.exit(0)


def _close_server_files(selector: selectors.BaseSelector) -> None:
    """In a forked child: let go of the listener and of the other commands'
    connections and process handles, which would otherwise stay open as long as it runs."""
    for key in list(selector.get_map().values()):
        if key.data is None:
            key.fileobj.close()
        else:
            key.data[0].close()
            os.close(key.fd)
    selector.close()


def serve(socket_path: str, ready_fd: str) -> None:
    """The server's loop: fork a command per connection, report its exit code."""
    ready = int(ready_fd)
    _preload()
    if threading.active_count() != 1 or not hasattr(os, "pidfd_open"):
        os.write(ready, b"0")  # forking would not be safe here: the tests exec instead
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    os.write(ready, b"1")
    os.close(ready)
    parent = os.getppid()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    while os.getppid() == parent:  # ends with the pytest process that started it
        for key, _ in selector.select(timeout=1.0):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                request, fds = _receive(conn)
                pid = os.fork()
                if pid == 0:
                    _close_server_files(selector)
                    conn.close()
                    _become_command(request, *fds)
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                selector.register(os.pidfd_open(pid), selectors.EVENT_READ, (conn, pid))
            else:
                conn, pid = key.data
                selector.unregister(key.fileobj)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                code = os.waitstatus_to_exitcode(status)
                conn.sendall(json.dumps({"returncode": code}).encode() + b"\n")
                conn.close()


# ---- the test's side -------------------------------------------------------


def _text(data: bytes) -> str:
    """Decoded as ``subprocess.run(text=True)`` decodes a pipe."""
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


class PreloadedCommands:
    """One server process for this pytest process, started on first use."""

    def __init__(self, script: Path, cwd: Path, env: Mapping[str, str]) -> None:
        self.script = script
        self.fixed = fixed_part(env)
        self.folder = tempfile.mkdtemp(prefix="ragproof-preloaded-")
        self.socket_path = os.path.join(self.folder, "server")
        read, write = os.pipe()
        self.proc = subprocess.Popen(
            [script_interpreter(script), "-c", _BOOT, self.socket_path, str(write)],
            cwd=cwd,
            env=self.fixed,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=(write,),
        )
        os.close(write)
        atexit.register(self.stop)
        self.ready = self._wait_ready(read)

    def _wait_ready(self, read: int) -> bool:
        with selectors.DefaultSelector() as selector:
            selector.register(read, selectors.EVENT_READ)
            answered = selector.select(timeout=START_TIMEOUT_S)
        ready = bool(answered) and os.read(read, 1) == b"1"
        os.close(read)
        if not ready:
            self.stop()
        return ready

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        if os.path.isdir(self.folder):
            os.rmdir(self.folder)

    def serves(self, env: Mapping[str, str]) -> bool:
        return self.ready and self.proc.poll() is None and fixed_part(env) == self.fixed

    def _start(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path
    ) -> tuple[socket.socket, int, int]:
        """Ask the server for the command: (its connection, stdout's and stderr's read ends)."""
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.socket_path)
            request = {"argv": list(argv), "env": dict(env), "cwd": str(cwd)}
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [out_write, err_write])
        finally:
            os.close(out_write)
            os.close(err_write)
        return conn, out_read, err_read

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float
    ) -> subprocess.CompletedProcess:
        """Like ``subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
        text=True, timeout=timeout)``, the command forked from the server."""
        conn, out_read, err_read = self._start(argv, env, cwd)
        return self._collect(list(argv), conn, out_read, err_read, timeout)

    def popen(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> ForkedProcess:
        """Like ``subprocess.Popen(argv, cwd=cwd, env=env, stdout=PIPE, stderr=PIPE,
        text=True)``, the command forked from the server."""
        conn, out_read, err_read = self._start(argv, env, cwd)
        return ForkedProcess(list(argv), conn, out_read, err_read)

    def _collect(
        self, argv: list[str], conn: socket.socket, out_read: int, err_read: int, timeout: float
    ) -> subprocess.CompletedProcess:
        chunks: dict[int, list[bytes]] = {out_read: [], err_read: []}
        replies = b""
        pid = returncode = None
        deadline = time.monotonic() + timeout
        timed_out = False
        with selectors.DefaultSelector() as selector:
            for fd in (out_read, err_read, conn.fileno()):
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                if returncode is not None and timed_out:
                    break  # killed: like subprocess.run, do not wait for its children's pipes
                left = deadline - time.monotonic()
                if left <= 0 and not timed_out and pid is not None:
                    timed_out = True
                    os.kill(pid, signal.SIGKILL)
                for key, _ in selector.select(timeout=max(left, 0) if not timed_out else 1.0):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fd)
                    elif key.fd == conn.fileno():
                        replies += data
                        lines = [json.loads(line) for line in replies.splitlines()]
                        pid = next((r["pid"] for r in lines if "pid" in r), pid)
                        returncode = next(
                            (r["returncode"] for r in lines if "returncode" in r), returncode
                        )
                        if returncode is not None:
                            selector.unregister(key.fd)
                    else:
                        chunks[key.fd].append(data)
        conn.close()
        os.close(out_read)
        os.close(err_read)
        stdout = _text(b"".join(chunks[out_read]))
        stderr = _text(b"".join(chunks[err_read]))
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout, output=stdout, stderr=stderr)
        assert returncode is not None, f"the preloaded server lost {argv}"
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)


class ForkedProcess:
    """A command forked by the server, driven as a ``subprocess.Popen`` with text
    pipes is: ``stdout``/``stderr``, ``pid``, ``poll``, ``wait``, ``communicate``,
    ``send_signal``/``terminate``/``kill`` and ``returncode`` (negative: the signal
    that ended it). It is the server's child, not this process's: the server reports
    its end on the connection, and signals go through a pidfd, so none can reach a
    process that took its pid after it ended."""

    def __init__(
        self,
        args: list[str],
        conn: socket.socket,
        out_read: int,
        err_read: int,
    ) -> None:
        self.args = args
        self.conn = conn
        encoding = locale.getpreferredencoding(False)
        self.stdout = open(out_read, encoding=encoding)  # noqa: SIM115 (a pipe, as Popen's)
        self.stderr = open(err_read, encoding=encoding)  # noqa: SIM115
        self.returncode: int | None = None
        self._replies = b""
        self._readers: list[threading.Thread] = []
        self._output: dict[str, str] = {}
        self.pid = self._reply(None)["pid"]
        try:
            self._pidfd: int | None = os.pidfd_open(self.pid)
        except ProcessLookupError:  # already ended and reaped
            self._pidfd = None

    def _reply(self, timeout: float | None) -> dict:
        """The server's next line, within ``timeout`` seconds (None: however long it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._replies:
            left = None if deadline is None else max(deadline - time.monotonic(), 0)
            self.conn.settimeout(left)
            try:
                data = self.conn.recv(1 << 16)
            except (TimeoutError, BlockingIOError):  # BlockingIOError: timeout 0
                raise subprocess.TimeoutExpired(self.args, timeout) from None
            assert data, f"the preloaded server lost {self.args}"
            self._replies += data
        line, self._replies = self._replies.split(b"\n", 1)
        return json.loads(line)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._reply(timeout)["returncode"]
            self.conn.close()
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
        return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(timeout=0)
        except subprocess.TimeoutExpired:
            return None

    def send_signal(self, sig: int) -> None:
        if self.poll() is None and self._pidfd is not None:
            # It may end meanwhile: as Popen, nothing to do then.
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _read_all(self, name: str) -> None:
        with getattr(self, name) as pipe:
            self._output[name] = pipe.read()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Both pipes to their end, then the exit; a timeout leaves both to a later call
        (the readers keep what they read), as Popen's."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._readers:
            self._readers = [
                threading.Thread(target=self._read_all, args=(name,), daemon=True)
                for name in ("stdout", "stderr")
                if not getattr(self, name).closed
            ]
            for reader in self._readers:
                reader.start()
        for reader in self._readers:
            reader.join(None if deadline is None else max(deadline - time.monotonic(), 0))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(deadline - time.monotonic(), 0))
        return self._output.get("stdout", ""), self._output.get("stderr", "")

    def __enter__(self) -> ForkedProcess:
        return self

    def __exit__(self, *exc) -> None:
        if not any(reader.is_alive() for reader in self._readers):
            self.stdout.close()
            self.stderr.close()
        self.wait()
