"""Schedules of evaluation runs."""
