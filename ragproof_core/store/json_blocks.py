"""JSON Lines read by pyarrow's JSON reader in blocks of whole lines: the fast path the
run's dataset and recording share (``store/dataset_table.py``, ``store/recording.py``).

The reader parses a block on every core, against an explicit schema, and refuses
what does not fit it (a wrong type, a key outside the schema, a key given twice, a
raw control character, invalid UTF-8, a lone surrogate escape). What it cannot see
is checked here or by the caller's column checks; whatever fails raises ``Refused``
and the caller reads the file again by its exact, line-by-line validator, whose
``PATH:LINE: reason`` is the error the user sees.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

# Bytes of whole lines handed to the JSON reader at a time: its threads split each
# block among the cores, and the process holds about two blocks' Arrow columns.
READ_BLOCK_BYTES = 32 << 20
# What one of the reader's threads parses at a time: a block is read in such chunks.
PARSE_CHUNK_BYTES = 4 << 20

# A character str.strip() keeps: a string holding one is not blank (the exact paths' rule).
NOT_SPACE = (
    "[^\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}"
    "\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}]"
)
# What bytes.strip() removes: a line starting with one may be blank, which the fast
# path leaves to the exact one (it would not see a second object on another line).
_BLANK_CODES = np.frombuffer(b" \t\r\x0b\x0c\n", dtype=np.uint8)
_NEWLINE = ord("\n")


class Refused(Exception):
    """The fast path cannot take this file whole; the exact path reads it."""


@dataclass(frozen=True, slots=True)
class Block:
    data: pa.Buffer
    lines: int


def line_blocks(path: str) -> Iterator[Block]:
    """The file in blocks of whole lines, each with its line count. A line that is
    blank, or starts with a blank byte, refuses the fast path (two objects on one line
    are found by counting rows against lines, which a blank line would offset).
    ``Refused`` too when the file cannot be opened or read: the exact path words it.

    Every block is read into the same buffer, so a block is valid only until the next
    is asked for (the reader copies what it keeps). A fresh buffer a block cost a page
    fault per 4 KB; a memory-mapped file counted every page read in the process's RSS
    (3.3 GB at 1,000,000 cases)."""
    try:
        handle = open(path, "rb", buffering=0)  # noqa: SIM115 - closed below
    except OSError:
        raise Refused from None
    with handle:
        fd = handle.fileno()
        size, start = os.fstat(fd).st_size, 0
        buffer = bytearray(min(READ_BLOCK_BYTES, size))
        # Where the newlines are, reused too: a fresh 32 MB mask a block cost the kernel
        # zeroing its pages (a tenth of the step's CPU at 100,000 cases).
        newline = np.empty(len(buffer), dtype=bool)
        while start < size:
            length = _read_at(fd, buffer, start, size)
            raw = np.frombuffer(buffer, dtype=np.uint8, count=length)
            ends = np.flatnonzero(np.equal(raw, _NEWLINE, out=newline[:length]))
            if start + length < size:
                if len(ends) == 0:
                    # A line longer than the buffer: a buffer twice as long, read again.
                    buffer = bytearray(2 * len(buffer))
                    newline = np.empty(len(buffer), dtype=bool)
                    continue
                length = int(ends[-1]) + 1
                raw = raw[:length]
            yield Block(pa.py_buffer(memoryview(buffer)[:length]), _lines_none_blank(raw, ends))
            start += length


def _read_at(fd: int, buffer: bytearray, start: int, size: int) -> int:
    """Fill ``buffer`` from the file's byte ``start`` (or up to its end); bytes read."""
    wanted, got = min(len(buffer), size - start), 0
    view = memoryview(buffer)
    while got < wanted:
        try:
            read = os.preadv(fd, [view[got:wanted]], start + got)
        except OSError:
            raise Refused from None
        if read == 0:
            raise Refused  # the file shrank while read: the exact path reads it again
        got += read
    return wanted


def _lines_none_blank(raw: np.ndarray, ends: np.ndarray) -> int:
    """How many lines a block holds (its last may lack its newline); ``Refused`` when
    one of them starts with a blank byte (what ``bytes.strip()`` removes) or is empty."""
    starts = raw[np.concatenate(([0], ends + 1))[: len(ends) + (raw[-1] != _NEWLINE)]]
    require(not np.isin(starts, _BLANK_CODES).any())
    return len(starts)


def read_block(block: Block, options: pj.ParseOptions) -> pa.Table:
    """One block's rows as the schema of ``options`` (a chunk for each of the reader's
    parse chunks), one row a line; ``Refused`` when the reader refuses a line or a
    line holds two objects."""
    try:
        read = pj.read_json(
            pa.BufferReader(block.data),
            read_options=pj.ReadOptions(block_size=PARSE_CHUNK_BYTES),
            parse_options=options,
        )
        # The reader copies strings' bytes unchecked: invalid UTF-8 fails here.
        read.validate(full=True)
    except (pa.ArrowInvalid, UnicodeDecodeError):
        raise Refused from None
    if read.num_rows != block.lines:
        raise Refused  # two objects on one line (the exact validators refuse it)
    # Left in the reader's chunks (every column chunked alike): combining them copied
    # every string once more, 0.3 to 0.7 s of CPU for a 273 MB recording.
    return read


def require(condition: bool) -> None:
    if not condition:
        raise Refused


def all_hold_text(strings: pa.ChunkedArray | pa.Array) -> bool:
    """Every string has a character ``str.strip()`` keeps (none is blank)."""
    if len(strings) == 0:
        return True
    return pc.all(pc.match_substring_regex(strings, NOT_SPACE)).as_py()


def all_distinct(values: pa.ChunkedArray | pa.Array) -> bool:
    return pc.count_distinct(values).as_py() == len(values)
