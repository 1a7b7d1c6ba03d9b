"""Production traces evaluated as they arrive: the ``trace_sensor`` (CONTRACT section 18)."""

from ragproof_assets.traces.sensor import trace_sensor

__all__ = ["trace_sensor"]
