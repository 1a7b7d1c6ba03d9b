"""Which cron strings a schedule takes, decided without Dagster (``ragproof suites check``
runs without it): five fields (minute, hour, day of month, month, day of week) or one of
the ``@`` names, as Dagster's schedules read them. A test holds this to Dagster's own
verdicts."""

from __future__ import annotations

import re

ALIASES = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


class _Field:
    def __init__(self, low: int, high: int, names: tuple[str, ...] = (), first: int = 0):
        self.low, self.high = low, high
        self.names = {name: first + i for i, name in enumerate(names)}

    def value(self, text: str) -> int | None:
        if text.isdigit():
            number = int(text)
            return number if self.low <= number <= self.high else None
        return self.names.get(text.lower())


# minute, hour, day of month, month, day of week (0 and 7 are Sunday)
_FIELDS = (
    _Field(0, 59),
    _Field(0, 23),
    _Field(1, 31),
    _Field(1, 12, _MONTHS, first=1),
    _Field(0, 7, _DAYS),
)
_DAY_OF_MONTH, _DAY_OF_WEEK = 2, 4
_NTH_WEEKDAY = re.compile(r"([0-7])#([1-5])")


def _item_ok(item: str, position: int) -> bool:
    field = _FIELDS[position]
    base, slash, step = item.partition("/")
    if slash and not (step.isdigit() and int(step) > 0):
        return False
    if base in ("*", "?") or (position == _DAY_OF_MONTH and base == "L" and not slash):
        return base == "*" or position in (_DAY_OF_MONTH, _DAY_OF_WEEK)
    if position == _DAY_OF_WEEK and not slash and _NTH_WEEKDAY.fullmatch(base):
        return True
    low, dash, high = base.partition("-")
    if field.value(low) is None:
        return False
    return field.value(high) is not None if dash else True


def is_valid_cron(text: str) -> bool:
    """Whether a schedule takes ``text`` as its cron string."""
    text = text.strip()
    if text in ALIASES:
        return True
    fields = text.split()
    if len(fields) != len(_FIELDS):
        return False
    for position, value in enumerate(fields):
        items = value.split(",")
        if not all(item and _item_ok(item, position) for item in items):
            return False
    day, month = fields[_DAY_OF_MONTH], fields[3]
    # The 30th or 31st of February never comes: a schedule that would never run.
    return not (month in ("2", "feb", "FEB", "Feb") and day in ("30", "31"))
