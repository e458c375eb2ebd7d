"""Rebuild ``shared/data/a100/convolution_15x15.csv`` from its public source
(``python fits/convert_convolution.py A100.json.gz [--where KEY=VALUE ...] >
convolution_15x15.csv``; MODEL.md §9, ``warpspeed.validation.provenance``).

The source is the Kernel Tuner cache ``cachefiles/convolution_milo/A100.json.gz``
of github.com/AutoTuningAssociation/benchmark_hub (commit 8eeb99e, MIT). A
Kernel Tuner cache is a JSON object whose ``cache`` maps each configuration
to its tuning parameters, ``time`` (ms, or a string for a configuration that
did not compile or run) and ``times`` (the repetitions). The conversion is
the one the data's README states:

* only valid rows (a numeric ``time``) with plain global loads
  (``use_shmem = 0``) and ordinary loads (``read_only = 0``), plus any
  ``--where`` filter;
* ``time_ms_median32`` and ``time_ms_min32``: median and minimum of ``times``;
* ``meas_GLup_per_s`` = 4096² outputs / median time.

Two rows with the same block and tile after filtering are refused with the
parameter that tells them apart (add a ``--where`` for it).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

OUTPUTS = 4096 * 4096
KEYS = ("block_size_x", "block_size_y", "tile_size_x", "tile_size_y")
HEADER = ("# A100-PCIE-40GB, 2D 15x15 convolution (box stencil), float32, 4096x4096 outputs, "
          "plain global loads (use_shmem=0, read_only=0)")
COLUMNS = "bx,by,tile_x,tile_y,time_ms_median32,time_ms_min32,meas_GLup_per_s"


class ConversionError(ValueError):
    """The cache cannot be converted; the message says why."""


def load_cache(path: Path) -> Mapping[str, Mapping[str, object]]:
    """The ``cache`` object of a Kernel Tuner cache file (``.json`` or ``.json.gz``)."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt") as fh:  # type: ignore[operator]
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ConversionError(f"cannot read {path} as a Kernel Tuner cache: {exc}") from exc
    cache = data.get("cache") if isinstance(data, dict) else None
    if not isinstance(cache, dict):
        raise ConversionError(f"{path}: no 'cache' object: not a Kernel Tuner cache file")
    return cache


def convert(entries: Iterable[Mapping[str, object]], where: Mapping[str, int] | None = None
            ) -> list[tuple[int, int, int, int, float, float, float]]:
    """The CSV rows (module docstring), sorted by block and tile."""
    filters = {"use_shmem": 0, "read_only": 0, **(where or {})}
    rows: dict[tuple[int, ...], tuple[tuple[int, int, int, int, float, float, float],
                                      Mapping[str, object]]] = {}
    for e in entries:
        if not isinstance(e.get("time"), (int, float)):
            continue  # a configuration that did not compile or run
        if any(e.get(k) != v for k, v in filters.items()):
            continue
        try:
            key = tuple(int(e[k]) for k in KEYS)  # type: ignore[call-overload]
            times = [float(t) for t in e["times"]]  # type: ignore[union-attr]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConversionError(f"entry {dict(e)} lacks {exc}: not this kernel's cache"
                                  ) from exc
        med = statistics.median(times)
        row = (*key, med, min(times), OUTPUTS / (med * 1e-3) / 1e9)
        if key in rows:
            other = rows[key][1]
            differ = sorted(k for k in set(e) | set(other)
                            if k not in ("time", "times") and e.get(k) != other.get(k))
            raise ConversionError(
                f"two rows for block {key[:2]} tile {key[2:]} differ in {differ}: add "
                f"--where {differ[0] if differ else 'KEY'}=VALUE")
        rows[key] = (row, e)  # type: ignore[assignment]
    return [rows[k][0] for k in sorted(rows)]


def csv_text(rows: list[tuple[int, int, int, int, float, float, float]]) -> str:
    lines = [HEADER, COLUMNS]
    lines += [f"{bx},{by},{tx},{ty},{med:.6f},{low:.6f},{g:.4f}"
              for bx, by, tx, ty, med, low, g in rows]
    return "\n".join(lines) + "\n"


def _where(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            out[key] = int(value)
        except ValueError:
            raise ConversionError(f"--where needs KEY=INTEGER, got {item!r}") from None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path, help="A100.json.gz of benchmark_hub")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        rows = convert(load_cache(args.cache).values(), _where(args.where))
    except ConversionError as exc:
        print(f"convert_convolution: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(csv_text(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
