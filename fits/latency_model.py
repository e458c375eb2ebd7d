"""Fit the kernel-level constants of the default timing model on the V100
radius-4 star and report them (``python fits/latency_model.py``).

Three constants per machine may be fitted to kernel measurements (issue
"beyond the paper"); this script fits them, each bounded, on the GLup/s of
``shared/data/v100/star3d_r4.csv`` and nothing else:

* ``overlap_exponent`` ``p`` in [1, 4]: the p-norm of the core and memory
  times;
* ``tlb_reach_pages`` in [16, 512]: pages of 2 MiB one SM reaches without
  TLB misses;
* ``tlb_penalty`` in [0.01, 4]: relative DRAM time added per unit of
  missing fraction.

Everything else of the model comes from data sheets and micro-benchmarks.
To show that the fit does not memorise the rows, it also reports the
leave-one-out error: each row predicted with constants fitted on all other
rows. The fitted values are printed with the ones in the machine file; copy
them there (with the date and this script as the source) when they change.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from warpspeed.capacity import load_fits
from warpspeed.machine import Machine, load_machine
from warpspeed.model import block_stage, finish
from warpspeed.reference import kernel_for, rows
from warpspeed.timing.kernel_fit import KERNEL_CONSTANTS, fit_constants
from warpspeed.waves import wave_volumes

NAMES = tuple(KERNEL_CONSTANTS)


def prepared(machine: Machine) -> list[tuple[object, object, float]]:
    """Block stage, wave sets and measured GLup/s of every timed row."""
    out = []
    kernels: dict[object, object] = {}
    for r in rows("star3d_r4"):
        if r.glups is None:
            continue
        key = (r.params, r.fold)
        k = kernels.setdefault(key, kernel_for(r))
        st = block_stage(k, machine, r.block)  # type: ignore[arg-type]
        out.append((st, wave_volumes(k, st.launch, st.bound, address="linear"), r.glups))
    return out


def errors(x: np.ndarray, machine: Machine, data: list[tuple[object, object, float]]
           ) -> np.ndarray:
    """Relative errors of the predicted GLup/s for constants ``x``."""
    m = dataclasses.replace(machine, **dict(zip(NAMES, map(float, x))))
    curves = load_fits(m.fits)
    out = []
    for st, wave, meas in data:
        p = finish(dataclasses.replace(st, machine=m), wave, curves, "latency")  # type: ignore[type-var]
        out.append(p.glups / meas - 1.0)
    return np.array(out)


def fit(machine: Machine, data: list[tuple[object, object, float]]) -> np.ndarray:
    """Constants minimising the mean absolute relative error."""
    return fit_constants(lambda x: float(np.mean(np.abs(errors(x, machine, data)))))


def main() -> int:
    machine = load_machine("V100")
    data = prepared(machine)
    x = fit(machine, data)
    err = errors(x, machine, data)
    print(f"V100, star3d_r4: {len(data)} timed rows")
    for name, value in zip(NAMES, x):
        print(f"  {name:18s} fitted {value:8.3f}   machine file {getattr(machine, name)}")
    print(f"  in-sample GLup/s MAPE {100 * np.mean(np.abs(err)):.1f} %")
    loo = []
    for i in range(len(data)):
        xi = fit(machine, data[:i] + data[i + 1:])
        loo.append(errors(xi, machine, [data[i]])[0])
    print(f"  leave-one-out GLup/s MAPE {100 * np.mean(np.abs(loo)):.1f} % "
          f"(worst {100 * np.max(np.abs(loo)):.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
