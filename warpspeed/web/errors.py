"""The web calculator's errors, below every other module of the package
(:mod:`warpspeed.web` re-exports them)."""

from __future__ import annotations

from ..errors import WarpspeedError


class MissingExtraError(WarpspeedError):
    """Panel (the ``web`` extra) is not installed."""


class FieldError(WarpspeedError, ValueError):
    """Bad input in one form field: ``field`` is the
    :class:`~warpspeed.web.state.Form` attribute."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


__all__ = ["FieldError", "MissingExtraError"]
