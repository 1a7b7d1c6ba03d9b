"""Launching an evaluation from the Dagster UI."""
