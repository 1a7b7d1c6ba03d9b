"""Calibrating judge prompts against human scores: fixtures, agreement, labels and PPI."""
