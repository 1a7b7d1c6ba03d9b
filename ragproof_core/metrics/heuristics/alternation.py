"""A large alternation regex, searched through only the alternatives that can match.

Python's ``re`` tries every alternative of ``(?:a)|(?:b)|...`` at every
position of the text. The refusal cues are ~90 alternatives, which made one
``finditer`` over a 130-character answer cost about 0.3 ms: the largest single
cost of a run without a judge. Most alternatives contain a literal word or
phrase that any match must contain ("not aware of", "don't", "weiß ich"). An
``Alternation`` works out, once, a set of such strings per alternative from
the parsed pattern, and for each text compiles (and caches) the alternation of
only those alternatives whose strings occur in it, in their original order.

Matches are identical to the full pattern's: an alternative whose required
strings are all absent from the text cannot match anywhere in it, so dropping
it changes no match, and the order of the rest (which decides between
alternatives matching at one position) is kept. Case-insensitive patterns are
handled by folding text and strings alike: ``str.lower`` plus the extra
equivalences ``re`` applies under IGNORECASE (``ı``/``i``, ``ſ``/``s``, Greek
variants), so folding only ever makes more strings "present", never fewer.
Text containing U+0130 (whose ``lower()`` is two characters, unlike ``re``'s
one-character folding) is searched with the full pattern.

Which strings occur is found in one scan of the folded text, not one substring
search per string (180 of them for the refusal cues): the strings form a trie
written as one regex, so at each position the engine follows the text's own
path and stops at the longest string starting there. Every other string
starting there is a prefix of that one, and a string starting elsewhere is
found at its own position, so the strings contained in each longest match
(worked out once) are exactly the strings present.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from re import _casefix, _constants, _parser  # the stdlib's own parser of patterns

import ahocorasick

# Every character IGNORECASE treats as equal to another beyond lower(), mapped to
# one representative of its class.
_FOLD = {
    code: min((code, *others))
    for code, others in _casefix._EXTRA_CASES.items()  # type: ignore[attr-defined]
}
_DOTTED_CAPITAL_I = "\u0130"
_SUBSETS_CACHED = 4096


def fold(text: str) -> str:
    """The text as the required strings are compared with it (module docstring)."""
    lowered = text.lower()
    return lowered if lowered.isascii() else lowered.translate(_FOLD)


Required = frozenset[str] | None  # one of these strings is in every match; None: unknown


def _best(candidates: list[frozenset[str]]) -> Required:
    """The most selective candidate: longest shortest string, then fewest strings."""
    usable = [c for c in candidates if c and min(map(len, c)) > 0]
    if not usable:
        return None
    return max(usable, key=lambda c: (min(map(len, c)), -len(c)))


def _required(items) -> Required:  # noqa: C901 - one branch per regex operator
    """Strings one of which occurs (folded) in every match of a parsed sequence."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            candidates.append(frozenset({fold("".join(run))}))
            run.clear()

    for op, av in items:
        if op is _constants.LITERAL:
            run.append(chr(av))
            continue
        close_run()
        if op is _constants.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            if add_flags or del_flags:
                return None  # scoped flags: not worth reasoning about
            found = _required(sub)
        elif op is _constants.BRANCH:
            parts = [_required(branch) for branch in av[1]]
            found = None if any(p is None for p in parts) else frozenset().union(*parts)
        elif op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT):
            low, _high, sub = av
            found = _required(sub) if low >= 1 else None
        elif op is _constants.ASSERT:
            # A positive lookaround's text is in the searched text too, if not in the match.
            found = _required(av[1])
        else:
            found = None
        if found is not None:
            candidates.append(found)
    close_run()
    return _best(candidates)


def required_strings(part: str, flags: int) -> Required:
    """Strings one of which occurs in every text ``part`` can match (folded), or None."""
    return _required(_parser.parse(part, flags))


def trie_pattern(strings: Sequence[str]) -> str:
    """A regex matching exactly ``strings``, as a trie: at a position it matches the
    longest of them starting there (one child per next character, the end of a
    string tried last)."""
    root: dict[str, dict] = {}
    for string in strings:
        node = root
        for char in string:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        ends = "" in node
        if not branches:
            return ""
        if len(branches) == 1 and not ends:
            return branches[0]
        return "(?:" + "|".join(branches) + ("|" if ends else "") + ")"

    return emit(root)


