"""``dg scaffold defs ragproof_assets.EvaluationSuite PATH``: a ``defs.yaml`` that loads
as written, every attribute explained, and a three-case starter dataset beside it
(a question the demo corpus answers, one it cannot, a prompt injection), so the
suite evaluates ragproof's demo pipeline until ``config_file`` names yours."""

from __future__ import annotations

import re
from importlib import resources

import dagster as dg

STARTER_CASES = "starter_cases.jsonl"
DATASET = "cases.jsonl"

DEFS_YAML = """\
type: {type_name}

attributes:
  # The suite: [A-Za-z0-9_]+. Its assets are ragproof/{name}/eval_dataset ... run_summary.
  name: {name}
  # The cases to evaluate; relative paths are from this file's folder.
  dataset: {dataset}
  # A ragproof.toml: the adapter that calls your pipeline, [run], [judge], [gate].
  # Without one, ragproof's demo pipeline answers.
  # config_file: ragproof.toml
  # metrics: [retrieval.recall_at_k, generation.citation_validity]
  # Your own asset keys the evaluation depends on, such as your vector index.
  # deps: [vector_index]
  # on_deps (one evaluation after any dep is materialized), a cron string, or none.
  automation: none
  # The ragproof store (default: $RAGPROOF_STORE, else data/store).
  # store: data/store
"""


def suite_name(folder_name: str) -> str:
    """A suite name from the folder scaffolded: its characters outside [A-Za-z0-9_] as _."""
    return re.sub(r"[^A-Za-z0-9_]", "_", folder_name).strip("_") or "suite"


class EvaluationSuiteScaffolder(dg.Scaffolder):
    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        folder = request.target_path
        folder.mkdir(parents=True, exist_ok=True)
        starter = resources.files(__package__).joinpath(STARTER_CASES).read_text("utf-8")
        (folder / DATASET).write_text(starter, encoding="utf-8")
        (folder / "defs.yaml").write_text(
            DEFS_YAML.format(
                type_name=request.type_name, name=suite_name(folder.name), dataset=DATASET
            ),
            encoding="utf-8",
        )
