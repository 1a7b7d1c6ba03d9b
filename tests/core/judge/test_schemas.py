from __future__ import annotations

import pytest

from ragproof_core.judge.schemas import ReplyValidationError, parse_reply


@pytest.mark.parametrize(
    ("prompt", "text", "expected"),
    [
        (
            "groundedness",
            '{"claims": [{"claim": "x", "supported": true}]}',
            {"claims": [{"claim": "x", "supported": True}]},
        ),
        ("groundedness", '{"claims": []}', {"claims": []}),
        (
            "citation_support",
            '{"verdicts": [{"chunk_id": "c1", "supported": false, "why": "no"}]}',
            {"verdicts": [{"chunk_id": "c1", "supported": False, "why": "no"}]},
        ),
        ("answer_relevance", '{"verdict": "partial"}', {"verdict": "partial"}),
        ("completeness", '{"verdict": "missing", "extra": 1}', {"verdict": "missing", "extra": 1}),
        ("refusal", '  {"refused": true}\n', {"refused": True}),
        ("refusal", '```json\n{"refused": false}\n```', {"refused": False}),
        ("refusal", '\n```\n{"refused": false}\n```  ', {"refused": False}),
    ],
)
def test_valid_replies_parse_verbatim(prompt: str, text: str, expected: dict) -> None:
    assert parse_reply(prompt, text) == expected


@pytest.mark.parametrize(
    ("prompt", "text", "message"),
    [
        (
            "refusal",
            'Sure! {"refused": true}',
            "the reply is not valid JSON (Expecting value at line 1 column 1); "
            "reply with the JSON object only, no other text",
        ),
        ("refusal", "", "the reply is empty; expected a JSON object"),
        ("refusal", "[true]", "the reply must be a JSON object, got an array"),
        (
            "refusal",
            '{"refused": "true"}',
            'refused must be a JSON boolean (true or false), got string "true"; '
            'required shape: {"refused": bool}',
        ),
        (
            "refusal",
            '{"refused": 1}',
            "refused must be a JSON boolean (true or false), got number 1; "
            'required shape: {"refused": bool}',
        ),
        (
            "answer_relevance",
            '{"verdict": "Relevant"}',
            'verdict must be one of "relevant", "partial", "irrelevant", got string "Relevant"; '
            'required shape: {"verdict": "relevant" | "partial" | "irrelevant"}',
        ),
        (
            "completeness",
            "{}",
            'missing key "verdict" in the reply object; '
            'required shape: {"verdict": "complete" | "partial" | "missing"}',
        ),
        (
            "groundedness",
            '{"claims": [{"claim": "a", "supported": true}, {"claim": "b"}]}',
            'missing key "supported" in claims[1]; '
            'required shape: {"claims": [{"claim": str, "supported": bool}]}',
        ),
        (
            "groundedness",
            '{"claims": {"claim": "a"}}',
            "claims must be a JSON array, got an object; "
            'required shape: {"claims": [{"claim": str, "supported": bool}]}',
        ),
        (
            "citation_support",
            '{"verdicts": [{"chunk_id": 7, "supported": true}]}',
            "verdicts[0].chunk_id must be a JSON string, got number 7; "
            'required shape: {"verdicts": [{"chunk_id": str, "supported": bool}]}',
        ),
        (
            "citation_support",
            '{"verdicts": ["c1"]}',
            'verdicts[0] must be a JSON object, got string "c1"; '
            'required shape: {"verdicts": [{"chunk_id": str, "supported": bool}]}',
        ),
    ],
)
def test_invalid_replies_fail_with_a_precise_message(prompt: str, text: str, message: str) -> None:
    with pytest.raises(ReplyValidationError) as info:
        parse_reply(prompt, text)
    assert str(info.value) == message


def test_prose_around_a_code_fence_is_not_tolerated() -> None:
    with pytest.raises(ReplyValidationError, match="not valid JSON"):
        parse_reply("refusal", 'Here you go:\n```json\n{"refused": true}\n```')


def test_unknown_prompt_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown prompt 'tone'"):
        parse_reply("tone", "{}")


@pytest.mark.parametrize(
    ("prompt", "text", "expected"),
    [
        ("generate_qa", '{"question": "Q?", "answer": "A."}', {"question": "Q?", "answer": "A."}),
        (
            "critique_qa",
            '{"standalone": true, "answerable": false, "specific": true, "note": "n"}',
            {"standalone": True, "answerable": False, "specific": True, "note": "n"},
        ),
        ("generate_unanswerable", '{"question": "Q?"}', {"question": "Q?"}),
    ],
)
def test_generation_replies_parse(prompt: str, text: str, expected: dict) -> None:
    assert parse_reply(prompt, text) == expected


@pytest.mark.parametrize(
    ("prompt", "text", "message"),
    [
        (
            "generate_qa",
            '{"question": "Q?"}',
            'missing key "answer" in the reply object; '
            'required shape: {"question": str, "answer": str}',
        ),
        (
            "generate_qa",
            '{"question": "  ", "answer": "A."}',
            'question must not be empty; required shape: {"question": str, "answer": str}',
        ),
        (
            "critique_qa",
            '{"standalone": true, "answerable": "no", "specific": true}',
            'answerable must be a JSON boolean (true or false), got string "no"; required shape: '
            '{"standalone": bool, "answerable": bool, "specific": bool}',
        ),
        (
            "generate_unanswerable",
            '{"pwned": true}',
            'missing key "question" in the reply object; required shape: {"question": str}',
        ),
    ],
)
def test_generation_replies_fail_with_a_reason(prompt: str, text: str, message: str) -> None:
    with pytest.raises(ReplyValidationError) as caught:
        parse_reply(prompt, text)
    assert str(caught.value) == message
