"""Combined judge mode (CONTRACT section 12): one request per case for every judge prompt.

The request carries the case's material once (question, answer, expected
answer, context chunks) and asks for one key per prompt that applies, each
with that prompt's section-4 shape::

    {"groundedness": {"claims": [...]}, "answer_relevance": {"verdict": ...}, ...}

Template (``prompts/combined.txt``): the system part has a header, one
section per prompt (``=== part NAME ===``) and a closing section
(``=== end ===``); only the sections of the prompts asked are sent. The
system message's second line ``ragproof-parts: NAME ...`` names them, so a
test server can answer without parsing prose. Cited chunks that are in the
context are not sent twice: a ``cited_ids`` block lists their ids.

Each sub-reply is validated on its own. Failed parts get one repair request,
itself a ``combined`` call (same prompt marker) asking only for the failed
keys; a part that fails again is that metric's judge_error alone. The reply
is cached, keyed (model, combined prompt sha256, hash of the inputs), only
when every part validated, like any other prompt's reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragproof_core.judge.client import TransportError
from ragproof_core.judge.cost import CACHED_REQUEST, RequestEstimate
from ragproof_core.judge.prompts import (
    HISTORY,
    MARKER_PREFIX,
    MESSAGE_INPUTS,
    PROMPT_INPUTS,
    PROMPT_NAMES,
    Prompt,
    PromptError,
    fence_token,
    fenced_block,
    fenced_chunks,
    fenced_messages,
    fenced_nuggets,
)
from ragproof_core.judge.schemas import (
    ReplyValidationError,
    combined_schema,
    parse_object,
    validate_reply,
)
from ragproof_core.judge.types import JudgeVerdict

if TYPE_CHECKING:
    from ragproof_core.judge.session import LiteLLMJudge

COMBINED = "combined"
PARTS_PREFIX = "ragproof-parts: "
# The prompts a combined request can carry, in reply-key order.
COMBINABLE: tuple[str, ...] = PROMPT_NAMES

_SECTION = re.compile(r"^=== (part (\w+)|end) ===$", re.MULTILINE)

COMBINED_REPAIR_INSTRUCTION = (
    "Parts of your reply above failed validation: {errors}. "
    "Reply again with only a JSON object holding the key(s) {keys}, each with its corrected "
    "value of the required shape, and nothing else."
)


def combined_unused_prompts(mode: str) -> frozenset[str]:
    """The prompts a judge in ``mode`` never asks (left out of its run's prompt hashes)."""
    return frozenset(COMBINABLE) if mode == COMBINED else frozenset({COMBINED})


# --- the template ---------------------------------------------------------------------------


def template_sections(prompt: Prompt) -> tuple[str, dict[str, str], str]:
    """(header, {part name: section text}, closing) of the combined template's system part."""
    system = prompt.system_template
    matches = list(_SECTION.finditer(system))
    if not matches or matches[-1].group(1) != "end":
        raise PromptError(
            f"prompt {prompt.name!r}: needs '=== part NAME ===' sections and '=== end ==='"
        )
    header = system[: matches[0].start()].strip("\n")
    parts: dict[str, str] = {}
    for match, following in zip(matches, matches[1:], strict=False):
        parts[match.group(2)] = system[match.end() : following.start()].strip("\n")
    closing = system[matches[-1].end() :].strip("\n")
    missing = [name for name in COMBINABLE if name not in parts]
    if missing:
        raise PromptError(f"prompt {prompt.name!r}: no part section for {', '.join(missing)}")
    return header, parts, closing


def combined_inputs(
    parts: Mapping[str, Mapping[str, Any]], prompts: Mapping[str, Prompt] | None = None
) -> dict[str, Any]:
    """The one input dict of a combined request: the union of the parts' inputs.

    Parts share inputs (question, answer) that must agree; the cache key and
    the fence token derive from this dict, so the same case and parts always
    render the same request. A filled-in prompt of ``prompts`` (a rubric
    metric's) is a part too, after the shipped ones; its hash joins the inputs,
    so a changed rubric is a new cache key.
    """
    filled = {n: p for n, p in (prompts or {}).items() if p.part is not None and n in parts}
    unknown = sorted(set(parts) - set(COMBINABLE) - set(filled))
    if unknown or not parts:
        raise PromptError(f"combined prompt: unknown or no parts {unknown}; known: {COMBINABLE}")
    names = [name for name in COMBINABLE if name in parts] + sorted(filled)
    merged: dict[str, Any] = {"parts": names}
    if filled:
        merged["filled"] = {name: filled[name].sha256 for name in sorted(filled)}
    for name in names:
        inputs = parts[name]
        expected = filled[name].input_names if name in filled else PROMPT_INPUTS[name]
        # A conversation's turn: every part may carry the history (they must agree).
        if set(inputs) - {HISTORY} != set(expected) - {HISTORY}:
            raise PromptError(
                f"combined part {name!r} takes inputs {sorted(expected)}, got {sorted(inputs)}"
            )
        for key, value in inputs.items():
            if key in merged and merged[key] != value:
                raise PromptError(f"combined parts disagree on input {key!r}")
            merged[key] = value
    return merged


def render_combined(
    prompt: Prompt, inputs: Mapping[str, Any], prompts: Mapping[str, Prompt] | None = None
) -> list[dict[str, str]]:
    """The chat messages of one combined request (``inputs`` from ``combined_inputs``;
    ``prompts`` holds the filled-in prompts whose sections it carries)."""
    header, sections, closing = template_sections(prompt)
    sections = {**sections, **{n: p.part for n, p in (prompts or {}).items() if p.part}}
    names: list[str] = list(inputs["parts"])
    # Shorter than per_metric's fence: a case's request holds a dozen blocks.
    fence = fence_token(inputs, hex_digits=8)
    system = "\n".join(
        [
            f"{MARKER_PREFIX}{prompt.name}\n{PARTS_PREFIX}{' '.join(names)}\n{header}",
            *(sections[name] for name in names),
            *([closing] if closing else []),
        ]
    ).replace("{{fence}}", fence)
    data = _data_blocks(fence, inputs)
    user = prompt.user_template.replace("{{data}}", data, 1)
    if HISTORY in inputs:
        system += "\n" + prompt.history_rules.replace("{{fence}}", fence)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _data_blocks(fence: str, inputs: Mapping[str, Any]) -> str:
    # Block names say what each block is; no headings, to keep the request small.
    out = [fenced_messages(fence, inputs[key], "\n") for key in MESSAGE_INPUTS if key in inputs]
    out += [
        fenced_block(fence, key, inputs[key])
        for key in ("question", "steps", "answer", "expected_answer")
        if key in inputs
    ]
    context = inputs.get("context")
    if context is not None:
        out.append(fenced_chunks(fence, "chunk", context, "\n"))
    if "nuggets" in inputs:
        out.append(fenced_nuggets(fence, inputs["nuggets"], "\n"))
    # Chunks already in the request as context are named by id, not sent again:
    # the cited ones, and the retrieved ones context_relevance grades (the
    # retrieve() result's top k, usually the very chunks the answer was given).
    for key, name in (("citations", "cited"), ("chunks", "retrieved")):
        chunks = inputs.get(key)
        if chunks is None:
            continue
        if _all_in(chunks, context):
            ids = json.dumps([c["id"] for c in chunks], ensure_ascii=False)
            out.append(fenced_block(fence, f"{name}_ids", ids))
        else:
            out.append(fenced_chunks(fence, name, chunks, "\n"))
    return "\n".join(out)


def _all_in(chunks: Sequence[Mapping[str, Any]], context: Sequence[Any] | None) -> bool:
    return context is not None and all(
        {"id": c["id"], "text": c["text"]} in context for c in chunks
    )


# --- replies --------------------------------------------------------------------------------


def parse_combined(
    text: str, names: Sequence[str], verdicts: Mapping[str, Sequence[str]] | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """({part: validated sub-reply}, {part: error}) for the parts ``names``; ``verdicts``:
    the bands of filled-in (rubric) parts.

    Keys beyond ``names`` are ignored. A reply that is not a JSON object fails
    every part with the same error.
    """
    verdicts = verdicts or {}
    try:
        data = parse_object(text)
    except ReplyValidationError as exc:
        return {}, {name: str(exc) for name in names}
    good: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    for name in names:
        if name not in data:
            errors[name] = f'missing key "{name}" in the reply object'
            continue
        try:
            good[name] = validate_reply(name, data[name], verdicts.get(name))
        except ReplyValidationError as exc:
            errors[name] = f'"{name}": {exc}'
    return good, errors


def repair_instruction(errors: Mapping[str, str]) -> str:
    return COMBINED_REPAIR_INSTRUCTION.format(
        errors="; ".join(errors.values()), keys=", ".join(f'"{name}"' for name in errors)
    )


# --- asking ---------------------------------------------------------------------------------


def estimate_combined(
    judge: LiteLLMJudge, parts: Mapping[str, Mapping[str, Any]]
) -> RequestEstimate:
    """The combined question served from the cache, or its request estimated, for
    ``run --dry-run``."""
    prompt = judge.prompt(COMBINED)
    inputs = combined_inputs(parts, judge.prompts)
    if judge.cached_reply(prompt, judge.cache_key(inputs)) is not None:
        return CACHED_REQUEST
    return judge.estimate_request(render_combined(prompt, inputs, judge.prompts))


async def ask_combined(
    judge: LiteLLMJudge, parts: Mapping[str, Mapping[str, Any]]
) -> dict[str, JudgeVerdict]:
    """One combined question; a verdict per part. ``BudgetExceeded`` propagates."""
    prompt = judge.prompt(COMBINED)
    inputs = combined_inputs(parts, judge.prompts)
    names: list[str] = inputs["parts"]
    messages = render_combined(prompt, inputs, judge.prompts)
    key = judge.cache_key(inputs)
    hit = judge.cached_reply(prompt, key)
    if hit is not None:
        judge.count(cache_hits=1)
        return {
            name: JudgeVerdict(ok=True, data=hit.data[name], raw=hit.raw, cached=True)
            for name in names
        }
    async with judge.semaphore():
        return await _ask(judge, prompt, key, names, messages)


async def _ask(
    judge: LiteLLMJudge,
    prompt: Prompt,
    key: str,
    names: list[str],
    messages: list[dict[str, str]],
) -> dict[str, JudgeVerdict]:
    cost_before = judge.stats.cost_usd
    tokens_before = (judge.stats.input_tokens, judge.stats.output_tokens)
    bands = {name: judge.prompts[name].verdicts for name in names}
    try:
        reply = await judge.send(
            messages, judge.response_format(prompt, combined_schema(bands)), repair=False
        )
    except TransportError as exc:
        return _failed(judge, names, None, f"judge transport failed: {exc}")
    verdicts = {n: judge.prompts[n].verdicts for n in names if judge.prompts[n].verdicts}
    good, errors = parse_combined(reply.text, names, verdicts)
    raws = {name: reply.text for name in names}
    requests = 1
    if errors:
        repair = [
            *messages,
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": repair_instruction(errors)},
        ]
        requests = 2
        try:
            asked = combined_schema({name: bands[name] for name in errors})
            second = await judge.send(repair, judge.response_format(prompt, asked), repair=True)
        except TransportError as exc:
            errors = {name: f"judge transport failed: {exc}" for name in errors}
        else:
            fixed, still = parse_combined(second.text, list(errors), verdicts)
            good.update(fixed)
            raws.update({name: second.text for name in errors})
            errors = {name: f"reply failed validation twice: {err}" for name, err in still.items()}
    cost = judge.stats.cost_usd - cost_before
    if not errors:
        judge.count(calls_ok=1)
        merged = {name: good[name] for name in names}
        if judge.use_cache and judge.cache is not None:
            raw = reply.text if requests == 1 else json.dumps(merged, ensure_ascii=False)
            judge.cache.put(
                judge.model,
                judge.prompt_key(prompt),
                key,
                merged,
                raw,
                judge.stats.input_tokens - tokens_before[0],
                judge.stats.output_tokens - tokens_before[1],
                cost,
            )
    if errors:
        judge.note_failure(next(iter(errors.values())), len(errors))
    verdicts: dict[str, JudgeVerdict] = {}
    for i, name in enumerate(names):
        # The call's cost and requests are carried once, on the first part.
        extra = {"cost_usd": cost, "requests": requests} if i == 0 else {}
        if name in good:
            verdicts[name] = JudgeVerdict(ok=True, data=good[name], raw=raws[name], **extra)
        else:
            verdicts[name] = JudgeVerdict(
                ok=False, data=None, raw=raws[name], error=errors[name], **extra
            )
    return verdicts


def _failed(
    judge: LiteLLMJudge, names: list[str], raw: str | None, error: str
) -> dict[str, JudgeVerdict]:
    judge.note_failure(error, len(names))
    return {name: JudgeVerdict(ok=False, data=None, raw=raw, error=error) for name in names}
