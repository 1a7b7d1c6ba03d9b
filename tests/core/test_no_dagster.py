"""ragproof_core is plain Python: importing it, and every module in it, loads no Dagster."""

import subprocess
import sys

SCRIPT = """
import importlib, pkgutil, sys
import ragproof_core
names = [m.name for m in pkgutil.walk_packages(ragproof_core.__path__, "ragproof_core.")]
for name in names:
    importlib.import_module(name)
print(len(names))
print(sorted(m for m in sys.modules if m == "dagster" or m.startswith("dagster")))
"""


def test_importing_ragproof_core_loads_no_dagster_module():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    count, loaded = done.stdout.splitlines()
    assert int(count) > 30  # every module really was imported
    assert loaded == "[]"
