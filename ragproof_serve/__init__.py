"""The results browser: ``ragproof serve`` and ``ragproof label`` (CONTRACT section 22).

A Starlette app over the page data and rendering of ``ragproof_core.present``,
bound to 127.0.0.1 and answering its own address only (``guard``). It reads
the store directly, like ``ragproof report`` and ``compare``: no Dagster.
"""

from ragproof_serve.app import Browser, build_app
from ragproof_serve.server import PortInUse, serve

__all__ = ["Browser", "PortInUse", "build_app", "serve"]
