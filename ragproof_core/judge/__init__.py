"""The judge engine: client, prompts, caches, cost, rate limit, combined mode and
juries, with its settings; it knows nothing of metrics. What the other layers use is
exported here."""

from ragproof_core.judge.cost import (
    format_usd,
)
from ragproof_core.judge.environment import (
    check_credentials,
    credential_problem,
    judge_environment,
)
from ragproof_core.judge.estimating import (
    EstimatingJudge,
    cost_lines,
)
from ragproof_core.judge.factory import (
    make_judge,
)
from ragproof_core.judge.jury import (
    JuryJudge,
    combine,
    gather_all,
    run_judged,
    score_metric,
)
from ragproof_core.judge.ledger import (
    JudgeLedger,
    judge_ledger,
)
from ragproof_core.judge.pricing import (
    UNKNOWN_COST,
)
from ragproof_core.judge.prompts import (
    GENERATION_PROMPT_NAMES,
    PROMPT_NAMES,
    RUBRIC,
    Prompt,
    load_template,
    rubric_prompt,
)
from ragproof_core.judge.repeats import (
    REPEATS_KEY,
    RepeatedJudge,
    single_judges,
)
from ragproof_core.judge.reply_cache import (
    input_hash,
)
from ragproof_core.judge.session import (
    JudgeStats,
    LiteLLMJudge,
)
from ragproof_core.judge.settings import (
    JUDGE_BACKOFF_S,
    JUDGE_ENV_VARS,
    JUDGE_MAX_ATTEMPTS,
    JUDGE_MODES,
    JUDGE_TIMEOUT_S,
    JudgeEnv,
    JudgeSettings,
    judge_settings_dict,
    judge_settings_from_dict,
)
from ragproof_core.judge.types import (
    ABORTED_BUDGET,
    ABORTED_JUDGE,
    BudgetExceeded,
    Judge,
    JudgeStopped,
    JudgeUnavailable,
    JudgeVerdict,
)
from ragproof_core.judge.usage import (
    attributed_to,
)

__all__ = [
    "single_judges",
    "ABORTED_BUDGET",
    "ABORTED_JUDGE",
    "BudgetExceeded",
    "EstimatingJudge",
    "GENERATION_PROMPT_NAMES",
    "JUDGE_BACKOFF_S",
    "JUDGE_ENV_VARS",
    "JUDGE_MAX_ATTEMPTS",
    "JUDGE_MODES",
    "JUDGE_TIMEOUT_S",
    "Judge",
    "JudgeEnv",
    "JudgeLedger",
    "JudgeSettings",
    "JudgeStats",
    "JudgeStopped",
    "JudgeUnavailable",
    "JudgeVerdict",
    "JuryJudge",
    "REPEATS_KEY",
    "RepeatedJudge",
    "LiteLLMJudge",
    "PROMPT_NAMES",
    "Prompt",
    "RUBRIC",
    "UNKNOWN_COST",
    "attributed_to",
    "check_credentials",
    "combine",
    "cost_lines",
    "credential_problem",
    "format_usd",
    "gather_all",
    "input_hash",
    "judge_environment",
    "judge_ledger",
    "judge_settings_dict",
    "judge_settings_from_dict",
    "load_template",
    "make_judge",
    "rubric_prompt",
    "run_judged",
    "score_metric",
]
