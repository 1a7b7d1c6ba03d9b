"""`ragproof run` shows a progress bar while cases run, when a person is watching:
on a terminal there is a bar; through a pipe (CI, scripts) there is none."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import subprocess
import termios

from tests.support.cli import RAGPROOF, REPO, cli_env


def _slow_run(tmp_path):
    dataset = tmp_path / "slow.jsonl"
    dataset.write_text(
        "".join(json.dumps({"id": f"s{i}", "question": f"q{i}?"}) + "\n" for i in range(20))
    )
    config = tmp_path / "slow.toml"
    config.write_text(
        '[run]\nconcurrency = 4\n[adapter]\ntarget = "tests.support.slow_adapter:SlowAdapter"\n'
        "options = { delay_s = 0.2 }\n"
    )
    return ["run", "--dataset", str(dataset), "--config", str(config)]


def _run_on_a_terminal(args: list[str]) -> tuple[int, str]:
    primary, secondary = pty.openpty()

    def become_terminal_session() -> None:
        os.setsid()
        fcntl.ioctl(secondary, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [str(RAGPROOF), *args],
        cwd=REPO,
        env=cli_env(),
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        preexec_fn=become_terminal_session,
    )
    os.close(secondary)
    output = b""
    while True:
        ready, _, _ = select.select([primary], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(primary, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not data:
            break
        output += data
    os.close(primary)
    return proc.wait(timeout=60), output.decode("utf-8", "replace")


def test_a_terminal_gets_a_progress_bar(tmp_path):
    code, output = _run_on_a_terminal(_slow_run(tmp_path))
    assert code == 0, output
    assert "/20 [" in output and "case/s" in output
    # And the summary table after it (its header: these cases score no retrieval metric).
    assert "scored  skipped  n/a  errored" in output


def _run_piped_with_a_terminal(args: list[str]) -> tuple[subprocess.CompletedProcess, str]:
    """Output to pipes while a pty is the controlling terminal, as for `ragproof run | tee log`
    typed in a terminal: the bar would be drawn on /dev/tty, so the pty must stay blank."""
    primary, secondary = pty.openpty()

    def become_terminal_session() -> None:
        os.setsid()
        fcntl.ioctl(secondary, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [str(RAGPROOF), *args],
        cwd=REPO,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        pass_fds=(secondary,),
        preexec_fn=become_terminal_session,
    )
    os.close(secondary)
    drawn = b""

    def drain_terminal(wait_s: float) -> None:
        nonlocal drawn
        while select.select([primary], [], [], wait_s)[0]:
            try:
                data = os.read(primary, 65536)
            except OSError:  # every holder of the terminal has exited
                return
            if not data:
                return
            drawn += data

    stdout, stderr = proc.communicate(timeout=120)
    drain_terminal(0.5)
    os.close(primary)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return done, drawn.decode("utf-8", "replace")


def test_a_pipe_gets_no_progress_bar_even_with_a_terminal_at_hand(tmp_path):
    done, drawn = _run_piped_with_a_terminal(_slow_run(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "scored  skipped  n/a  errored" in done.stdout
    assert drawn == ""
    assert "case/s" not in done.stdout + done.stderr