@dataclass(frozen=True, slots=True)
class _Index:
    """What an ``Alternation`` works out once from its parts (module docstring)."""

    strings: tuple[str, ...]
    # Alternatives with no required string: kept for every text.
    always: frozenset[int]
    alternatives_of: dict[str, frozenset[int]]
    # A longest match -> the alternatives of every string it contains.
    alternatives_within: dict[str, frozenset[int]]
    finder: re.Pattern[str]

    @classmethod
    def of(cls, parts: Sequence[str], flags: int) -> _Index:
        required = tuple(required_strings(part, flags) for part in parts)
        strings = tuple(sorted({s for req in required if req for s in req}))
        alternatives_of = {
            s: frozenset(i for i, req in enumerate(required) if req and s in req) for s in strings
        }
        return cls(
            strings=strings,
            always=frozenset(i for i, req in enumerate(required) if req is None),
            alternatives_of=alternatives_of,
            alternatives_within={
                s: frozenset().union(*(alternatives_of[t] for t in strings if t in s))
                for s in strings
            },
            finder=re.compile(trie_pattern(strings), re.DOTALL),
        )


class Alternation:
    """``re.compile("|".join(f"(?:{p})" for p in parts), flags)``, searched faster.

    Parsed and compiled on first use, not when built: the refusal cues are built as
    their module is imported, by every process that imports the metrics (the command
    line, a run's forkserver), about 45 ms each, and only a refusal check searches them."""

    def __init__(self, parts: Sequence[str], flags: int = 0) -> None:
        self.parts = tuple(parts)
        self.flags = flags
        self._subset = lru_cache(maxsize=_SUBSETS_CACHED)(self._compile)

    @cached_property
    def full(self) -> re.Pattern[str]:
        return re.compile(self._joined(range(len(self.parts))), self.flags)

    @cached_property
    def index(self) -> _Index:
        return _Index.of(self.parts, self.flags)

    def _joined(self, indices) -> str:
        return "|".join(f"(?:{self.parts[i]})" for i in indices)

    def _compile(self, indices: tuple[int, ...]) -> re.Pattern[str] | None:
        if not indices:
            return None
        if len(indices) == len(self.parts):
            return self.full
        return re.compile(self._joined(indices), self.flags)

    def pattern_for(self, text: str) -> re.Pattern[str] | None:
        """The alternation of the alternatives that may match ``text`` (None: none may)."""
        if _DOTTED_CAPITAL_I in text:
            return self.full
        folded = fold(text)
        index = self.index
        kept = set(index.always)
        search, within = index.finder.search, index.alternatives_within
        found = search(folded)
        while found is not None:
            kept.update(within[found.group()])
            found = search(folded, found.start() + 1)
        return self._subset(tuple(sorted(kept)))

    def kept_for(self, present: frozenset[str] | set[str]) -> re.Pattern[str] | None:
        """The alternation of the alternatives whose strings include one of ``present``
        (the strings, of this alternation's or more, that occur in a text), plus those
        with no strings: ``pattern_for`` of that text."""
        index = self.index
        alternatives_of = index.alternatives_of
        kept = index.always.union(*(alternatives_of[s] for s in present if s in alternatives_of))
        return self._subset(tuple(sorted(kept)))

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        pattern = self.pattern_for(text)
        return iter(()) if pattern is None else pattern.finditer(text)

    def search(self, text: str) -> re.Match[str] | None:
        pattern = self.pattern_for(text)
        return None if pattern is None else pattern.search(text)


class Alternations:
    """Several ``Alternation`` searched in the same texts, narrowed by one scan.

    ``patterns_for(text)`` is ``tuple(a.pattern_for(text) for a in alternations)``.
    The strings of all of them go into one Aho-Corasick automaton (pyahocorasick),
    which lists every occurrence of every string in a single pass in C, where the
    trie regex above tries it at every position of the text; each alternation then
    keeps the alternatives whose strings occur (a string of another alternation
    changes nothing: it is not one of its own). The strings found are the same as
    the trie scan's, so the patterns are too. A pattern narrowed for a text also
    serves any part of it (a sentence, a clause): an alternative that cannot match
    anywhere in the text cannot match in a part of it, and the order of those kept
    is the full pattern's.
    """

    def __init__(self, *alternations: Alternation) -> None:
        self.alternations = alternations
        # Answers share a few sets of strings present: each set is narrowed once.
        self._narrowed = lru_cache(maxsize=_SUBSETS_CACHED)(self._narrow)

    @cached_property
    def _automaton(self) -> ahocorasick.Automaton:
        # Built on first use, as each alternation's index is.
        automaton = ahocorasick.Automaton()
        for string in sorted({s for a in self.alternations for s in a.index.strings}):
            automaton.add_word(string, string)
        automaton.make_automaton()
        return automaton

    def _narrow(self, present: frozenset[str]) -> tuple[re.Pattern[str] | None, ...]:
        return tuple(a.kept_for(present) for a in self.alternations)

    def patterns_for(self, text: str) -> tuple[re.Pattern[str] | None, ...]:
        if _DOTTED_CAPITAL_I in text:
            return tuple(a.full for a in self.alternations)
        return self._narrowed(frozenset(s for _end, s in self._automaton.iter(fold(text))))
