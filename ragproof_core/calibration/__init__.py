"""Calibrating judge prompts against human scores: fixtures, agreement, labels and PPI.

What the other layers use is exported here; modules inside the package import
each other directly.
"""

from ragproof_core.calibration.agreement import (
    band,
)
from ragproof_core.calibration.calibrate import (
    calibrate,
)
from ragproof_core.calibration.calibrate_combined import (
    calibrate_combined,
)
from ragproof_core.calibration.fixture_files import (
    FixtureError,
    load_metric_fixtures,
)
from ragproof_core.calibration.jury_agreement import (
    jury_agreement,
)
from ragproof_core.calibration.label_queue import (
    DEFAULT_PER_METRIC,
    LabelItem,
    LabelQueue,
    QueueState,
)
from ragproof_core.calibration.labels import (
    LabelsError,
    RunCalibration,
    calibrate_run,
    judge_scores,
    read_labels,
    sample_for_labelling,
)
from ragproof_core.calibration.ppi import (
    estimate,
)
from ragproof_core.calibration.probe import (
    DEFAULT_SAMPLE,
    ProbeResult,
    probe,
    probe_sample,
)
from ragproof_core.calibration.self_agreement import (
    SelfAgreement,
    self_agreement,
    stored_self_agreement,
    with_self_agreement,
)
from ragproof_core.calibration.stored_calibration import (
    calibrate_stored,
)

__all__ = [
    "DEFAULT_PER_METRIC",
    "DEFAULT_SAMPLE",
    "FixtureError",
    "LabelItem",
    "LabelQueue",
    "LabelsError",
    "ProbeResult",
    "QueueState",
    "RunCalibration",
    "SelfAgreement",
    "band",
    "calibrate",
    "calibrate_combined",
    "calibrate_run",
    "calibrate_stored",
    "estimate",
    "judge_scores",
    "jury_agreement",
    "load_metric_fixtures",
    "probe",
    "probe_sample",
    "read_labels",
    "sample_for_labelling",
    "self_agreement",
    "stored_self_agreement",
    "with_self_agreement",
]
