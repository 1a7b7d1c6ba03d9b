"""The whole run against the physical floor (issue 24, item 5).

On the same recorded 100,000 cases (``_synthetic.write_recorded_run``), each a
fresh child process timed from its start, start-up included:

1. the floor: one plain Python process reads the dataset and the recorded
   outputs, parses every line with ``json.loads`` and scores the four original
   retrieval metrics with pytrec_eval (``P_5``, ``recall_5``, ``recip_rank``,
   ``ndcg_cut_5``) on each qa case with a recorded retrieval; nothing is
   validated or stored;
2. ``ragproof run --shards 2 --metrics`` the four retrieval metrics (fresh store
   and Dagster home): validation, Dagster, the store, the report;
3. the same command again on that store and Dagster home, as a user's second
   run finds them (Dagster's SQLite tables exist; the store holds one run);
4. the command with every default metric selected (no ``--metrics``).

The floor runs before and after the commands and the lower of the two is used,
so a load spike during one floor run does not flatter the commands. ``--rounds
N`` repeats the three commands N times, each round between two floor runs, and
adds a table of every round's ratios and their median: the host's speed drifts
from one minute to the next by more than a change saves. Target:
the four-metric command at most 2x the floor. The machine is shared: the
1-minute load is printed beside every figure.

``--against PATH`` adds, in every round, the four-metric command of an earlier checkout
at PATH (its code on ``PYTHONPATH``, fresh and again), so two versions are compared side
by side against the same floors.

``python -m benchmarks.run_floor [--cases N] [--rounds N] [--against PATH] [--quick]``;
``--floor DATASET OUTPUTS`` is the floor's child process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._common import (
    PYTHON,
    REPO,
    WORK,
    Benchmark,
    Table,
    check_checkout,
    clean_env,
    count,
    measure_json_command,
    publish,
    seconds,
    verdict,
)
from benchmarks._synthetic import write_recorded_run

BENCHMARK = Benchmark(
    title="The whole run against the floor",
    measures=(
        "`ragproof run --shards 2` on 100,000 recorded cases (the four retrieval metrics; "
        "every default metric) against the floor: one plain Python process reading both "
        "files, `json.loads` on every line and pytrec_eval on the four measures; each a "
        "fresh child timed from its start; the floor before and after; `--rounds N` "
        "repeats the commands N times, each round between two floor runs, and prints the "
        "median ratio."
    ),
    target="four-metric command <= 2x the floor",
    order=60,
    args=("--rounds", "5"),
)

FOUR = (
    "retrieval.precision_at_k",
    "retrieval.recall_at_k",
    "retrieval.mrr",
    "retrieval.ndcg_at_k",
)
MEASURES = ("P_5", "recall_5", "recip_rank", "ndcg_cut_5")
TARGET_RATIO = 2.0


def floor(dataset: str, outputs: str) -> dict:
    """Read, parse and score with pytrec_eval: the least a run of this input can do."""
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    with open(dataset, encoding="utf-8") as lines:
        for line in lines:
            case = json.loads(line)
            relevant = case.get("expected_source_ids")
            if case.get("kind", "qa") == "qa" and relevant:
                qrels[case["id"]] = dict.fromkeys(relevant, 1)
    run: dict[str, dict[str, float]] = {}
    with open(outputs, encoding="utf-8") as lines:
        for line in lines:
            output = json.loads(line)
            chunks = output.get("retrieve")
            if chunks is None or output["case_id"] not in qrels:
                continue
            ranking: dict[str, float] = {}
            for rank, chunk in enumerate(chunks):
                # First occurrence wins, scores strictly decreasing: pytrec's order is ours.
                ranking.setdefault(chunk["id"], float(len(chunks) - rank))
            run[output["case_id"]] = ranking
    judged = {case_id: qrels[case_id] for case_id in run}
    scores = pytrec_eval.RelevanceEvaluator(judged, set(MEASURES)).evaluate(run)
    means = {m: sum(s[m] for s in scores.values()) / len(scores) for m in MEASURES}
    return {"scored": len(scores), "means": means}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="2,000 cases")
    parser.add_argument("--emit", type=Path)
    parser.add_argument("--floor", nargs=2, metavar=("DATASET", "OUTPUTS"))
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds side by side, each between two floors"
    )
    parser.add_argument("--against", type=Path, help="an earlier checkout, measured in turn")
    args = parser.parse_args(argv)
    if args.floor:
        print(json.dumps(floor(*args.floor)))
        return
    n = 2_000 if args.quick else args.cases
    if args.against:
        args.against = check_checkout(args.against)
    recorded = write_recorded_run(WORK / f"shards-{n}", n)
    floor_cmd = [PYTHON, "-m", "benchmarks.run_floor", "--floor",
                 str(recorded.dataset), str(recorded.outputs)]  # fmt: skip
    home = Path(tempfile.mkdtemp(prefix="run-floor-", dir=WORK))

    def command(name: str, *extra: str, code: Path | None = None) -> dict:
        env = clean_env(
            RAGPROOF_STORE=str(home / name / "store"), DAGSTER_HOME=str(home / name / "dagster")
        )
        if code is not None:
            env["PYTHONPATH"] = str(code)
        return measure_json_command(recorded.run_command("--shards", "2", *extra), env, REPO)

    rounds = []
    try:
        floors = [measure_json_command(floor_cmd, clean_env(), REPO)]
        for number in range(1, args.rounds + 1):
            four = command(f"four-{number}", "--metrics", ",".join(FOUR))
            again = command(f"four-{number}", "--metrics", ",".join(FOUR))
            every = command(f"every-{number}")
            against = []
            if args.against:
                metrics = ("--metrics", ",".join(FOUR))
                against.append(command(f"against-{number}", *metrics, code=args.against))
                against.append(command(f"against-{number}", *metrics, code=args.against))
            floors.append(measure_json_command(floor_cmd, clean_env(), REPO))
            rounds.append(Round(number, floors[-2], floors[-1], four, again, every, *against))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    tables = [round_table(r, n, recorded.megabytes, args.against) for r in rounds]
    if len(rounds) > 1:
        tables.append(rounds_summary(rounds, args.against))
    fresh = statistics.median(r.ratio(r.four) for r in rounds)
    again = statistics.median(r.ratio(r.again) for r in rounds)
    headline = f"{fresh:.2f}x the floor (fresh home), {again:.2f}x (same home)"
    if args.against:
        before = statistics.median(r.ratio(r.against) for r in rounds)
        headline += f"; {args.against.name}: {before:.2f}x"
    publish(tables, args.emit, headline=f"median of {len(rounds)}: {headline}")


@dataclass(frozen=True)
class Round:
    """One round side by side: the floor before and after, and the three commands."""

    number: int
    floor_before: dict
    floor_after: dict
    four: dict
    again: dict
    every: dict
    # The earlier checkout's four-metric command (--against), fresh and again.
    against: dict | None = None
    against_again: dict | None = None

    @property
    def floor(self) -> dict:
        # The lower of the two, so a load spike during one floor run does not flatter
        # the commands.
        return min(self.floor_before, self.floor_after, key=lambda m: m["wall_s"])

    def ratio(self, command: dict) -> float:
        return command["wall_s"] / self.floor["wall_s"]


def round_table(r: Round, n: int, megabytes: float, against: Path | None = None) -> Table:
    rows = [
        [f"floor: read + `json.loads` + pytrec_eval, one process ({when})",
         seconds(m["wall_s"]), seconds(m["cpu_s"]), f"{m['rss_mb']:,.0f} MB",
         "-", f"{m['load']:.2f}"]
        for when, m in (("before", r.floor_before), ("after", r.floor_after))
    ]  # fmt: skip
    commands = [
        ("`ragproof run --shards 2 --metrics` (the four retrieval metrics)", r.four),
        ("the same again, on that store and Dagster home", r.again),
        ("`ragproof run --shards 2` (every default metric)", r.every),
    ]
    if r.against is not None and r.against_again is not None:
        commands += [
            (f"the four-metric command of {against}", r.against),
            (f"the same again ({against})", r.against_again),
        ]
    for label, m in commands:
        rows.append(
            [label, seconds(m["wall_s"]), seconds(m["cpu_s"]), f"{m['rss_mb']:,.0f} MB",
             f"{r.ratio(m):.2f}x", f"{m['load']:.2f}"]
        )  # fmt: skip
    ratio, ratio_again = r.ratio(r.four), r.ratio(r.again)
    same = all(
        abs(r.four["out"]["metrics"][name]["mean"] - r.floor["out"]["means"][measure]) < 1e-12
        for name, measure in zip(FOUR, MEASURES, strict=True)
    )
    return Table(
        f"The whole run against the floor: {count(n)} recorded cases "
        f"({megabytes:,.0f} MB of input)" + (f", round {r.number}" if r.number > 1 else ""),
        [
            "process",
            "wall",
            "CPU",
            "peak RSS (the command's own process)",
            "vs floor",
            "1-min load before",
        ],
        rows,
        [
            f"Four-metric command / floor: {ratio:.2f}x (target <= {TARGET_RATIO:g}x): "
            f"{verdict(ratio <= TARGET_RATIO)} with a fresh store and Dagster home; "
            f"{ratio_again:.2f}x: {verdict(ratio_again <= TARGET_RATIO)} on the same home again. "
            "'vs floor' divides by the faster of the two floor runs beside it.",
            f"The command's four means equal pytrec_eval's over the same cases: {same} "
            f"({count(r.floor['out']['scored'])} cases scored).",
            "Every figure is a fresh child process timed from its start (imports included); "
            "CPU is the user + system time of that process alone: the command's step "
            "processes are children of its forkserver, which it does not wait for, so they "
            "are not counted. The floor validates and stores nothing.",
            "The machine may be shared: the 1-minute load is beside each figure, and ratios "
            "come from runs side by side.",
        ],
    )


def rounds_summary(rounds: Sequence[Round], against: Path | None = None) -> Table:
    """The ratios of every round and their median: the host's speed drifts between
    rounds by more than one change saves, so one round decides nothing."""

    def ratios(r: Round) -> list[float]:
        found = [r.ratio(r.four), r.ratio(r.again), r.ratio(r.every)]
        if r.against is not None and r.against_again is not None:
            found += [r.ratio(r.against), r.ratio(r.against_again)]
        return found

    rows = [[str(r.number), seconds(r.floor["wall_s"]), *(f"{x:.2f}x" for x in ratios(r))]
            for r in rounds]  # fmt: skip
    medians = [statistics.median(column) for column in zip(*map(ratios, rounds), strict=True)]
    rows.append(["median", "-", *(f"{x:.2f}x" for x in medians)])
    fresh, again = medians[0], medians[1]
    columns = ["round", "floor", "four metrics, fresh home", "the same again",
               "every default metric"]  # fmt: skip
    if against is not None:
        columns += [f"four metrics, {against}", f"the same again, {against}"]
    return Table(
        f"The whole run against the floor: {len(rounds)} rounds side by side",
        columns,
        rows,
        [
            f"Median four-metric command / floor: {fresh:.2f}x with a fresh store and Dagster "
            f"home (target <= {TARGET_RATIO:g}x): {verdict(fresh <= TARGET_RATIO)}; "
            f"{again:.2f}x on the same home again: {verdict(again <= TARGET_RATIO)}.",
        ],
    )


if __name__ == "__main__":
    sys.exit(main())
