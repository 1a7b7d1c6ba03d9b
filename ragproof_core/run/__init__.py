"""Running an evaluation: preflight, evaluating cases, shards and the dry run."""
