"""When `ragproof run --shards N` starts its step processes' forkserver
(ragproof_cli/step_server.py), and that it ends with the command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragproof_cli.step_server import shards_on_command_line
from tests.assets.expected import RECORDED
from tests.support.cli import RAGPROOF, REPO, cli_env

DATASET = str(RECORDED / "cases.jsonl")
# What the command imports for its own work; the forkserver must be on its way first.
HEAVY = ("dagster", "pyarrow", "pandas", "duckdb", "numpy", "sqlalchemy")

# Runs one command in a fresh interpreter as the `ragproof` script does, noting which of
# HEAVY the process held when it started the forkserver.
STARTED_WITH = (
    "import json, sys\n"
    "from multiprocessing import forkserver\n"
    "from ragproof_cli import main\n"
    "seen = []\n"
    "start = forkserver.ensure_running\n"
    "def noted():\n"
    "    held = {m.split('.')[0] for m in sys.modules}\n"
    "    seen.append(sorted(held & set(sys.argv[2].split(','))))\n"
    "    start()\n"
    "forkserver.ensure_running = noted\n"
    "code = main(sys.argv[3:])\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump(seen, out)\n"
    "sys.exit(code)\n"
)

# Runs a command as the child of a subreaper, so that a process the command leaves
# behind becomes this helper's child; then says which of its children still live
# once the command has ended (their command lines) and what the command printed.
LEFT_BEHIND = (
    "import ctypes, json, os, subprocess, sys, tempfile, time\n"
    "ctypes.CDLL(None, use_errno=True).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER\n"
    "# Into a file, not a pipe: a pipe's reader would wait for every process holding it.\n"
    "with tempfile.TemporaryFile('w+') as err:\n"
    "    code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=err).returncode\n"
    "    err.seek(0)\n"
    "    stderr = err.read()\n"
    "def living():\n"
    "    while True:\n"
    "        try:\n"
    "            pid, _ = os.waitpid(-1, os.WNOHANG)\n"
    "        except ChildProcessError:\n"
    "            return []\n"
    "        if pid == 0:\n"
    "            break\n"
    "    path = f'/proc/self/task/{os.getpid()}/children'\n"
    "    pids = open(path).read().split()\n"
    "    return [open(f'/proc/{p}/cmdline').read().replace(chr(0), ' ') for p in pids]\n"
    "# The kernel ends the forkserver with the command; a moment for its exit to land.\n"
    "deadline = time.monotonic() + 0.5\n"
    "while living() and time.monotonic() < deadline:\n"
    "    time.sleep(0.02)\n"
    "print(json.dumps({'code': code, 'stderr': stderr, 'left': living()}))\n"
)


@pytest.mark.parametrize(
    ("argv", "shards"),
    [
        (["run", "--dataset", "d.jsonl", "--shards", "2"], 2),
        (["--debug", "run", "--shards=3"], 3),
        (["run", "--dataset", "d.jsonl"], None),
        (["run", "--shards", "two"], None),
        (["run", "--shards"], None),
        # Nothing to run: an estimate, or the help text.
        (["run", "--shards", "2", "--dry-run"], None),
        (["run", "--shards", "2", "--help"], None),
    ],
)
def test_the_shards_are_read_from_the_command_line_without_its_parser(argv, shards):
    assert shards_on_command_line(argv) == shards


def _started_with(tmp_path, *argv: str, **env: str) -> tuple[subprocess.CompletedProcess, list]:
    listing = tmp_path / "started.json"
    done = subprocess.run(
        [sys.executable, "-c", STARTED_WITH, str(listing), ",".join(HEAVY), *argv],
        cwd=REPO,
        env=cli_env(
            RAGPROOF_STORE=str(tmp_path / "store"), DAGSTER_HOME=str(tmp_path / "dh"), **env
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, json.loads(listing.read_text())


@pytest.mark.slow
def test_the_forkserver_starts_before_the_command_imports_dagster_arrow_or_pandas(tmp_path):
    # Refused by the config after the forkserver started: the order is what is checked.
    config = tmp_path / "ragproof.toml"
    config.write_text("[run]\nk = 0\n")
    done, seen = _started_with(
        tmp_path, "run", "--dataset", DATASET, "--config", str(config), "--shards", "2"
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"ragproof: {config}: run.k: must be at least 1, got 0\n"
    # Started once, holding none of them; the executor's own start found it running.
    assert seen == [[]]


@pytest.mark.slow
def test_one_shard_a_dry_run_or_another_executor_starts_no_forkserver_early(tmp_path):
    for argv, env in (
        (["run", "--dataset", DATASET, "--shards", "1"], {}),
        (["run", "--dataset", DATASET, "--shards", "2", "--dry-run"], {}),
        (["run", "--dataset", "missing.jsonl", "--shards", "2"], {"RAGPROOF_EXECUTOR": "k8s"}),
    ):
        done, seen = _started_with(tmp_path, *argv, **env)
        assert seen == [], (argv, done.stderr)


@pytest.mark.slow
def test_a_refused_run_leaves_no_process_behind(tmp_path):
    env = cli_env(RAGPROOF_STORE=str(tmp_path / "store"), DAGSTER_HOME=str(tmp_path / "dh"))
    for argv, refusal in (
        # A usage error, while the forkserver is still importing.
        (["--shards", "2", "--k"], "ragproof: run: argument --k: expected one argument\n"),
        # Refused by the dataset's size, as the forkserver may be done importing.
        (["--dataset", DATASET, "--shards", "7"], "ragproof: run.shards: 7 shards for 6 case"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", LEFT_BEHIND, str(RAGPROOF), "run", *argv],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        outcome = json.loads(done.stdout)
        assert outcome["code"] == 1, outcome["stderr"]
        assert outcome["stderr"].startswith(refusal)
        assert outcome["left"] == []
