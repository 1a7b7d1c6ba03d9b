"""What the Dagster instance ragproof creates is configured with (its dagster.yaml)."""
