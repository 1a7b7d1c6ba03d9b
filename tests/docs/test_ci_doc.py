"""docs/ci.md shows the workflow the repository ships, and that workflow calls only
ragproof commands and flags that exist."""

from __future__ import annotations

import re
import shlex

import yaml

from ragproof_cli import build_parser
from tests.conftest import REPO

WORKFLOW = REPO / ".github" / "workflows" / "evaluate.yml"


def test_the_doc_embeds_the_shipped_workflow_verbatim():
    doc = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", doc, re.S).group(1)
    assert block == WORKFLOW.read_text(encoding="utf-8")


def _ragproof_commands(workflow: dict) -> list[list[str]]:
    commands = []
    for step in workflow["jobs"]["evaluate"]["steps"]:
        script = step.get("run", "")
        # Join continued lines; a GitHub expression becomes a placeholder value (or the
        # flag it formats).
        script = script.replace("\\\n", " ")
        script = re.sub(r"\$\{\{[^}\n]*?'(--\w[\w-]*) \{0\}'.*?\}\}", r"\1 X", script)
        script = re.sub(r"\$\{\{.*?\}\}", "0", script)
        for line in script.splitlines():
            match = re.search(r"(?:^\s*|\$\()ragproof (\w.*?)(?:>|\||$)", line)
            if match:
                commands.append(shlex.split(match.group(1)))
    return commands


def test_every_ragproof_call_in_the_workflow_parses():
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    commands = _ragproof_commands(workflow)
    assert [c[0] for c in commands] == ["runs", "run", "check", "report", "compare"]
    parser = build_parser()
    for argv in commands:
        parser.parse_args(argv)  # exits (SystemExit) on an unknown command or flag
    compare = next(c for c in commands if c[0] == "compare")
    assert {"--format", "markdown", "--fail-on-regression", "--margin"} <= set(compare)
