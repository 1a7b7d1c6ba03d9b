"""--cpu-report's figures: a test's processes count, living or ended, and sum by file."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.cpu_usage import CostOfTest, by_file, tree_cpu_seconds

# Busy for 0.3 s of CPU, in a grandchild that its child waits for.
_BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


def test_the_tree_counts_a_living_child_and_a_waited_for_grandchild():
    before = tree_cpu_seconds(os.getpid())
    burner = (
        f"import subprocess, sys, time; subprocess.run([sys.executable, '-c', {_BURN!r}])\n"
        "print('burnt', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", burner], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "burnt\n"
        # The child lives on; its grandchild's CPU is in the child's waited-for figure.
        assert tree_cpu_seconds(os.getpid()) - before >= 0.3
    finally:
        child.kill()
        child.communicate()
    # Ended and waited for by this process: still counted.
    assert tree_cpu_seconds(os.getpid()) - before >= 0.3


def test_costs_sum_by_file_most_cpu_first():
    costs = [
        CostOfTest("a.py::one", 1.0, 2.0),
        CostOfTest("b.py::x", 5.0, 1.0),
        CostOfTest("a.py::two", 0.5, 0.5),
    ]
    assert by_file(costs) == [("b.py", 5.0, 1.0, 1), ("a.py", 1.5, 2.5, 2)]
