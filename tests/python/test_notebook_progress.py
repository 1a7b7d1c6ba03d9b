"""``ragproof.evaluate`` in a notebook draws tqdm's notebook bar (issue 45): a real
Jupyter kernel (ipykernel, driven by jupyter_client as a notebook server drives it)
runs the call, and what reaches the notebook is read from the kernel's messages."""

from __future__ import annotations

import json
import queue

import pytest
from jupyter_client.manager import start_new_kernel

from tests.support.cli import REPO

CASES = 3
ROWS = [{"id": f"q{i}", "question": f"What is a list {i}?"} for i in range(CASES)]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _messages(client, code: str, timeout_s: float = 600) -> list[dict]:
    """Every iopub message of the cell ``code`` until the kernel is idle again."""
    msg_id = client.execute(code)
    found = []
    while True:
        try:
            message = client.get_iopub_msg(timeout=timeout_s)
        except queue.Empty:
            pytest.fail(f"the kernel sent nothing for {timeout_s} s; so far: {found}")
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        found.append(message)
        state = message["content"].get("execution_state")
        if message["msg_type"] == "status" and state == "idle":
            return found


def test_a_notebook_run_draws_tqdms_notebook_bar_to_the_last_case(tmp_path):
    env = {"RAGPROOF_STORE": str(tmp_path / "store"), "DAGSTER_HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    manager, client = start_new_kernel(cwd=str(REPO), startup_timeout=300)
    try:
        setup = _messages(
            client,
            "import os\n"
            f"os.environ.update({json.dumps(env)})\n"
            "os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'\n"
            "os.environ.pop('RAGPROOF_JUDGE_MODEL', None)\n"
            "import ragproof",
        )
        assert not [m for m in setup if m["msg_type"] == "error"], setup
        cell = _messages(
            client,
            f"run = ragproof.evaluate({ROWS!r}, metrics=['retrieval.recall_at_k'])\n"
            "print(run.status, len(run.outputs))",
        )
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert not [m for m in cell if m["msg_type"] == "error"], cell
    printed = "".join(
        m["content"]["text"]
        for m in cell
        if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
    )
    assert printed.splitlines()[-1] == f"completed {CASES}"
    # tqdm.auto chose the widget: displayed in the cell, its progress a widget model.
    displays = [m for m in cell if m["msg_type"] == "display_data"]
    assert any(WIDGET_VIEW in m["content"]["data"] for m in displays), displays
    states = [
        m["content"]["data"]["state"]
        for m in cell
        if m["msg_type"] in ("comm_open", "comm_msg") and "state" in m["content"]["data"]
    ]
    progress = [s for s in states if s.get("_model_name") == "FloatProgressModel"]
    assert progress and progress[0]["max"] == CASES
    values = [s["value"] for s in states if "value" in s and isinstance(s["value"], int | float)]
    assert values[-1] == CASES
