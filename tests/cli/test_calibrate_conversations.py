"""`ragproof calibrate --sample`, `calibrate --run --labels` and `ragproof probe` on a run
with conversation turns (CONTRACT sections 12, 16 and 22, issue 21): a real judged run
over the fixture tests/fixtures/calibrate_conversations (README.md there), then the
commands.

The test's judge marks a sentence naming "3 May" supported only when a user message of
the request's history says it, so c1#2's groundedness is 1 only if its judge prompt
carried turn 1. Groundedness judge scores: s1 1, c1#1 1, c1#2 1, c2#1 0.5, c2#2 1,
c2#3 0.5, s2 0.5 (N = 7); knowledge retention: c1 1, c2 0.5.

Labels: groundedness c1#2 = 1, c2#3 = 0, s2 = 0.5, so y - f = [0, -0.5, 0] over L and
f = [1, 1, 0.5, 1] over U: ppi_mean = 0.875 - 1/6, half width
1.96 * sqrt(var_U(f) / 4 + var_L(y - f) / 3) with var_U(f) = 0.0625 and
var_L(y - f) = 1/12; knowledge retention c1 = 1 (n = 1: no PPI figures).

Probe of groundedness (every chunk list holds one chunk: no position probe): padding
with the filler's 3 supported sentences moves 0.5 to 4/5 (band 1) for c2#1, c2#3 and s2;
self_reference moves 0.5 to 2/3 (band 0.5): nothing. c1#2 asked without its history
would be 0.5 and move too.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from ragproof_core.calibration.label_queue import LabelQueue
from ragproof_core.present.label_page import item_view
from ragproof_core.store.labels import LabelError
from ragproof_core.store.run_store import RunStore
from tests.support.cli import ragproof
from tests.support.judge_server import JudgeServer, ReceivedRequest, default_content
from tests.support.runs import Runs

pytestmark = [
    pytest.mark.slow,  # a real `ragproof run` subprocess
    pytest.mark.xdist_group(__name__),  # one worker makes the shared runs, once
]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "calibrate_conversations"
GROUNDEDNESS = "generation.groundedness"
RETENTION = "conversation.knowledge_retention"


def history_aware(request: ReceivedRequest) -> str:
    """The default replies, but a groundedness claim naming "3 May" is supported only
    when the user said it in the request's history."""
    if request.prompt != "groundedness":
        return default_content(request)
    said = any(m["role"] == "user" and "3 May" in m["text"] for m in request.messages())
    answer = next(b["text"] for b in request.blocks() if b["name"] == "answer")
    claims = [
        {"claim": s, "supported": "UNSUPPORTED" not in s and ("3 May" not in s or said)}
        for s in re.split(r"(?<=[.!?])\s+", answer.strip())
    ]
    return json.dumps({"claims": claims})


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    runs = Runs(tmp_path_factory.mktemp("calibrate-conversations"))
    with JudgeServer() as server:
        server.responder = history_aware
        run_id = runs.run_judged(FIXTURE, "ragproof.toml", server.url)
        yield runs, run_id, list(server.requests), server


def test_each_turn_was_judged_with_its_own_history(judged):
    _, _, requests, _ = judged
    grounded = {
        next(b["text"] for b in r.blocks() if b["name"] == "question"): r
        for r in requests
        if r.prompt == "groundedness"
    }
    assert len(grounded) == 7
    # (earlier messages, roles) each turn's groundedness prompt carried; none for s1, s2.
    carried = {q: [(m["role"], m["turn"]) for m in r.messages()] for q, r in grounded.items()}
    assert carried == {
        "What is the warranty period?": [],
        "I bought the kettle on 3 May. What is the refund window?": [],
        "Can I still return it on 1 June?": [("user", 1), ("assistant", 1)],
        "Do you ship abroad?": [],
        "How long does it take?": [("user", 1), ("assistant", 1)],
        "And to the UK?": [("user", 1), ("assistant", 1), ("user", 2), ("assistant", 2)],
        "Can I pay by card?": [],
    }
    retention = [r for r in requests if r.prompt == "knowledge_retention"]
    assert sorted(len(r.messages()) for r in retention) == [4, 6]


