"""The results browser holds against hostile requests (issue 39, item 5).

In-process (Starlette's test client over the real app and a real store): a request
naming two `Host`s is 400, query numbers past any bound and label bodies nested
thousands deep are 4xx, and storing a label reads no label file however many the run
has. As a user starts it (`ragproof serve`, raw sockets): a connection that sends no
request, or its headers a byte at a time, is closed, and 200 idle connections do not
keep a request from being answered."""

from __future__ import annotations

import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from ragproof_core.store.run_store import RunStore
from ragproof_serve.app import MAX_QUERY_NUMBER, Browser, build_app
from ragproof_serve.server import HEADERS_TIMEOUT_S
from tests.support.cli import cli_env
from tests.support.judged_run import CASE_IDS, RELEVANCE, write_judged_run
from tests.support.served import ServedApp

PORT = 8765
OWN = f"http://127.0.0.1:{PORT}"


class CountingStore(RunStore):
    """A store that counts the label files it reads."""

    label_files_read = 0

    def read_labels(self, paths):
        CountingStore.label_files_read += len(paths)
        return super().read_labels(paths)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> CountingStore:
    store = CountingStore(tmp_path_factory.mktemp("store"))
    write_judged_run(store)
    return store


@pytest.fixture
def client(store) -> TestClient:
    return TestClient(build_app(Browser(store), PORT), base_url=OWN)


def _label(case_id: str, annotator: str, score: float = 1.0) -> dict:
    return {
        "run_id": "judged",
        "case_id": case_id,
        "metric": RELEVANCE,
        "score": score,
        "annotator": annotator,
        "sample": len(CASE_IDS),
        "seed": 0,
        "metric_filter": RELEVANCE,
    }


def test_two_host_headers_are_refused(client) -> None:
    done = client.get("/runs", headers=[("host", "evil.example"), ("host", f"127.0.0.1:{PORT}")])
    assert (done.status_code, done.text) == (400, "refused: more than one Host header")
    done = client.get("/runs", headers=[("host", f"127.0.0.1:{PORT}"), ("host", "evil.example")])
    assert done.status_code == 400
    assert client.get("/runs").status_code == 200


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "/runs/judged/cases?offset=99999999999999999999",
            f"offset must be at most {MAX_QUERY_NUMBER}",
        ),
        ("/runs/judged/cases?offset=-1", "offset must be at least 0, got -1"),
        ("/runs/judged/cases?offset=%C2%B2", "offset must be a whole number"),
        ("/label/judged?sample=99999999999999999999999", "sample must be at most"),
        ("/label/judged?seed=1e9", "seed must be a whole number"),
    ],
)
def test_query_numbers_past_any_bound_are_400(client, path, message) -> None:
    done = client.get(path)
    assert done.status_code == 400
    assert message in done.text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[" * 3000 + "]" * 3000, "the body must be a JSON object: nested deeper than 64 levels"),
        ('{"a": ' * 2000 + "1" + "}" * 2000, "nested deeper than 64 levels"),
        ('{"run_id": "judged", "score": NaN}', "NaN is not a JSON number"),
        ("\xff{}", "the body must be a JSON object"),
    ],
    ids=["arrays", "objects", "nan", "not-utf8"],
)
def test_hostile_label_bodies_are_400(client, body, message) -> None:
    raw = body.encode("latin-1") if body.startswith("\xff") else body.encode()
    done = client.post("/api/labels", content=raw, headers={"origin": OWN})
    assert done.status_code == 400
    assert message in done.json()["error"]


def test_storing_a_label_reads_no_label_file(client, store) -> None:
    # 320 labels from 16 threads took two minutes when each re-read every label stored.
    assert client.get("/label/judged").status_code == 200  # the page reads the labels once
    read_before = CountingStore.label_files_read
    annotators = [f"ann{i}" for i in range(8)]
    jobs = [(case_id, who) for who in annotators for case_id in CASE_IDS[:10]]

    def post(job):
        case_id, who = job
        return client.post("/api/labels", json=_label(case_id, who), headers={"origin": OWN})

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(post, jobs))
    assert [a.status_code for a in answers] == [200] * len(jobs)
    assert CountingStore.label_files_read == read_before  # no label file read back
    tallies = [a.json()["tally"][0]["labels"] for a in answers]
    assert max(tallies) == len(jobs) and sorted(set(tallies))[0] >= 1
    # A page load then reads only the files it has not read: none here, all were its own.
    assert client.get("/runs/judged").status_code == 200
    assert CountingStore.label_files_read == read_before
    assert len(store.labels("judged")) == len(jobs)  # every one stored


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(HEADERS_TIMEOUT_S * 6)  # generous: the machine may be loaded
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_idle_and_trickling_connections_are_closed_and_starve_nobody(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "store")
    write_judged_run(store)
    env = cli_env(RAGPROOF_STORE=str(store.layout.root))
    with ServedApp("serve", "--port", "0", env=env) as app:
        idle = [_connect(app.port) for _ in range(200)]
        trickling = _connect(app.port)
        trickling.sendall(b"GET /runs HTTP/1.1\r\nHo")  # and never the rest
        sock = _connect(app.port)
        sock.sendall(f"GET /runs HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\n\r\n".encode())
        assert sock.recv(12) == b"HTTP/1.1 200"  # answered while 200 connections idle
        sock.close()
        # Each idle connection is closed once HEADERS_TIMEOUT_S pass without a request.
        closed = [False] * len(idle)

        def wait(index: int) -> None:
            closed[index] = _closed_by_server(idle[index])

        waiters = [threading.Thread(target=wait, args=(i,)) for i in range(len(idle))]
        for waiter in waiters:
            waiter.start()
        assert _closed_by_server(trickling)
        for waiter in waiters:
            waiter.join()
        assert all(closed)
        twice = _connect(app.port)
        twice.sendall(
            f"GET / HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1:{app.port}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        assert twice.recv(12) == b"HTTP/1.1 400"
        for sock in (*idle, trickling, twice):
            sock.close()
