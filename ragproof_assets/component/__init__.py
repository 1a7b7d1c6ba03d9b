"""``ragproof_assets.EvaluationSuite``: ragproof inside a team's own Dagster project."""
