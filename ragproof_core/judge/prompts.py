"""Judge prompt templates: loading, hashing and rendering into chat messages.

A template is a ``.txt`` file in ``prompts/``. It holds two parts split by a line
``=== user ===``: the system part (instructions, rubric, reply shape) and the
user part (where the data goes). Every placeholder is ``{{name}}``:

- the system part uses only ``{{fence}}``, the per-render delimiter token;
- the user part uses exactly the prompt's inputs (``PROMPT_INPUTS``).

The sha256 of the file bytes is the prompt's version: it goes into every run
record and into the judge cache key, so editing a prompt invalidates its cached
verdicts and makes ``compare`` refuse to mix runs judged by different wordings.

A conversation's turn (CONTRACT section 16) is judged with its history: the
inputs then carry ``history``, the earlier turns as messages
``{"turn", "role", "content"}``. Any evaluation prompt takes it beside its own
inputs: the system part gains the template's ``=== history ===`` section (the
rules for reading the history) and the user part opens with the history, one
fenced block per message. Without ``history`` that section is left out, so a
single case's request is what it always was. Every template a turn can be
judged with has that section (``load_prompts`` and ``load_template`` refuse one
without it), so the rules a judge reads are in the file the prompt's hash is
taken of: editing them is a new prompt, with new cache keys.

Untrusted text (questions, answers, chunks, expected answers, earlier turns) is
never spliced into the instructions. Each value becomes a data block::

    <<<BEGIN DATA-1a2b3c4d5e6f7a8b answer>>>
    ...text...
    <<<END DATA-1a2b3c4d5e6f7a8b>>>

The fence token is derived from a hash of the inputs (so the same inputs always
render the same request, which keeps cache keys and requests reproducible) and
is re-derived until it occurs in none of the input strings, so no text can close
its own block and smuggle instructions outside it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROMPT_NAMES: tuple[str, ...] = (
    "groundedness",
    "citation_support",
    "answer_relevance",
    "completeness",
    "refusal",
    "context_relevance",
    "knowledge_retention",
    "task_completion",
    "claim_check",
    "nugget_support",
)
# Prompts that write test sets (``ragproof generate qa``, CONTRACT section 13).
# They are loaded and checked with the rest but are not evaluation prompts: a
# run's recorded prompt hashes leave them out, so editing them never makes
# ``compare`` refuse runs judged by unchanged evaluation prompts.
GENERATION_PROMPT_NAMES: tuple[str, ...] = (
    "generate_qa",
    "critique_qa",
    "generate_unanswerable",
    # `ragproof generate nuggets` (CONTRACT section 20).
    "generate_nuggets",
)

# The inputs each prompt takes. Text inputs are strings; chunk inputs are lists
# of {"id": str, "text": str}.
PROMPT_INPUTS: dict[str, tuple[str, ...]] = {
    "groundedness": ("question", "answer", "context"),
    "citation_support": ("answer", "citations"),
    "answer_relevance": ("question", "answer"),
    "completeness": ("question", "answer", "expected_answer"),
    "refusal": ("question", "answer"),
    # slot and attempt are part of the request so a retry is a new question (and
    # a new cache key), not a cached repeat of the rejected one.
    "generate_qa": ("chunks", "slot", "attempt"),
    "critique_qa": ("question", "answer", "chunks"),
    "generate_unanswerable": ("chunks", "slot", "attempt"),
    "context_relevance": ("question", "chunks"),
    # One call per conversation (CONTRACT section 16): its turns as messages.
    "knowledge_retention": ("conversation",),
    # An agent's answer (CONTRACT section 17): ``steps`` is its trajectory as text,
    # one JSON object a line (``metrics.agent.steps_text``), fenced as one block.
    "task_completion": ("question", "steps", "answer"),
    # Claim-level diagnostics and nuggets (CONTRACT section 20).
    "claim_check": ("question", "answer", "expected_answer", "context"),
    "nugget_support": ("question", "answer", "nuggets"),
    # seed is part of the request so another seed is a new question, not a cached repeat.
    "generate_nuggets": ("seed", "question", "expected_answer"),
}
CHUNK_INPUTS = frozenset({"context", "citations", "chunks"})
# Inputs holding a case's nuggets: lists of their texts, fenced one block per nugget
# headed ``nugget index=N`` (N from 0, the index a reply names it by).
NUGGET_INPUTS = frozenset({"nuggets"})
# Inputs holding a conversation's messages: lists of {"turn": int, "role": str,
# "content": str}, fenced one block per message.
MESSAGE_INPUTS: tuple[str, ...] = ("history", "conversation")
HISTORY = "history"
# A template's section, last in its system part: how to read the history. Every
# template a conversation's turn can be judged with has one (``takes_history``).
HISTORY_SEPARATOR = "=== history ==="
HISTORY_INTRO = "The CONVERSATION HISTORY (the earlier turns, oldest first):"

USER_SEPARATOR = "=== user ==="
# Templates a config fills in (rubric metrics, CONTRACT section 21) live in
# ``prompts/templates/``: ``load_prompts`` does not load them as prompts of their own.
TEMPLATE_DIRECTORY_NAME = "templates"
RUBRIC = "rubric"
# A template's section for combined mode, between its system part and its user part.
COMBINED_PART_SEPARATOR = "=== combined part ==="
# What each material block is called in a rubric prompt's user part.
MATERIAL_LABELS: dict[str, str] = {
    "question": "QUESTION",
    "answer": "ANSWER",
    "context": "CONTEXT (the retrieved chunks)",
    "expected_answer": "EXPECTED ANSWER",
    "history": "CONVERSATION HISTORY",
}
# The test server and log readers find the prompt by this marker line.
MARKER_PREFIX = "ragproof-prompt: "
DEFAULT_DIRECTORY = Path(__file__).with_name("prompts")

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


class PromptError(ValueError):
    """A template file or a render request is malformed; the message names which."""


@dataclass(frozen=True)
class Prompt:
    name: str
    template: str
    sha256: str
    # A prompt filled in from a template (a rubric metric's): the template's name,
    # which the request's marker line carries; its inputs; the verdicts its reply
    # may give (``{"verdict": ...}``); its section in a combined request.
    marker: str | None = None
    inputs: tuple[str, ...] | None = None
    verdicts: tuple[str, ...] | None = None
    part: str | None = None

    @property
    def marked(self) -> str:
        return self.marker or self.name

    @property
    def input_names(self) -> tuple[str, ...]:
        if self.inputs is not None:
            return self.inputs
        if self.name not in PROMPT_INPUTS:
            raise PromptError(f"unknown prompt {self.name!r}; known: {', '.join(PROMPT_INPUTS)}")
        return PROMPT_INPUTS[self.name]

    @property
    def system_template(self) -> str:
        """The system part without its ``=== history ===`` section."""
        system = self.template.split(USER_SEPARATOR, 1)[0]
        return system.split(HISTORY_SEPARATOR, 1)[0].strip("\n")

    @property
    def history_rules(self) -> str:
        """The rules for a conversation's history: the template's own section (covered by
        the prompt's hash, as all its text is). ``PromptError`` for a template without
        one: there is no text outside the templates to fall back on."""
        system = self.template.split(USER_SEPARATOR, 1)[0]
        if HISTORY_SEPARATOR not in system:
            raise PromptError(
                f"prompt {self.name!r} has no {HISTORY_SEPARATOR!r} section to judge a "
                "conversation's turn with"
            )
        return system.split(HISTORY_SEPARATOR, 1)[1].strip("\n")

    @property
    def user_template(self) -> str:
        return self.template.split(USER_SEPARATOR, 1)[1].strip("\n")


def load_prompts(directory: Path | None = None) -> dict[str, Prompt]:
    """Read every ``*.txt`` template in ``directory`` (default: the shipped prompts).

    All of ``PROMPT_NAMES`` must be present and well formed; a broken template
    fails here, at start-up, rather than as judge errors on every case.
    """
    directory = DEFAULT_DIRECTORY if directory is None else Path(directory)
    prompts: dict[str, Prompt] = {}
    for path in sorted(directory.glob("*.txt")):
        data = path.read_bytes()
        try:
            template = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PromptError(f"{path}: not UTF-8 ({exc})") from exc
        prompt = Prompt(path.stem, template, hashlib.sha256(data).hexdigest())
        _check_template(path, prompt)
        prompts[prompt.name] = prompt
    missing = [name for name in (*PROMPT_NAMES, *GENERATION_PROMPT_NAMES) if name not in prompts]
    if missing:
        raise PromptError(f"{directory}: missing prompt file(s): {', '.join(missing)}")
    return prompts


def takes_history(name: str) -> bool:
    """Whether a conversation's turn may be judged with prompt ``name``: every evaluation
    prompt but those that take a conversation's messages themselves."""
    return name in PROMPT_NAMES and not set(PROMPT_INPUTS[name]) & set(MESSAGE_INPUTS)


def _check_template(path: Path, prompt: Prompt) -> None:
    if prompt.template.count(USER_SEPARATOR) != 1:
        raise PromptError(f"{path}: needs exactly one line {USER_SEPARATOR!r}")
    if takes_history(prompt.name) and HISTORY_SEPARATOR not in prompt.template:
        raise PromptError(
            f"{path}: needs a line {HISTORY_SEPARATOR!r} before {USER_SEPARATOR!r}, then "
            "the rules for reading a conversation's history"
        )
    system_names = set(_PLACEHOLDER.findall(prompt.system_template))
    if system_names != {"fence"}:
        raise PromptError(
            f"{path}: the system part must use {{{{fence}}}} and no other placeholder, "
            f"found {sorted(system_names)}"
        )
    expected = set(PROMPT_INPUTS.get(prompt.name, ()))
    found = _PLACEHOLDER.findall(prompt.user_template)
    if prompt.name in PROMPT_INPUTS and (set(found) != expected or len(found) != len(expected)):
        raise PromptError(
            f"{path}: the user part must use each of {sorted(expected)} exactly once, found {found}"
        )


def load_template(name: str, directory: Path | None = None) -> Prompt:
    """A template of ``prompts/templates/`` (``rubric``), hashed by its file bytes."""
    folder = (DEFAULT_DIRECTORY if directory is None else Path(directory)) / TEMPLATE_DIRECTORY_NAME
    path = folder / f"{name}.txt"
    data = path.read_bytes()
    template = data.decode("utf-8")
    if (
        template.count(HISTORY_SEPARATOR) != 1
        or template.count(COMBINED_PART_SEPARATOR) != 1
        or template.count(USER_SEPARATOR) != 1
    ):
        raise PromptError(
            f"{path}: needs one line {HISTORY_SEPARATOR!r}, then one "
            f"{COMBINED_PART_SEPARATOR!r} and then one {USER_SEPARATOR!r}"
        )
    return Prompt(name, template, hashlib.sha256(data).hexdigest())


_FIELD = re.compile(r"\{\{(rubric|bands|name)\}\}")


def rubric_prompt(
    template: Prompt,
    name: str,
    rubric: str,
    bands: Sequence[str],
    material: Sequence[str],
) -> Prompt:
    """A rubric metric's prompt: the ``rubric`` template with its rubric, bands and material.

    The rubric and bands are the config owner's own instructions and go into the
    system part; the material is the case's data, fenced in the user part like
    every prompt's. The hash covers the template and all three, so changing any
    of them is a new prompt: new cache keys, and ``compare`` refuses to mix runs.
    """
    system, rest = template.template.split(COMBINED_PART_SEPARATOR, 1)
    part, user = rest.split(USER_SEPARATOR, 1)
    listed = "\n".join(f"- {json.dumps(band, ensure_ascii=False)}" for band in bands)
    inline = ", ".join(json.dumps(band, ensure_ascii=False) for band in bands)

    def fill(text: str, bands_text: str) -> str:
        values = {"rubric": rubric.strip(), "bands": bands_text, "name": name}
        # One pass: a rubric mentioning {{bands}} stays as written.
        return _FIELD.sub(lambda m: values[m.group(1)], text.strip("\n"))

    blocks = "\n\n".join(f"The {MATERIAL_LABELS[m]}:\n\n{{{{{m}}}}}" for m in material)
    filled = (
        f"{fill(system, listed)}\n{USER_SEPARATOR}\n"
        + user.strip("\n").replace("{{material}}", blocks)
        + "\n"
    )
    canonical = json.dumps(
        {
            "template": template.sha256,
            "rubric": rubric,
            "bands": list(bands),
            "material": list(material),
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return Prompt(
        name,
        filled,
        hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        marker=template.name,
        inputs=tuple(material),
        verdicts=tuple(bands),
        part=fill(part, inline),
    )


def fence_token(inputs: Mapping[str, Any], hex_digits: int = 16) -> str:
    """A delimiter token that occurs in none of the input strings, derived from the inputs."""
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return derive_fence(canonical, list(_strings(inputs)), hex_digits)


def derive_fence(seed: str, texts: Sequence[str], hex_digits: int = 16) -> str:
    """The first token ``DATA-<16 hex>`` from sha256(salt:seed), salt = 0, 1, ... not in texts.

    Safety comes from the check, not the length: the token chosen never occurs
    in any input, whatever its length (combined requests use 8 hex digits).
    """
    salt = 0
    while True:
        digest = hashlib.sha256(f"{salt}:{seed}".encode()).hexdigest()
        token = f"DATA-{digest[:hex_digits]}"
        if not any(token in text for text in texts):
            return token
        salt += 1


def render(prompt: Prompt, inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """The chat messages for one judge question: system = instructions, user = fenced data."""
    _check_inputs(prompt, inputs)
    fence = fence_token(inputs)
    system = f"{MARKER_PREFIX}{prompt.marked}\n" + prompt.system_template.replace(
        "{{fence}}", fence
    )

    def block(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in CHUNK_INPUTS:
            return fenced_chunks(fence, "chunk", inputs[name], "\n\n")
        if name in MESSAGE_INPUTS:
            return fenced_messages(fence, inputs[name], "\n\n")
        if name in NUGGET_INPUTS:
            return fenced_nuggets(fence, inputs[name], "\n\n")
        return fenced_block(fence, name, inputs[name])

    # One pass: text inserted for one placeholder is never scanned for another.
    user = _PLACEHOLDER.sub(block, prompt.user_template)
    if carries_history(prompt, inputs):
        system += "\n\n" + prompt.history_rules.replace("{{fence}}", fence)
        user = (
            f"{HISTORY_INTRO}\n\n{fenced_messages(fence, inputs[HISTORY], chr(10) * 2)}\n\n{user}"
        )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def carries_history(prompt: Prompt, inputs: Mapping[str, Any]) -> bool:
    """Whether ``inputs`` add a conversation's history the prompt does not take itself."""
    return HISTORY in inputs and HISTORY not in prompt.input_names


def fenced_messages(fence: str, messages: Sequence[Mapping[str, Any]], separator: str) -> str:
    """One fenced block per message, headed ``ROLE turn=N``; ``(no earlier turns)`` when
    empty."""
    if not messages:
        return "(no earlier turns)"
    return separator.join(
        fenced_block(fence, f"{m['role']} turn={int(m['turn'])}", m["content"]) for m in messages
    )


def fenced_block(fence: str, header: str, text: str) -> str:
    """One piece of data between the fence's BEGIN and END lines (shared with combined.py)."""
    return f"<<<BEGIN {fence} {header}>>>\n{text}\n<<<END {fence}>>>"


def fenced_chunks(
    fence: str, name: str, chunks: Sequence[Mapping[str, str]], separator: str
) -> str:
    """One fenced block per chunk, headed ``NAME id="ID"``; ``(no chunks)`` when empty."""
    if not chunks:
        return "(no chunks)"
    # json.dumps quotes the id, so an id with quotes or newlines cannot break the header.
    return separator.join(
        fenced_block(fence, f"{name} id={json.dumps(c['id'], ensure_ascii=False)}", c["text"])
        for c in chunks
    )


def fenced_nuggets(fence: str, nuggets: Sequence[str], separator: str) -> str:
    """One fenced block per nugget, headed ``nugget index=N`` (N from 0); ``(no nuggets)``
    when empty."""
    if not nuggets:
        return "(no nuggets)"
    return separator.join(
        fenced_block(fence, f"nugget index={i}", text) for i, text in enumerate(nuggets)
    )


def _check_inputs(prompt: Prompt, inputs: Mapping[str, Any]) -> None:
    name = prompt.name
    names = prompt.input_names
    expected = set(names)
    given = set(inputs) - ({HISTORY} if carries_history(prompt, inputs) else set())
    if given != expected:
        raise PromptError(f"prompt {name!r} takes inputs {sorted(expected)}, got {sorted(inputs)}")
    for key in inputs:
        value = inputs[key]
        if key in MESSAGE_INPUTS:
            check_messages(name, key, value)
        elif key in NUGGET_INPUTS:
            if not (
                isinstance(value, Sequence)
                and not isinstance(value, str)
                and all(isinstance(text, str) for text in value)
            ):
                raise PromptError(f"prompt {name!r}: input {key!r} must be a list of strings")
        elif key in CHUNK_INPUTS:
            if not isinstance(value, Sequence) or isinstance(value, str):
                raise PromptError(f"prompt {name!r}: input {key!r} must be a list of chunks")
            for i, chunk in enumerate(value):
                if not (
                    isinstance(chunk, Mapping)
                    and isinstance(chunk.get("id"), str)
                    and isinstance(chunk.get("text"), str)
                ):
                    raise PromptError(
                        f"prompt {name!r}: {key}[{i}] must be {{'id': str, 'text': str}}"
                    )
        elif not isinstance(value, str):
            raise PromptError(f"prompt {name!r}: input {key!r} must be a string")


def check_messages(name: str, key: str, value: Any) -> None:
    """A message input is a list of ``{"turn": int, "role": str, "content": str}``."""
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise PromptError(f"prompt {name!r}: input {key!r} must be a list of messages")
    for i, message in enumerate(value):
        if not (
            isinstance(message, Mapping)
            and isinstance(message.get("turn"), int)
            and message.get("role") in ("user", "assistant")
            and isinstance(message.get("content"), str)
        ):
            raise PromptError(
                f"prompt {name!r}: {key}[{i}] must be "
                "{'turn': int, 'role': 'user' | 'assistant', 'content': str}"
            )


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, Sequence):
        for item in value:
            yield from _strings(item)
