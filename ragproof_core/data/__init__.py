"""Datasets: reading and validating cases, and importing them from other formats."""
