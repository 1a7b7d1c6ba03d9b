"""Test sets written from a corpus by the judge model (``ragproof generate qa``,
CONTRACT section 13): corpus loading, seeded sampling, near-duplicate checks,
the generate-critique-replace loop, the dry-run estimate and the output file."""

# What the other layers use; inside this package, modules import each other directly.
from ragproof_core.generate.attacks import GenerationError, generate_command
from ragproof_core.generate.corpus import load_corpus
from ragproof_core.generate.estimate import estimate_generation
from ragproof_core.generate.output import case_rows, write_rows
from ragproof_core.generate.qa import (
    DEFAULT_MAX_ATTEMPTS,
    GenerationInputError,
    GenerationPlan,
    generate_questions,
    plan_slots,
)
from ragproof_core.generate.summary import render_summary, summary_dict

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "GenerationError",
    "GenerationInputError",
    "GenerationPlan",
    "case_rows",
    "estimate_generation",
    "generate_command",
    "generate_questions",
    "load_corpus",
    "plan_slots",
    "render_summary",
    "summary_dict",
    "write_rows",
]
