"""The class of ragproof's own the dagster.yaml of a home it creates names: the compute
log manager (compute_logs.py). Its storages are Dagster's own (ragproof_cli/instance.py)."""
