"""Configuration: the run settings read from ragproof.toml, flags and the environment, and
the typed run manifest a run records of them (``manifest.py``)."""