def test_the_sample_names_turns_and_shows_what_the_judge_saw(judged, tmp_path):
    runs, run_id, _, _ = judged
    out = tmp_path / "to_label.jsonl"
    done = ragproof("calibrate", "--sample", "7", "--run", run_id, "--out", str(out), env=runs.env)
    assert done.returncode == 0, done.stderr
    lines = {(x["case_id"], x["metric"]): x for x in map(json.loads, out.read_text().splitlines())}
    assert sorted(lines) == sorted(
        [(c, GROUNDEDNESS) for c in ("s1", "c1#1", "c1#2", "c2#1", "c2#2", "c2#3", "s2")]
        + [("c1", RETENTION), ("c2", RETENTION)]
    )
    assert lines[("c1#2", GROUNDEDNESS)] == {
        "case_id": "c1#2",
        "metric": GROUNDEDNESS,
        "question": "Can I still return it on 1 June?",
        "answer": "You bought it on 3 May. Yes, 1 June is within 30 days.",
        "history": [
            {"role": "user", "content": "I bought the kettle on 3 May. What is the refund window?"},
            {"role": "assistant", "content": "30 days."},
        ],
        "judge_score": 1.0,  # history-aware: "3 May" is what the user said in turn 1
        "score": None,
    }
    # A first turn and a single case look as they always did: no history key.
    assert "history" not in lines[("c1#1", GROUNDEDNESS)]
    assert set(lines[("s1", GROUNDEDNESS)]) == {
        "case_id", "metric", "question", "answer", "judge_score", "score"
    }  # fmt: skip
    assert [len(lines[(c, GROUNDEDNESS)]["history"]) for c in ("c2#2", "c2#3")] == [2, 4]
    retained = lines[("c2", RETENTION)]
    assert (retained["question"], retained["answer"], retained["judge_score"]) == (
        None,
        None,
        0.5,
    )
    assert [m["content"] for m in retained["conversation"]] == [
        "Do you ship abroad?",
        "Yes, to the EU. UNSUPPORTED We also ship to Japan.",
        "How long does it take?",
        "Five to eight days.",
        "And to the UK?",
        "I FORGOT where you asked about. UNSUPPORTED We ship to Mars.",
    ]


