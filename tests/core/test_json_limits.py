import json

import pytest

from ragproof_core.json_limits import MAX_DEPTH, JsonLimitError, check_value, scan_depth


def test_scan_depth_counts_brackets_outside_strings_only():
    scan_depth("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    scan_depth(json.dumps({"text": "[" * 10_000}))
    with pytest.raises(JsonLimitError, match=f"nested deeper than {MAX_DEPTH} levels"):
        scan_depth('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")


def test_check_value_refuses_depth_cycles_and_wide_integers_without_recursing():
    check_value({"a": [1, 2, {"b": 10**4299}]})
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(JsonLimitError, match="metadata(\\[0\\])+: nested deeper"):
        check_value(deep, "metadata")
    cycle: dict = {}
    cycle["self"] = cycle
    with pytest.raises(JsonLimitError, match="contains itself"):
        check_value(cycle)
    with pytest.raises(JsonLimitError, match=r"m\.n: an integer of more than 4300 digits"):
        check_value({"n": 10**4300}, "m")
    with pytest.raises(JsonLimitError, match="an integer of more than 4300 digits"):
        check_value([-(10**5000)])
