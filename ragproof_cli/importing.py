"""`ragproof import`: test sets and recorded outputs from BEIR, TREC, RAGAS and DeepEval files,
and from OpenTelemetry traces (OTLP/JSON with OpenInference attributes).

CONTRACT sections 11 and 18. The work is in ``ragproof_core.data.importers``; this module
parses arguments, writes the files (all or none) and prints what it wrote.
Bad input is one line ``ragproof: PATH:LINE: reason``, exit 1, and no file written.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from ragproof_cli.common import EXIT_OK, UsageError
from ragproof_core.data.dataset import DatasetError
from ragproof_core.data.importers.beir import corpus_chunks, import_beir
from ragproof_core.data.importers.deepeval import import_deepeval
from ragproof_core.data.importers.otlp import import_otlp
from ragproof_core.data.importers.ragas import import_ragas
from ragproof_core.data.importers.trec import import_trec
from ragproof_core.data.importers.writer import write_files
from ragproof_core.masking import Masker, environment_secrets, secrets_line

# The files an importer of cases and recorded outputs writes.
OUTPUTS = ("out", "recorded_out")


def cmd_import_beir(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    _distinct_outputs(
        args,
        ("out", "corpus_out"),
        [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{args.split}.tsv"],
    )
    imported = _bad_input_as_usage(lambda: import_beir(Path(args.dir), args.split))
    files = [(Path(args.out), imported.cases)]
    if args.corpus_out:
        files.append((Path(args.corpus_out), corpus_chunks(Path(args.dir))))
    masker = Masker(environment_secrets())
    counts = _bad_input_as_usage(lambda: _write(files, masker))
    print(f"wrote {counts[0]} cases to {args.out}")
    if args.corpus_out:
        print(f"wrote {counts[1]} corpus chunks to {args.corpus_out}")
    _say_masked(masker)
    return EXIT_OK


def cmd_import_trec(args: argparse.Namespace) -> int:
    _distinct_outputs(args, OUTPUTS, [args.qrels, args.run, args.topics])
    imported = _bad_input_as_usage(
        lambda: import_trec(
            Path(args.qrels), Path(args.run), Path(args.topics) if args.topics else None
        )
    )
    return _write_cases_and_outputs(args, imported)


def cmd_import_ragas(args: argparse.Namespace) -> int:
    _distinct_outputs(args, OUTPUTS, [args.file])
    return _write_cases_and_outputs(args, _bad_input_as_usage(lambda: import_ragas(args.file)))


def cmd_import_deepeval(args: argparse.Namespace) -> int:
    _distinct_outputs(args, OUTPUTS, [args.file])
    return _write_cases_and_outputs(args, _bad_input_as_usage(lambda: import_deepeval(args.file)))


def cmd_import_otlp(args: argparse.Namespace) -> int:
    _distinct_outputs(args, OUTPUTS, args.files)
    if not 0.0 < args.sample <= 1.0:
        raise UsageError(f"--sample: expected a rate in (0, 1], got {args.sample:g}")
    imported = _bad_input_as_usage(lambda: import_otlp(args.files, args.sample, args.seed))
    return _write_cases_and_outputs(args, imported)


def _write_cases_and_outputs(args: argparse.Namespace, imported) -> int:
    files = [(Path(args.out), imported.cases)]
    if args.recorded_out:
        files.append((Path(args.recorded_out), imported.outputs or []))
    masker = Masker(environment_secrets())
    counts = _write(files, masker)
    print(f"wrote {counts[0]} cases to {args.out}")
    if args.recorded_out:
        print(f"wrote {counts[1]} recorded outputs to {args.recorded_out}")
    for note in imported.notes:
        print(f"note: {note}")
    _say_masked(masker)
    return EXIT_OK


def _say_masked(masker: Masker) -> None:
    line = secrets_line(masker.masked)
    if line:
        print(f"note: {line}")


def _write(files, masker: Masker) -> list[int]:
    try:
        return _bad_input_as_usage(lambda: write_files(files, masker))
    except OSError as exc:
        raise UsageError(f"{exc.filename}: cannot write ({exc.strerror or exc})") from None


def _bad_input_as_usage(action):
    """Run ``action``; a rejected input file becomes one ``ragproof: PATH:LINE: reason`` line."""
    try:
        return action()
    except DatasetError as exc:
        raise UsageError(str(exc)) from None


def _distinct_outputs(
    args: argparse.Namespace, names: Sequence[str], inputs: Sequence[str | Path | None]
) -> None:
    """Each file to write is a file of its own: not another output, and not an input
    (writing it would replace what is being read)."""
    read = {_file_key(path): str(path) for path in inputs if path}
    resolved: dict[object, str] = {}
    for name in names:
        path = getattr(args, name)
        if not path:
            continue
        flag, key = f"--{name.replace('_', '-')}", _file_key(path)
        if key in read:
            raise UsageError(f"{flag}: same file as the input {read[key]}")
        if key in resolved:
            raise UsageError(f"{flag}: same file as --{resolved[key].replace('_', '-')}")
        resolved[key] = name


def _file_key(path: str | Path) -> object:
    """What makes two names one file: the same inode (a link, a symlink), else the same
    resolved path (a file not written yet)."""
    try:
        found = os.stat(path)
    except OSError:
        return Path(path).resolve()
    return (found.st_dev, found.st_ino)


def register(sub: argparse._SubParsersAction) -> None:
    importing = sub.add_parser(
        "import", help="import a test set (and recorded outputs) from another tool's files"
    )
    formats = importing.add_subparsers(dest="format", required=True)

    beir = formats.add_parser("beir", help="a BEIR dataset folder")
    beir.add_argument(
        "dir", metavar="DIR", help="folder with corpus.jsonl, queries.jsonl and qrels/SPLIT.tsv"
    )
    beir.add_argument("--split", default="test", help="qrels split to import (default: test)")
    beir.add_argument(
        "--out", required=True, metavar="CASES", help="cases file to write (JSON Lines)"
    )
    beir.add_argument(
        "--corpus-out", metavar="FILE", help="also write the corpus as chunks (JSON Lines)"
    )
    beir.set_defaults(func=cmd_import_beir)

    trec = formats.add_parser("trec", help="a TREC qrels and run pair")
    trec.add_argument("--qrels", required=True, metavar="FILE", help="qrels: qid iter docid rel")
    trec.add_argument(
        "--run", required=True, metavar="FILE", help="run: qid Q0 docid rank score tag"
    )
    trec.add_argument(
        "--topics", metavar="FILE", help="topics as TSV: qid<TAB>text (default: the qid)"
    )
    trec.add_argument(
        "--out", required=True, metavar="CASES", help="cases file to write (JSON Lines)"
    )
    trec.add_argument(
        "--recorded-out",
        required=True,
        metavar="OUTPUTS",
        help="retrieval-only recorded outputs to write",
    )
    trec.set_defaults(func=cmd_import_trec)

    for name, what, handler in (
        ("ragas", "a RAGAS evaluation dataset (JSON Lines or .csv)", cmd_import_ragas),
        ("deepeval", "DeepEval goldens or test cases (JSON)", cmd_import_deepeval),
    ):
        parser = formats.add_parser(name, help=what)
        parser.add_argument("file", metavar="FILE", help=what)
        parser.add_argument(
            "--out", required=True, metavar="CASES", help="cases file to write (JSON Lines)"
        )
        parser.add_argument(
            "--recorded-out",
            metavar="OUTPUTS",
            help="also write the recorded outputs (responses and contexts)",
        )
        parser.set_defaults(func=handler)

    otlp = formats.add_parser(
        "otlp", help="OpenTelemetry traces in OTLP/JSON with OpenInference attributes"
    )
    otlp.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="OTLP/JSON files ({resourceSpans: [...]} documents, one a line or one a file); "
        "a trace split over several files is one case",
    )
    otlp.add_argument(
        "--out", required=True, metavar="CASES", help="cases file to write (JSON Lines)"
    )
    otlp.add_argument(
        "--recorded-out",
        required=True,
        metavar="OUTPUTS",
        help="recorded outputs to write: answers, retrievals, steps, usage and latency_s",
    )
    otlp.add_argument(
        "--sample",
        type=float,
        default=1.0,
        metavar="RATE",
        help="keep a trace when int(sha256(SEED:TRACE_ID), 16) / 16**64 < RATE, a session "
        "by its session id (default 1: keep all)",
    )
    otlp.add_argument("--seed", default="0", metavar="S", help="the sampling seed (default 0)")
    otlp.set_defaults(func=cmd_import_otlp)
