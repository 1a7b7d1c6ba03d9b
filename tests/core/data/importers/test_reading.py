"""Shared source reading: line numbers of non-UTF-8 bytes, whatever the reader's buffering."""

from __future__ import annotations

import pytest

from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.ragas import import_ragas
from ragproof_core.data.importers.trec import import_trec


def _with_bad_byte_on_line(path, line: int, header: bytes = b"") -> None:
    # Far more than one read-ahead block of good lines first.
    good = b"".join(b"q1 0 d%d 1\n" % i for i in range(line - 1 - header.count(b"\n")))
    path.write_bytes(header + good + b"q1 0 d\xff 1\n")


def test_a_bad_byte_is_reported_on_its_own_line_in_a_line_file(tmp_path):
    qrels = tmp_path / "qrels.txt"
    _with_bad_byte_on_line(qrels, 5000)
    with pytest.raises(DatasetError) as info:
        import_trec(qrels, tmp_path / "run.txt")
    assert str(info.value) == f"{qrels}:5000: not valid UTF-8"


def test_a_bad_byte_is_reported_on_its_own_line_in_a_csv(tmp_path):
    path = tmp_path / "d.csv"
    _with_bad_byte_on_line(path, 4000, header=b"user_input\n")
    with pytest.raises(DatasetError) as info:
        import_ragas(path)
    assert str(info.value) == f"{path}:4000: not valid UTF-8"
