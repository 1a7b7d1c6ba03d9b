"""docs/python.md's notebook session is true: its ``python`` block run as a doctest
(``...`` standing for what differs from run to run: run ids, temporary folders), from a
folder holding the fixtures it names, against a fresh store."""

from __future__ import annotations

import doctest
import re
import shutil

from tests.conftest import FIXTURES, REPO

DOC = REPO / "docs" / "python.md"


def test_the_notebook_session_runs_as_shown(tmp_path, monkeypatch):
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    for name in ("recorded", "gate"):
        shutil.copytree(FIXTURES / name, tmp_path / "tests" / "fixtures" / name)
    # The session's paths are the repository's; its report lands in this folder.
    monkeypatch.chdir(tmp_path)
    session = doctest.DocTestParser().get_doctest(block, {}, "python.md", str(DOC), 0)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    report: list[str] = []
    results = runner.run(session, out=report.append)
    assert results.failed == 0, "".join(report)
    assert results.attempted == len(session.examples) > 10
    assert (tmp_path / "report.html").is_file()
