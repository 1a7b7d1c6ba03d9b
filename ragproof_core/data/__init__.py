"""Datasets: reading and validating cases, and importing them from other formats."""

# What the other layers use; inside this package, modules import each other directly.
from ragproof_core.data.dataset import (
    DatasetError,
    dataset_sha256,
    iter_json_line_spans,
    iter_json_lines,
    load_dataset,
    parse_json_line,
)
from ragproof_core.data.importers.beir import corpus_chunks, import_beir
from ragproof_core.data.importers.deepeval import import_deepeval
from ragproof_core.data.importers.ragas import import_ragas
from ragproof_core.data.importers.trec import import_trec
from ragproof_core.data.importers.writer import write_files

__all__ = [
    "DatasetError",
    "corpus_chunks",
    "dataset_sha256",
    "import_beir",
    "import_deepeval",
    "import_ragas",
    "import_trec",
    "iter_json_line_spans",
    "iter_json_lines",
    "load_dataset",
    "parse_json_line",
    "write_files",
]
