"""Running an evaluation: preflight, evaluating cases, shards and the dry run.

What the other layers use is exported here; modules inside the package import
each other directly.
"""

from ragproof_core.run.dry_run import (
    estimate_run,
)
from ragproof_core.run.evaluate import (
    ABORTED_BUDGET,
    INTERRUPTED,
    STOPPED_STATUSES,
    RecordingScoring,
    evaluate,
    evaluate_recorded,
    recording_scoring,
)
from ragproof_core.run.preflight import (
    Checked,
    Staged,
    adapter_lent,
    check_judge_credentials,
    check_launch,
    preflight,
    recording_path,
    staged_inputs,
    staged_recording_of,
    take_adapter,
)
from ragproof_core.run.shard_attempt import (
    ATTEMPT_PREFIX,
    AttemptRecorder,
    attempt_document,
    attempt_document_name,
    new_attempt_token,
    unfinished_attempts,
)
from ragproof_core.run.shards import (
    EVALUATION_DOCUMENT,
    STAGED_SECRETS_DOCUMENT,
    EvaluationTotals,
    ShardReport,
    merge_reports,
    shard_budget,
    shard_share,
    unit_shard_ranges,
)
from ragproof_core.run.turn_replay import replays_as_recorded

__all__ = [
    "ABORTED_BUDGET",
    "INTERRUPTED",
    "ATTEMPT_PREFIX",
    "AttemptRecorder",
    "Checked",
    "EVALUATION_DOCUMENT",
    "STAGED_SECRETS_DOCUMENT",
    "EvaluationTotals",
    "RecordingScoring",
    "STOPPED_STATUSES",
    "ShardReport",
    "Staged",
    "adapter_lent",
    "attempt_document",
    "attempt_document_name",
    "check_judge_credentials",
    "check_launch",
    "estimate_run",
    "evaluate",
    "evaluate_recorded",
    "merge_reports",
    "new_attempt_token",
    "preflight",
    "recording_path",
    "recording_scoring",
    "replays_as_recorded",
    "shard_budget",
    "shard_share",
    "staged_inputs",
    "staged_recording_of",
    "take_adapter",
    "unfinished_attempts",
    "unit_shard_ranges",
]
