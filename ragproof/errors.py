"""The errors ``ragproof``'s Python surface raises (CONTRACT section 26)."""

from __future__ import annotations

from ragproof_core.errors import UserError


class BadInput(UserError, ValueError):
    """Bad input (a dataset line, a config key, an adapter that cannot be built): the
    message is the one line ``ragproof run`` prints for it, ``ragproof: ...``, naming
    the file, line or key at fault. Nothing is stored."""


class InternalError(RuntimeError):
    """A bug in ragproof: the message is the command line's line, with its advice."""