def test_labels_on_turns_and_conversations_give_exact_bias_corrected_means(judged, tmp_path):
    runs, run_id, _, _ = judged
    labels = tmp_path / "labels.jsonl"
    unmatched = [
        {"case_id": "c1#3", "metric": GROUNDEDNESS, "score": 1},  # c1 has two turns
        {"case_id": "c1", "metric": GROUNDEDNESS, "score": 1},  # turns are scored, not c1
    ]
    given = [
        {"case_id": "c1#2", "metric": GROUNDEDNESS, "score": 1},
        {"case_id": "c2#3", "metric": GROUNDEDNESS, "score": 0},
        {"case_id": "s2", "metric": GROUNDEDNESS, "score": 0.5},
        {"case_id": "c1", "metric": RETENTION, "score": 1},
        *unmatched,
    ]
    labels.write_text("".join(json.dumps(x) + "\n" for x in given))
    done = ragproof("calibrate", "--run", run_id, "--labels", str(labels), "--json", env=runs.env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["unmatched"] == unmatched
    by_metric = {m["metric"]: m for m in report["metrics"]}
    assert list(by_metric) == [GROUNDEDNESS, RETENTION]
    grounded = by_metric[GROUNDEDNESS]
    assert (grounded["n_judged"], grounded["n_labelled"]) == (7, 3)
    assert grounded["judge_mean"] == pytest.approx(5.5 / 7)
    ppi_mean = 0.875 - 1 / 6
    half = 1.96 * math.sqrt(0.0625 / 4 + (1 / 12) / 3)
    assert grounded["ppi_mean"] == pytest.approx(ppi_mean)
    assert grounded["ppi_ci"] == pytest.approx(
        [max(0.0, ppi_mean - half), min(1.0, ppi_mean + half)]
    )
    assert grounded["human_mean"] == pytest.approx(0.5)
    retention = by_metric[RETENTION]
    assert (retention["n_judged"], retention["n_labelled"], retention["judge_mean"]) == (
        2,
        1,
        0.75,
    )
    assert (retention["human_mean"], retention["ppi_mean"]) == (None, None)


def _question(request: ReceivedRequest) -> str:
    return next(b["text"] for b in request.blocks() if b["name"] == "question")


def test_probe_re_asks_a_turn_with_the_history_its_run_prompt_carried(judged):
    runs, run_id, run_requests, server = judged
    server.reset()
    env = {
        **runs.env,
        "RAGPROOF_JUDGE_MODEL": "openai/judge-test",
        "RAGPROOF_JUDGE_API_BASE": server.url,
        "OPENAI_API_KEY": "sk-test-dummy",
    }
    args = ("probe", run_id, "--metrics", GROUNDEDNESS, "--sample", "7", "--json")
    done = ragproof(*args, env=env)
    assert done.returncode == 0, done.stderr
    # Each unperturbed question is the run's own request, history and all: the judge
    # cache serves all 7; only the 2 x 7 perturbed ones are sent.
    assert "probe: 14 judge request(s), 7 verdict(s) from the cache" in done.stderr
    rows = {(p["metric"], p["perturbation"]): p for p in json.loads(done.stdout)["probes"]}
    assert [
        (rows[(GROUNDEDNESS, p)]["cases"], rows[(GROUNDEDNESS, p)]["changed"])
        for p in ("verbosity", "position", "self_reference")
    ] == [(7, 3), (0, 0), (7, 0)]
    turn = "Can I still return it on 1 June?"
    asked = [r for r in server.requests if _question(r) == turn]
    (ran,) = [r for r in run_requests if r.prompt == "groundedness" and _question(r) == turn]
    assert len(asked) == 2
    for request in asked:
        assert (
            request.messages()
            == ran.messages()
            == [
                {
                    "role": "user",
                    "turn": 1,
                    "text": "I bought the kettle on 3 May. What is the refund window?",
                },
                {"role": "assistant", "turn": 1, "text": "30 days."},
            ]
        )
        # The run's system part, history rules included (the fence differs by input).
        assert _unfenced(request.system) == _unfenced(ran.system)


def _unfenced(text: str) -> str:
    return re.sub(r"DATA-[0-9a-f]+", "DATA-*", text)


def test_the_labelling_queue_offers_turns_and_leaves_the_conversations_metric_to_files(judged):
    runs, run_id, _, _ = judged
    store = RunStore(runs.store)
    queue = LabelQueue.load(store, run_id, per_metric=7)
    # Every turn and single case, each with its own question; no conversation id.
    assert sorted((i.metric, i.case_id) for i in queue.items) == sorted(
        (GROUNDEDNESS, c) for c in ("s1", "c1#1", "c1#2", "c2#1", "c2#2", "c2#3", "s2")
    )
    (second,) = [i for i in queue.items if i.case_id == "c1#2"]
    assert (second.question, second.judge_score) == ("Can I still return it on 1 June?", 1.0)
    # The page shows a later turn's earlier turns, as its judge read them; a first turn none.
    assert item_view(second)["history"] == [
        {"role": "user", "content": "I bought the kettle on 3 May. What is the refund window?"},
        {"role": "assistant", "content": "30 days."},
    ]
    (first,) = [i for i in queue.items if i.case_id == "c1#1"]
    assert item_view(first)["history"] == []
    with pytest.raises(LabelError, match="'conversation.knowledge_retention' is scored per conv"):
        LabelQueue.load(store, run_id, metric=RETENTION)
