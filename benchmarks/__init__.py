"""Benchmarks of ragproof: scripts, not tests (see benchmarks/README.md)."""
