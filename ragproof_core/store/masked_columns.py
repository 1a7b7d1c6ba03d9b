"""A run's secret values masked in Arrow columns (CONTRACT section 28): the recording a run
replays enters the run as columns, never as strings one at a time.

``masked_table`` finds every string of a table (to any depth: a chunk's text inside a
list of structs) with one RE2 pass per column (``Masker.re2_pattern``, linear in the
text) and rewrites only the columns that hold a secret; a recording without one costs
that pass and nothing else. Strings masked are counted on the masker.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ragproof_core.masking import MASK, Masker

# The keys that line a table up with the run's dataset: ids, never the pipeline's text.
KEYS = ("run_id", "case_id")


def masked_table(table: pa.Table, masker: Masker) -> pa.Table:
    """``table`` with every secret value of ``masker`` written as ``***``, ``KEYS`` aside."""
    if not masker:
        return table
    pattern = masker.re2_pattern
    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        if name not in KEYS:
            chunks = [_masked(chunk, pattern, masker) for chunk in column.chunks]
            column = pa.chunked_array(chunks, column.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema)


def _masked(array: pa.Array, pattern: str, masker: Masker) -> pa.Array:
    kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        found = pc.sum(pc.match_substring_regex(array, pattern)).as_py() or 0
        if not found:
            return array
        masker.count(found)
        return pc.replace_substring_regex(array, pattern, MASK)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        values = _masked(array.values, pattern, masker)
        if values is array.values:
            return array
        return type(array).from_arrays(
            array.offsets, values, type=kind, mask=array.is_null() if array.null_count else None
        )
    if pa.types.is_struct(kind):
        fields = array.flatten()
        masked = [_masked(field, pattern, masker) for field in fields]
        if all(new is old for new, old in zip(masked, fields, strict=True)):
            return array
        return pa.StructArray.from_arrays(
            masked, fields=list(kind), mask=array.is_null() if array.null_count else None
        )
    return array
