"""Unicode tag characters: the invisible twins of printable ASCII.

U+E0020 to U+E007E shadow ASCII 0x20 to 0x7E one for one. Most interfaces draw
them as nothing, yet a model reads them, so text written in them is an
instruction (or a sentinel) a person never sees: "ASCII smuggling". Detection
decodes them back (``decode_tags``); the payload library writes them
(``tag_text``).
"""

from __future__ import annotations

import re

_TAG_OFFSET = 0xE0000
_TAG = re.compile("[\U000e0020-\U000e007e]")
_FROM_TAGS = {code + _TAG_OFFSET: code for code in range(0x20, 0x7F)}
_TO_TAGS = {code: code + _TAG_OFFSET for code in range(0x20, 0x7F)}


def tag_text(text: str) -> str:
    """``text``'s printable ASCII characters written as tag characters; any other
    character is kept as it is."""
    return text.translate(_TO_TAGS)


def decode_tags(text: str) -> str:
    """``text`` with every tag character U+E0020 to U+E007E read as its ASCII
    character; ``text`` itself when it holds none."""
    if _TAG.search(text) is None:
        return text
    return text.translate(_FROM_TAGS)
