import json

import pytest

from ragproof_core.json_limits import (
    MAX_DEPTH,
    JsonLimitError,
    check_value,
    loads_bounded,
    loads_plain,
    scan_depth,
)


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


def _nested(depth: int) -> str:
    return '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def test_loads_bounded_refuses_what_scan_depth_refuses_and_decodes_the_rest():
    # Many brackets, little depth: decoded, not scanned (a conversation's recording).
    wide = json.dumps({"turns": [{"retrieve": [{"id": str(i)} for i in range(40)]}] * 5})
    assert loads_bounded(wide) == json.loads(wide)
    assert loads_bounded(_nested(MAX_DEPTH)) == json.loads(_nested(MAX_DEPTH))
    for text in (_nested(MAX_DEPTH + 1), _nested(100_000), _nested(MAX_DEPTH + 1)[:-3]):
        with pytest.raises(JsonLimitError, match="nested deeper than 64 levels") as raised:
            loads_bounded(text)
        with pytest.raises(JsonLimitError) as scanned:
            scan_depth(text)
        # The 65th opening bracket: the object's, then 64 of the list's from offset 6.
        assert raised.value.offset == scanned.value.offset == 6 + MAX_DEPTH - 1
    # A depth problem is reported before a wide integer or bad JSON, as by a scan first.
    with pytest.raises(JsonLimitError, match="nested deeper"):
        loads_bounded(_nested(MAX_DEPTH + 1)[:-1] + ', "n": ' + "9" * 5000 + "}")
    with pytest.raises(JsonLimitError, match="an integer of more than 4300 digits"):
        loads_bounded(wide[:-1] + ', "n": ' + "9" * 5000 + "}")
    with pytest.raises(json.JSONDecodeError):
        loads_bounded(wide[:-1])


def test_loads_plain_reads_what_loads_bounded_reads_and_declines_the_rest():
    wide = json.dumps({"turns": [{"retrieve": [{"id": str(i)} for i in range(40)]}] * 5})
    plain = [
        wide,
        _nested(MAX_DEPTH),
        '{"case_id": "c1", "score": 0.30000000000000004, "n": -123456789012345678}',
        '{"a": "caf\\u00e9 \\ud83d\\ude00 café", "b": [true, false, null, -0.0, 1e-400]}\r\n',
    ]
    for text in plain:
        assert loads_plain(text.encode()) == (True, loads_bounded(text.strip()))
    # Each declined: a 19-digit integer (orjson would read a float), too deep, NaN and
    # 1e400 (valid to json.loads), a byte order mark, a lone surrogate, bad JSON.
    declined = [
        '{"n": 1234567890123456789}',
        _nested(MAX_DEPTH + 1),
        _nested(5000),
        '{"x": NaN}',
        "[1e400]",
        "\ufeff{}",
        '"\\ud800"',
        "[1,]",
    ]
    for text in declined:
        assert loads_plain(text.encode()) == (False, None), text
