"""The masker and the one secret-name rule (ragproof_core/masking.py, CONTRACT section 28)."""

from __future__ import annotations

import re
import time

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from ragproof_core.config.expansion import config_secrets
from ragproof_core.masking import (
    MASK,
    NO_SECRETS,
    Masker,
    environment_secrets,
    is_secret_key,
    secrets_line,
)
from ragproof_core.model import Answer, CaseOutput, Chunk, ToolStep


def test_one_rule_for_config_keys_and_variable_names() -> None:
    for name in ("OPENAI_API_KEY", "SERVICE_TOKEN", "DB_PASSWORD", "GITHUB_PAT_SECRET", "pwd"):
        assert is_secret_key(name), name
    for name in ("PATH", "HOME", "MAX_TOKENS", "TOKENIZER_DIR", "AUTHOR"):
        assert not is_secret_key(name), name
    environ = {"SERVICE_TOKEN": "abc123def", "PATH": "/usr/bin", "API_KEY": "", "X_KEY": "sk-1"}
    assert environment_secrets(environ) == ["abc123def", "sk-1"]


def test_the_framework_adapters_field_name_options_are_not_secrets() -> None:
    # id_key = "source_id" names a metadata field; masking it rewrote every output's metadata.
    for name in ("id_key", "answer_key", "citations_key", "context_key", "history_key"):
        assert not is_secret_key(name), name
    assert is_secret_key("api_key") and is_secret_key("ID_KEY") and is_secret_key("idKey")
    options = {"id_key": "source_id", "api_key": "sk-live-123456"}
    masker = Masker(config_secrets(options))
    assert masker.value({"source_id": "d1", "auth": "sk-live-123456"}) == {
        "source_id": "d1",
        "auth": "***",
    }


def test_the_shells_working_folders_are_not_secrets() -> None:
    # A DB_PWD is a password; the shell's PWD is the folder every path of a run is under.
    environ = {"PWD": "/work/repo", "OLDPWD": "/home/me", "DB_PWD": "hunter22"}
    assert environment_secrets(environ) == ["hunter22"]


def test_each_value_is_masked_whole_and_a_longer_one_first() -> None:
    masker = Masker(["sk-live-abcdef", "sk-live-abcdefgh", "t.k+n(1)*", "short"])
    assert masker.secrets == ("sk-live-abcdef", "sk-live-abcdefgh", "t.k+n(1)*")  # >= 6 chars
    text = "a sk-live-abcdefgh b sk-live-abcdefg c t.k+n(1)* short"
    assert masker.text(text) == f"a {MASK} b {MASK}g c {MASK} short"
    assert masker.masked == 1  # strings changed, not values found
    assert masker.text("nothing here") == "nothing here"
    assert masker.masked == 1
    assert secrets_line(masker.masked) == "secrets: 1 string masked"
    assert secrets_line(0) is None
    assert not NO_SECRETS and NO_SECRETS.text("sk-live-abcdef") == "sk-live-abcdef"


def test_values_and_outputs_are_masked_without_their_ids() -> None:
    masker = Masker(["planted-value-1"])
    output = CaseOutput(
        "planted-value-1",
        Answer(
            "the key is planted-value-1",
            (Chunk("d1", "chunk planted-value-1", metadata={"k": "planted-value-1"}),),
            ("d1",),
            (ToolStep("lookup", {"auth": "Bearer planted-value-1"}, "ok"),),
        ),
        error=None,
    )
    masked = masker.value(output, frozenset({"case_id"}))
    assert masked.case_id == "planted-value-1"  # ids line outputs up with cases
    assert masked.answer.text == f"the key is {MASK}"
    assert masked.answer.retrieved_chunks[0].text == f"chunk {MASK}"
    assert masked.answer.retrieved_chunks[0].metadata == {"k": MASK}
    assert masked.answer.steps[0].arguments == {"auth": f"Bearer {MASK}"}
    assert output.answer.text == "the key is planted-value-1"  # the input is untouched
    assert masker.masked == 4
    clean = CaseOutput("c2", Answer("fine"))
    assert masker.value(clean, frozenset({"case_id"})) is clean


_SECRET = st.text(alphabet="ab.-+*?()[]{}|^$\\ é", min_size=6, max_size=10)


@given(secrets=st.lists(_SECRET, min_size=1, max_size=6), pieces=st.lists(st.text(max_size=4)))
@settings(max_examples=300, deadline=None)
def test_the_trie_masks_as_a_longest_first_alternation_in_python_and_re2(secrets, pieces):
    masker = Masker(secrets)
    text = "".join(p for pair in zip(pieces, secrets * len(pieces), strict=False) for p in pair)
    plain = "|".join(re.escape(s) for s in sorted(set(secrets), key=len, reverse=True))
    expected = re.sub(plain, MASK, text)
    assert masker.text(text) == expected
    arrow = pc.replace_substring_regex(pa.array([text]), masker.re2_pattern, MASK)
    assert arrow[0].as_py() == expected


def _cpu_s(masker: Masker, text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        masker.text(text)
        best = min(best, time.process_time() - start)
    return best


def test_a_2mb_answer_with_50_known_secrets_is_masked_in_linear_time() -> None:
    # Fifty 40-character tokens sharing a long prefix (the worst case for a plain
    # alternation, tried value by value at every position) and a text that keeps
    # almost matching them. The work is linear: doubling the text doubles it, within a
    # factor (CPU seconds, best of 3; quadratic work would quadruple it).
    secrets = [f"sk-live-{'0' * 24}{i:08d}" for i in range(50)]
    masker = Masker(secrets)
    unit = "sk-live-" + "0" * 20 + " " + secrets[7] + " words "
    one_mb = unit * (1_000_000 // len(unit))
    masked = masker.text(one_mb + one_mb)
    assert secrets[7] not in masked and masked.count(MASK) == 2 * one_mb.count(secrets[7])
    small, large = _cpu_s(masker, one_mb), _cpu_s(masker, one_mb + one_mb)
    assert large < 3.5 * small + 0.05, (small, large)
