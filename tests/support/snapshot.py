"""Pictures of a folder (byte for byte) and of a Dagster home (as its UI shows it), to
prove that bad input changed nothing."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from ragproof_assets.evaluation.partitions import evaluation_runs


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> content); an absent root is empty."""
    if not root.exists():
        return {}
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# Dagster's storage under a home: its SQLite files change bytes whenever a run is
# created, even one deleted again.
_DAGSTER_STORAGE = ("history/", "storage/", "schedules/")


def dagster_home_as_seen(home: Path) -> dict[str, object]:
    """A Dagster home as a person sees it: the runs its UI lists (id and status), the
    evaluation's partitions, and its other files byte for byte.

    ``ragproof run`` creates the Dagster run before its dataset step reads the dataset
    and the recording; a run that step refuses is deleted again with its partition, so
    the home lists what it listed before, in other SQLite bytes.
    """
    files = tree_bytes(home)
    files = {name: data for name, data in files.items() if not name.startswith(_DAGSTER_STORAGE)}
    if not (home / "history").exists():
        return {"files": files, "runs": [], "partitions": []}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = sorted((run.run_id, run.status.value) for run in instance.get_runs())
        partitions = sorted(instance.get_dynamic_partitions(evaluation_runs.name))
    return {"files": files, "runs": runs, "partitions": partitions}
