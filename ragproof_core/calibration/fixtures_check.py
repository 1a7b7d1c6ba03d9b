"""The fixtures check as a command: ``python -m ragproof_core.calibration.fixtures_check [DIR]``.

Prints each calibrated prompt's fixture count and score spread, or every problem
and exit status 1. The format and its rules live in ``fixture_files``; this
module is only the entry point, so that no package import loads it before
``runpy`` runs it as ``__main__``.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from ragproof_core.calibration.fixture_files import (
    CALIBRATED_PROMPTS,
    DEFAULT_DIRECTORY,
    HUMAN_SCORES,
    scan_fixtures,
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    directory = Path(args[0]) if args else DEFAULT_DIRECTORY
    fixtures, problems = scan_fixtures(directory)
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(problems)} problem(s) in {directory}", file=sys.stderr)
        return 1
    counts = Counter(f.prompt for f in fixtures)
    for prompt in CALIBRATED_PROMPTS:
        bands = Counter(f.human_score for f in fixtures if f.prompt == prompt)
        spread = ", ".join(f"{score:g}: {bands[score]}" for score in HUMAN_SCORES if bands[score])
        print(f"{prompt}: {counts[prompt]} fixtures ({spread})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
