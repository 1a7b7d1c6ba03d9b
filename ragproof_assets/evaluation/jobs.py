"""ragproof's own evaluation: the asset factory at its defaults (``factory.py``), and its
job, every ragproof asset for one run partition."""

from ragproof_assets.evaluation.factory import build_evaluation

own_evaluation = build_evaluation()
evaluate_job = own_evaluation.job
