"""Integer triples x, y, z (block sizes, folds, grid points) and short lists
of integers (shapes, domains), read from text or from sequences: one grammar
and one error style for every front end (the command line, the web
calculator, measurement CSV files, Nsight Compute output, the pystencils
options).

**Text.** Integers of ASCII digits separated by ``,``, ``x`` or blanks,
optionally in one pair of parentheses or brackets: ``"256,1,2"``,
``"256x1x2"``, ``"256, 1, 2"``, ``"(256, 1, 2)"`` (as Nsight Compute prints
a block); a minus sign is read so that the error can say the value is out of
range. No other characters, at most :data:`MAX_DIGITS` digits per number
(unbounded text is never converted).

**Sequences.** Values equal to an integer (Python or NumPy integers,
``2.0``); ``2.5`` or ``"2"`` are refused, never rounded.

**Errors.** One line naming the input as the user wrote it (``--block``,
``grid_points``, ``the fold``), what it must be and the value given:
``--block must be three integers X,Y,Z like 256,1,2, got '32,4'``. The
caller chooses the exception class with ``error`` (called with the message:
``UsageError`` on the command line, ``KernelError`` in the pystencils front
end, ...); the default is :class:`ValueError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, cast

Triple = tuple[int, int, int]
ErrorClass = Callable[[str], Exception]

#: Most digits of one number in text (2**40 has 13).
MAX_DIGITS = 13

_NUMBER = re.compile(r"-?[0-9]+")
_SEPARATOR = re.compile(r"\s*[,x]\s*|\s+")


def _expected(count: int | None, pad: bool, text: bool) -> str:
    """What the input must be: ``three integers X,Y,Z like 256,1,2``."""
    if count == 1:
        return "an integer"
    if count == 3:
        if pad:
            return ("one to three integers X[,Y[,Z]] like 32,8,4" if text
                    else "one to three integers (x, y, z)")
        return "three integers X,Y,Z like 256,1,2" if text else "three integers (x, y, z)"
    if count is None:
        return "integers like 256,1,2" if text else "a sequence of integers"
    return f"{'up to ' if pad else ''}{count} integers"


def as_triple(values: Iterable[int]) -> Triple:
    """Three integers x, y, z, e.g. counted by :func:`parse_ints` or computed
    axis by axis from other triples, as a :data:`Triple` (a ValueError if
    they are not three)."""
    x, y, z = values
    return x, y, z


def _bounds(low: int, high: int | None) -> str:
    if high is not None:
        return f"must lie between {low} and {high}"
    return "must be positive integers" if low == 1 else f"must be integers of at least {low}"


def _checked(values: tuple[int, ...], shown: str, what: str, count: int | None, pad: bool,
             low: int, high: int | None, text: bool, error: ErrorClass) -> tuple[int, ...]:
    """``values`` counted, bounded and padded with 1s (the rule of both readers)."""
    if not values or count is not None and (
            len(values) > count or not pad and len(values) != count):
        raise error(f"{what} must be {_expected(count, pad, text)}, got {shown}")
    if any(v < low or high is not None and v > high for v in values):
        raise error(f"{what} {_bounds(low, high)}, got {shown}")
    if pad and count is not None:
        values = values + (1,) * (count - len(values))
    return values


def _tokens(text: str) -> list[str]:
    """The numbers of ``text`` (module docstring); empty if it holds anything else."""
    body = text.strip()
    if body[:1] + body[-1:] in ("()", "[]"):
        body = body[1:-1].strip()
    parts = _SEPARATOR.split(body) if body else []
    if any(not _NUMBER.fullmatch(p) or len(p.lstrip("-")) > MAX_DIGITS for p in parts):
        return []
    return parts


def parse_ints(text: str, what: str, *, count: int | None = None, pad: bool = False,
               low: int = 1, high: int | None = None,
               error: ErrorClass = ValueError) -> tuple[int, ...]:
    """Integers from ``text`` (module docstring): exactly ``count`` of them
    (any number if None; with ``pad``, one to ``count`` padded with 1s),
    each within ``[low, high]``. Raises ``error`` naming ``what``."""
    if not isinstance(text, str):
        raise error(f"{what} must be {_expected(count, pad, True)}, got {text!r}")
    values = tuple(int(p) for p in _tokens(text))
    return _checked(values, _shown(text.strip()), what, count, pad, low, high, True, error)


def _shown(text: str, most: int = 40) -> str:
    """``text`` quoted for an error, cut after ``most`` characters (one line)."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most]!r}... ({len(text)} characters)"


def parse_triple(text: str, what: str, *, pad: bool = False, high: int | None = None,
                 error: ErrorClass = ValueError) -> Triple:
    """Three positive integers x, y, z from ``text`` (with ``pad``, one to
    three padded with 1s), each at most ``high``."""
    return as_triple(parse_ints(text, what, count=3, pad=pad, high=high, error=error))


def triple_or_none(text: str | None) -> Triple | None:
    """Three positive integers from text another tool wrote (Nsight Compute's
    ``"(256, 1, 1)"``), or None where it holds none (``"n/a"``, empty)."""
    try:
        return parse_triple(text or "", "a triple")
    except ValueError:
        return None


def ints_of(values: object, what: str, *, count: int | None = None, pad: bool = False,
            error: ErrorClass = ValueError) -> tuple[int, ...]:
    """Positive integers from a sequence (module docstring), counted as
    :func:`parse_ints` counts them."""
    try:
        # whatever the caller gave: a value that is not a sequence of numbers
        # raises one of the errors caught here
        items = () if isinstance(values, (str, bytes)) else tuple(cast(Iterable[Any], values))
        ints = tuple(int(v) for v in items)
    except (TypeError, ValueError, OverflowError):
        items, ints = (), ()
    if any(isinstance(v, (str, bytes)) or v != i for v, i in zip(items, ints)):
        ints = ()
    return _checked(ints, repr(values), what, count, pad, 1, None, False, error)


def triple_of(values: object, what: str, *, error: ErrorClass = ValueError) -> Triple:
    """One to three positive integers x, y, z from a sequence, padded with 1s."""
    return as_triple(ints_of(values, what, count=3, pad=True, error=error))


__all__ = ["MAX_DIGITS", "Triple", "as_triple", "ints_of", "parse_ints", "parse_triple",
           "triple_of", "triple_or_none"]
