"""Configuration: the run settings read from ragproof.toml, flags and the environment."""
