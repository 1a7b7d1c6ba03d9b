"""Calibrating judge prompts against human scores: fixtures, agreement, labels and PPI."""

# What the other layers use; inside this package, modules import each other directly.
from ragproof_core.calibration.calibrate import calibrate
from ragproof_core.calibration.calibrate_combined import calibrate_combined
from ragproof_core.calibration.jury_agreement import jury_agreement
from ragproof_core.calibration.labels import (
    LabelsError,
    calibrate_run,
    read_labels,
    sample_for_labelling,
)

__all__ = [
    "LabelsError",
    "calibrate",
    "calibrate_combined",
    "calibrate_run",
    "jury_agreement",
    "read_labels",
    "sample_for_labelling",
]
