"""`ragproof label` and `ragproof serve` refuse bad input in one line, before serving."""

import socket

import pytest

from ragproof_cli import main
from ragproof_core.store.run_store import RunStore
from tests.support.cli import cli_env, ragproof
from tests.support.judged_run import write_judged_run


@pytest.fixture
def store_env(tmp_path, monkeypatch) -> dict[str, str]:
    write_judged_run(RunStore(tmp_path / "store"))
    monkeypatch.setenv("RAGPROOF_STORE", str(tmp_path / "store"))
    return cli_env(RAGPROOF_STORE=str(tmp_path / "store"))


def test_an_unknown_run_is_one_line_and_exit_1(store_env):
    done = ragproof("label", "nope", env=store_env, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == ["ragproof: run 'nope': no such run in the store"]


def test_bad_input_is_refused_before_anything_is_served(store_env, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        cases = {
            ("label", "judged", "--metric", "robustness.abstention"): "robustness.abstention",
            ("label", "judged", "--sample", "0"): "sample must be at least 1",
            ("label", "judged", "--annotator", " "): "annotator must be a non-empty name",
            ("serve", "--port", str(port)): f"cannot listen on 127.0.0.1:{port}",
            ("serve", "--port", "70000"): "a port is 0 to 65535",
        }
        for args, reason in cases.items():
            assert main(list(args)) == 1, args
            out, err = capsys.readouterr()
            assert out == "", args
            lines = err.splitlines()
            assert len(lines) == 1 and lines[0].startswith("ragproof: "), (args, err)
            assert reason in lines[0], (args, lines[0])
