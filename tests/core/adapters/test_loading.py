"""Building the configured adapter from ``package.module:Name`` and its options."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragproof_core.adapters.loading import AdapterLoadError, load_adapter
from ragproof_core.adapters.recorded import RecordedAdapter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "adapters"
HERE = __name__  # this module doubles as the adapter module under test


class GoodAdapter:
    def __init__(self, greeting: str = "hello", shout: bool = False) -> None:
        self.greeting = greeting.upper() if shout else greeting

    def answer(self, question: str) -> dict:
        return {"text": f"{self.greeting}: {question}"}


class Factories:
    @staticmethod
    def build(**options):
        return GoodAdapter(**options)


def make_adapter(greeting: str) -> GoodAdapter:
    return GoodAdapter(greeting=greeting)


class FailingAdapter:
    def __init__(self, url: str) -> None:
        raise ConnectionError(f"cannot reach {url}")


class NoAnswer:
    def retrieve(self, question: str) -> list:
        return []


NOT_CALLABLE = 42


def test_class_is_built_with_keyword_options():
    adapter = load_adapter(f"{HERE}:GoodAdapter", {"greeting": "hi", "shout": True})
    assert isinstance(adapter, GoodAdapter)
    assert adapter.greeting == "HI"


def test_factory_function_and_dotted_attribute():
    assert load_adapter(f"{HERE}:make_adapter", {"greeting": "yo"}).greeting == "yo"
    assert load_adapter(f"{HERE}:Factories.build", {}).greeting == "hello"


def test_recorded_adapter_by_its_contract_target():
    adapter = load_adapter(
        "ragproof_core.adapters.recorded:RecordedAdapter",
        {"path": str(FIXTURES / "recorded.jsonl")},
    )
    assert isinstance(adapter, RecordedAdapter)
    assert len(adapter) == 4


@pytest.mark.parametrize("target", ["GoodAdapter", "pkg.mod:", ":Name", "a:b:c", ""])
def test_bad_target_format(target):
    with pytest.raises(AdapterLoadError) as info:
        load_adapter(target, {})
    assert str(info.value) == f"adapter target {target!r} must look like 'package.module:Name'"


def test_module_not_found():
    with pytest.raises(AdapterLoadError) as info:
        load_adapter("no_such_pkg_ragproof.pipeline:RAG", {})
    assert str(info.value) == (
        "adapter target 'no_such_pkg_ragproof.pipeline:RAG': no module named 'no_such_pkg_ragproof'"
    )


def test_module_whose_own_import_is_missing(tmp_path, monkeypatch):
    (tmp_path / "ragproof_needs_dep.py").write_text("import ragproof_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AdapterLoadError) as info:
        load_adapter("ragproof_needs_dep:RAG", {})
    assert str(info.value) == (
        "adapter target 'ragproof_needs_dep:RAG': importing 'ragproof_needs_dep' failed: "
        "ModuleNotFoundError: No module named 'ragproof_missing_dependency'"
    )


def test_module_that_raises_on_import(tmp_path, monkeypatch):
    (tmp_path / "ragproof_broken_import.py").write_text("raise RuntimeError('no GPU found')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AdapterLoadError) as info:
        load_adapter("ragproof_broken_import:RAG", {})
    assert str(info.value) == (
        "adapter target 'ragproof_broken_import:RAG': importing 'ragproof_broken_import' "
        "failed: RuntimeError: no GPU found"
    )


def test_attribute_missing():
    with pytest.raises(AdapterLoadError) as info:
        load_adapter(f"{HERE}:Missing", {})
    assert str(info.value) == (
        f"adapter target '{HERE}:Missing': module '{HERE}' has no attribute 'Missing'"
    )


def test_attribute_not_callable():
    with pytest.raises(AdapterLoadError) as info:
        load_adapter(f"{HERE}:NOT_CALLABLE", {})
    assert str(info.value) == (
        f"adapter target '{HERE}:NOT_CALLABLE' is a int, not a class or factory to call"
    )


def test_constructor_failure_includes_exception_text():
    with pytest.raises(AdapterLoadError) as info:
        load_adapter(f"{HERE}:FailingAdapter", {"url": "http://rag.internal"})
    assert str(info.value) == (
        f"building adapter '{HERE}:FailingAdapter' failed: "
        "ConnectionError: cannot reach http://rag.internal"
    )


def test_unknown_option_is_a_constructor_failure():
    with pytest.raises(AdapterLoadError) as info:
        load_adapter(f"{HERE}:GoodAdapter", {"colour": "red"})
    assert str(info.value) == (
        f"building adapter '{HERE}:GoodAdapter' failed: TypeError: "
        "GoodAdapter.__init__() got an unexpected keyword argument 'colour'"
    )


def test_object_without_answer():
    with pytest.raises(AdapterLoadError) as info:
        load_adapter(f"{HERE}:NoAnswer", {})
    assert str(info.value) == (
        f"adapter '{HERE}:NoAnswer' built a NoAnswer without an answer() method"
    )


def test_malformed_recording_names_path_and_line():
    path = FIXTURES / "recorded_string_answer.jsonl"
    with pytest.raises(AdapterLoadError) as info:
        load_adapter("ragproof_core.adapters.recorded:RecordedAdapter", {"path": str(path)})
    assert str(info.value) == (
        "building adapter 'ragproof_core.adapters.recorded:RecordedAdapter' failed: "
        f"{path}:3: answer: expected an Answer or a dict with 'text', got a bare string; "
        "wrap it as {'text': ...}"
    )
