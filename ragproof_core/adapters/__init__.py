# What the other layers use; inside this package, modules import each other directly.
from ragproof_core.adapters.loading import AdapterLoadError, load_adapter
from ragproof_core.adapters.runner import close_adapter, run_adapter

__all__ = [
    "AdapterLoadError",
    "close_adapter",
    "load_adapter",
    "run_adapter",
]
