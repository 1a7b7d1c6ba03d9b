"""Plain-text tables for the terminal: a header line, a dashed rule, then the rows,
columns two spaces apart and as wide as their widest cell; trailing spaces dropped."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def text_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Collection[int] | None = None,
) -> list[str]:
    """The table's lines. ``right``: the indexes of right-aligned columns (figures);
    default every column but the first, the usual name-then-figures table."""
    if right is None:
        right = range(1, len(headers))
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]
