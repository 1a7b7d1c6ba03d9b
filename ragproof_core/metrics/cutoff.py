"""Cut-offs per metric: ``retrieval.ndcg_at_k@10`` (CONTRACT section 19).

A selected metric name may end in ``@N`` to score that metric at cut-off N
instead of ``run.k``; the result is stored and shown under the full name,
beside the metric at ``run.k``.
"""

from __future__ import annotations

import re

_WITH_CUTOFF = re.compile(r"(?P<base>.+)@(?P<cutoff>[0-9]+)")


def split_cutoff(name: str) -> tuple[str, int | None]:
    """``("retrieval.ndcg_at_k", 10)`` for ``retrieval.ndcg_at_k@10``; ``(name, None)``
    for a name without ``@N``. N is not checked here (``0`` comes back as 0)."""
    found = _WITH_CUTOFF.fullmatch(name)
    if found is None:
        return name, None
    return found["base"], int(found["cutoff"])
