# What the other layers use; inside this package, modules import each other directly.
from ragproof_core.judge.estimating import EstimatingJudge, cost_lines
from ragproof_core.judge.factory import make_judge
from ragproof_core.judge.jury import JuryJudge, combine, gather_all, run_judged, score_metric
from ragproof_core.judge.ledger import JudgeLedger, judge_ledger
from ragproof_core.judge.prompts import GENERATION_PROMPT_NAMES, PROMPT_NAMES
from ragproof_core.judge.reply_cache import input_hash
from ragproof_core.judge.session import JudgeStats, LiteLLMJudge
from ragproof_core.judge.types import BudgetExceeded, Judge, JudgeVerdict
from ragproof_core.judge.usage import attributed_to

__all__ = [
    "BudgetExceeded",
    "EstimatingJudge",
    "GENERATION_PROMPT_NAMES",
    "Judge",
    "JudgeLedger",
    "JudgeStats",
    "JudgeVerdict",
    "JuryJudge",
    "LiteLLMJudge",
    "PROMPT_NAMES",
    "attributed_to",
    "combine",
    "cost_lines",
    "gather_all",
    "input_hash",
    "judge_ledger",
    "make_judge",
    "run_judged",
    "score_metric",
]
