"""Gompertz capacity curves: evaluation, loading from ``fits/`` and fitting
(MODEL.md §7 and §9).

Every curve is ``g(x) = a * exp(-b * exp(-c * (x - x0)))``, or ``1 - g(x)``
when ``complement`` is set (the store-eviction curve ``s``).
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

import numpy as np

from ..errors import FitError
from ..machine import Machine
from ..tomlfile import read_versioned_toml

CURVES = ("m1", "h_xy", "h_z", "s", "m2")
#: The versions of the fits-file format :func:`load_fits` reads (MODEL.md §7); a
#: file without ``format_version`` (written before the key existed) is version 1.
FORMAT_VERSIONS = (1,)
#: The version the writer writes (``warpspeed.validation.refit``).
FORMAT_VERSION = FORMAT_VERSIONS[-1]


@functools.cache
def fits_dir() -> Path:
    """The ``fits/`` folder: inside the package when installed from a wheel,
    else beside it at the top of the repository (editable installs); looked
    up once per process (the package does not move while it runs)."""
    package = Path(__file__).parents[1]  # warpspeed/, above volumes/
    inside = package / "fits"
    return inside if inside.is_dir() else package.parent / "fits"


@dataclass(frozen=True)
class Gompertz:
    """One capacity curve (MODEL.md §7)."""

    a: float
    b: float
    c: float
    x0: float = 0.0
    complement: bool = False

    def __call__(self, x: float) -> float:
        g = self.a * math.exp(-self.b * math.exp(-self.c * (x - self.x0)))
        return 1.0 - g if self.complement else g


@dataclass(frozen=True)
class CapacityFits:
    """The five curves of one machine, with the provenance of the constants."""

    m1: Gompertz
    h_xy: Gompertz
    h_z: Gompertz
    s: Gompertz
    m2: Gompertz
    source: str
    path: str


def load_fits(name_or_path: str | Path) -> CapacityFits:
    """Curves from ``fits/NAME.toml`` or from a path to such a file."""
    text = str(name_or_path)
    path = _NAMED.get(text)  # a name's file (fixed: the package does not move)
    if path is None:
        path = Path(text)
        if not (path.suffix == ".toml" and path.is_file()):
            if path.suffix != ".toml" and len(_NAMED) < 256:
                _NAMED[text] = fits_dir() / f"{text}.toml"  # whatever the files are
            path = fits_dir() / f"{text}.toml"
    try:
        stat = os.stat(path)  # one system call: whether it is a file, and its version
    except OSError:
        stat = None
    if stat is None or not S_ISREG(stat.st_mode):
        known = sorted(p.stem for p in fits_dir().glob("*.toml"))
        raise FitError(f"unknown capacity fits {text!r}; known: {', '.join(known)} (or a path)")
    version = (stat.st_mtime_ns, stat.st_size)
    read = _READ.get(path)
    if read is None or read[0] != version:
        read = _READ[path] = (version, _read_fits(path))
    return read[1]


#: The files of names given to :func:`load_fits` (not paths to files).
_NAMED: dict[str, Path] = {}

#: Curves already read, by file, with the version of the file they were read
#: from (modification time, size): every prediction asks for them, and parsing
#: the TOML again cost 0.2 ms of a ~3 ms prediction; an edited file is read again.
_READ: dict[Path, tuple[tuple[int, int], CapacityFits]] = {}


def _read_fits(path: Path) -> CapacityFits:
    """The curves of the file ``path``, each checked."""
    data = read_versioned_toml(path, "capacity fits file", FORMAT_VERSIONS, FitError)
    curves = {}
    for name in CURVES:
        entry = data.get(name)
        if not isinstance(entry, dict):
            raise FitError(f"capacity fits file {path}: missing table [{name}]")
        try:
            curves[name] = Gompertz(
                a=float(entry["a"]),
                b=float(entry["b"]),
                c=float(entry["c"]),
                x0=float(entry.get("x0", 0.0)),
                complement=bool(entry.get("complement", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise FitError(
                f"capacity fits file {path}: [{name}] needs numbers a, b, c (and optional x0)"
            ) from exc
    return CapacityFits(source=str(data.get("source", "")), path=str(path), **curves)


def curves_for(machine: Machine, fits: str | Path | CapacityFits | None = None
               ) -> CapacityFits:
    """The capacity curves a prediction of ``machine`` uses (MODEL.md §7):
    ``fits`` when given (curves, a name of ``fits/`` or a path), else the
    machine file's ``fits``."""
    return fits if isinstance(fits, CapacityFits) else load_fits(fits or machine.fits)


def fit_gompertz(
    x: np.ndarray,
    y: np.ndarray,
    x0: float = 0.0,
    complement: bool = False,
    guess: tuple[float, float, float] = (1.0, 1.0, 1.0),
) -> tuple[Gompertz, float]:
    """Least-squares fit of a :class:`Gompertz` curve to measured fractions
    (MODEL.md §9) with scipy's ``curve_fit``. Returns the curve and its
    root-mean-square error on the data."""
    from scipy.optimize import curve_fit

    try:
        xs = np.asarray(x, dtype=float)
        ys = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as exc:
        raise FitError(f"x and y must be sequences of numbers: {exc}") from None
    if xs.ndim != 1 or xs.shape != ys.shape or xs.size < 3:
        raise FitError("fitting needs at least three (x, y) pairs of equal length")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise FitError("x and y must be finite numbers (a NaN or infinity was given)")
    target = 1.0 - ys if complement else ys

    def g(t: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
        # the optimiser tries steep curves whose inner exponential overflows:
        # infinity is the right limit there (g -> 0 or a), not a warning
        with np.errstate(over="ignore", invalid="ignore"):
            return a * np.exp(-b * np.exp(-c * (t - x0)))

    try:
        params, _ = curve_fit(g, xs, target, p0=guess, maxfev=20000)
    except RuntimeError as exc:
        raise FitError(f"the Gompertz fit did not converge: {exc}") from exc
    a, b, c = (float(p) for p in params)
    curve = Gompertz(a, b, c, x0=x0, complement=complement)
    rms = float(np.sqrt(np.mean((np.array([curve(v) for v in xs]) - ys) ** 2)))
    return curve, rms
