"""What the framework adapters share (framework.py), and how they behave without their
extras: these tests need no framework installed."""

from __future__ import annotations

import datetime
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ragproof_core.adapters.coerce import AdapterOutputError
from ragproof_core.adapters.framework import (
    build_from_factory,
    chunk_from,
    cited_ids,
    marker_citations,
)
from ragproof_core.adapters.loading import AdapterLoadError, load_adapter
from ragproof_core.model import Chunk

REPO = Path(__file__).resolve().parents[3]
FRAMEWORK_ROOTS = ("langchain_core", "llama_index", "haystack")


def test_chunk_id_comes_from_the_metadata_key_else_the_framework_id():
    assert chunk_from("t", {"source_id": "d1"}, "fw-1", 0.5, "source_id") == Chunk(
        "d1", "t", 0.5, {"source_id": "d1"}
    )
    assert chunk_from("t", {}, "fw-1", None, "source_id") == Chunk("fw-1", "t", None, {})
    # id_key = None ignores the metadata; an int id becomes the string the dataset uses.
    assert chunk_from("t", {"source_id": "d1"}, "fw-1", 1, None).id == "fw-1"
    assert chunk_from("t", {"source_id": 7}, "fw-1", None, "source_id").id == "7"


def test_chunk_without_any_id_is_an_output_error_naming_the_key():
    with pytest.raises(AdapterOutputError) as exc:
        chunk_from("Mars has two small moons.", {}, None, None, "source_id")
    assert str(exc.value) == (
        "document has no id: metadata key 'source_id' is missing and the framework gave no "
        "id of its own ('Mars has two small moons.')"
    )


def test_chunk_metadata_is_made_json_safe_and_non_numeric_scores_dropped():
    when = datetime.date(2024, 5, 1)
    chunk = chunk_from("t", {"source_id": "d1", "date": when}, None, "high", "source_id")
    assert chunk.metadata == {"source_id": "d1", "date": "2024-05-01"}
    assert chunk.score is None


def test_numbered_markers_cite_the_nth_chunk_and_out_of_range_stays_a_marker():
    chunks = tuple(Chunk(f"d{i}", "t") for i in (1, 2, 3))
    assert marker_citations("See [2] and [1][3], again [2].", chunks) == ("d2", "d1", "d3")
    assert marker_citations("Both [1, 3]; none [4]; [0].", chunks) == ("d1", "d3", "[4]", "[0]")
    assert marker_citations("No markers here.", chunks) == ()


def test_cited_ids_keep_strings_and_map_documents():
    document = SimpleNamespace(own_id="fw-9")
    assert cited_ids(["d1", document], lambda d: Chunk(d.own_id, ""), "cites") == ("d1", "fw-9")
    with pytest.raises(AdapterOutputError, match="^cites must be a list of ids or documents"):
        cited_ids("d1", lambda d: Chunk(d.own_id, ""), "cites")


def test_factory_errors_say_which_step_failed():
    with pytest.raises(AdapterLoadError, match="^factory 'nope' must look like"):
        build_from_factory("nope", None)
    with pytest.raises(AdapterLoadError, match="^factory 'no_such_mod:f': no module named"):
        build_from_factory("no_such_mod:f", None)
    with pytest.raises(AdapterLoadError) as exc:
        build_from_factory("json:loads", {"s": "{"})
    assert str(exc.value).startswith("factory 'json:loads' failed: JSONDecodeError: ")
    with pytest.raises(AdapterLoadError, match="^factory 'builtins:print' returned None$"):
        build_from_factory("builtins:print", None)
    with pytest.raises(AdapterLoadError, match="'factory_options' must be a table"):
        build_from_factory("json:loads", ["x"])
    assert build_from_factory("json:loads", {"s": "[1]"}) == [1]


@pytest.mark.parametrize(
    ("target", "blocked", "package", "extra"),
    [
        ("langchain:LangChainAdapter", "langchain_core", "langchain-core", "langchain"),
        (
            "llamaindex:LlamaIndexAdapter",
            "llama_index.core.schema",
            "llama-index-core",
            "llamaindex",
        ),
        ("haystack:HaystackAdapter", "haystack", "haystack-ai", "haystack"),
    ],
)
def test_missing_framework_names_the_extra_to_install(monkeypatch, target, blocked, package, extra):
    # A None entry in sys.modules makes that import fail as if it were not installed.
    monkeypatch.setitem(sys.modules, blocked, None)
    adapter = target.split(":")[1]
    with pytest.raises(AdapterLoadError) as exc:
        load_adapter(f"ragproof_core.adapters.{target}", {"factory": "json:loads"})
    message = str(exc.value)
    assert message.startswith(
        f"building adapter 'ragproof_core.adapters.{target}' failed: {adapter} needs {package}, "
        "which is not installed ("
    )
    assert message.endswith(f"install it with: pip install 'ragproof[{extra}]'")


def test_adapter_modules_import_without_their_frameworks():
    # The frameworks are imported when an adapter is built, never by importing ragproof_core.
    code = (
        "import sys, ragproof_core.adapters.langchain, ragproof_core.adapters.llamaindex, "
        "ragproof_core.adapters.haystack\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORK_ROOTS!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
