"""`ragproof generate attacks` as a user runs it (CONTRACT section 23): the installed
command in a subprocess, its files, its one-line errors."""

from __future__ import annotations

from tests.conftest import REPO
from tests.support.cli import ragproof

CORPUS = REPO / "data" / "corpus" / "passages.jsonl"


def attacks(corpus, out_corpus, out, *extra):
    return ragproof(
        "generate", "attacks", "--corpus", str(corpus), "--out-corpus", str(out_corpus),
        "--out", str(out), *extra,
    )  # fmt: skip


def test_the_command_writes_the_same_files_for_the_same_seed(tmp_path):
    first = attacks(CORPUS, tmp_path / "c1.jsonl", tmp_path / "a1.jsonl", "--count", "4")
    assert first.returncode == 0, first.stderr
    assert first.stdout == (
        f"wrote 270 chunks to {tmp_path / 'c1.jsonl'} (266 copied, 2 injection and 2 poisoning "
        f"planted) and 4 cases to {tmp_path / 'a1.jsonl'} (seed 0)\n"
    )
    again = attacks(CORPUS, tmp_path / "c2.jsonl", tmp_path / "a2.jsonl", "--count", "4")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "c1.jsonl").read_bytes() == (tmp_path / "c2.jsonl").read_bytes()
    assert (tmp_path / "a1.jsonl").read_bytes() == (tmp_path / "a2.jsonl").read_bytes()


def test_bad_input_is_one_line_and_exit_1_and_writes_nothing(tmp_path):
    out_corpus, out = tmp_path / "attacked.jsonl", tmp_path / "attacks.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n', encoding="utf-8")
    for args, message in (
        ((CORPUS, out_corpus, out, "--count", "0"), "ragproof: --count must be at least 1, got 0"),
        ((bad, out_corpus, out), f"ragproof: {bad}:2: 'text' must be a non-empty string"),
        (
            (CORPUS, CORPUS, out),
            "ragproof: --corpus, --out-corpus and --out must be three different files",
        ),
        (
            (tmp_path / "absent.jsonl", out_corpus, out),
            f"ragproof: {tmp_path}/absent.jsonl:0: no such file",
        ),
    ):
        done = attacks(*args)
        assert (done.returncode, done.stderr.strip()) == (1, message)
    assert not out_corpus.exists() and not out.exists()
