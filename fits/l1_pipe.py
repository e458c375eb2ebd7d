"""The L1 cost of what a warp issues, an experiment beside MODEL.md §4's
half-warp count (issue 21, part 2; :func:`l1_pipe_cycles_per_warp_lup`,
which ``fits/l1_evidence.py`` compares with the half-warp count), and its
check against the public A100 L1 stride benchmark (``python
fits/l1_pipe.py [GPU]``, default ``a100``): the evidence and the fit behind
:data:`TAG_CYCLES_PER_LINE`.

``shared/data/microbench/l1_strides/<gpu>.csv`` (te42kyfo/gpu-benches
1c36d50) measures one warp-wide load instruction from the L1 for float and
double: lanes ``stride`` elements apart, or 2-D blocks ``w x (1024 / w)``
over rows of 4098 elements. For each pattern the script counts, from the
addresses alone, the data wavefronts (32 banks of 4 B, passes of 128 B:
a warp of floats, half warps of doubles; :func:`pass_wavefronts`)
and the distinct 128 B lines, and compares them with the measured
wavefront counter and cycles. The tag cost per further line is the least
squares slope of ``cycles - 1`` over ``lines - 1`` on the rows whose data
stage needs one wavefront per pass; the model is then
``max(wavefronts, 1 + slope * (lines - 1))`` on every row.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from warpspeed.validation.reference import shared_dir
from warpspeed.volumes.sampling import (
    WARP,
    Sample,
    shift_groups,
    shifted_distinct_sum,
    sorted_rows,
)

#: Bytes the L1 data stage delivers per wavefront: 32 banks of 4 B.
PIPE_BANKS = 32
PIPE_WORD = 4
LINE = 128
#: Tag-stage cycles per further 128 B line a warp instruction touches,
#: least squares (0.283) over the A100 rows of the public L1 stride benchmark
#: (``fits/l1_pipe.py``, ``shared/data/microbench/l1_strides/a100.csv``,
#: te42kyfo/gpu-benches 1c36d50) where the data stage needs one wavefront.
TAG_CYCLES_PER_LINE = 0.28


def lanes_per_pass(itemsize: int) -> int:
    """Lanes the L1 serves per data pass: 128 B worth of elements, at most a
    warp (a double instruction runs as two half warps)."""
    return min(32, LINE // max(itemsize, PIPE_WORD))


def pass_wavefronts(addresses: np.ndarray, active: np.ndarray, itemsize: int) -> np.ndarray:
    """Data wavefronts of each pass (rows of ``lanes_per_pass`` lanes, shape
    (..., lanes)): the most distinct 4 B words that fall in one of the 32
    banks (a lane of an ``itemsize``-byte element covers ``itemsize / 4``
    words; lanes reading one word share it); 0 without an active lane."""
    per = max(1, itemsize // PIPE_WORD)
    words = (addresses // PIPE_WORD)[..., None] + np.arange(per)
    act = np.broadcast_to(active[..., None], words.shape)
    flat_w = words.reshape(*words.shape[:-2], -1)
    flat_a = act.reshape(flat_w.shape)
    w = sorted_rows(flat_w, flat_a)
    new = np.ones(w.shape, dtype=bool)
    new[..., 1:] = w[..., 1:] != w[..., :-1]
    rows = np.arange(w.size // w.shape[-1]).reshape(w.shape[:-1])
    bank = np.where(new, w % PIPE_BANKS, PIPE_BANKS)
    counts = np.bincount((rows[..., None] * (PIPE_BANKS + 1) + bank).ravel(),
                         minlength=rows.size * (PIPE_BANKS + 1))
    conflicts = counts.reshape(*rows.shape, PIPE_BANKS + 1)[..., :PIPE_BANKS].max(axis=-1)
    return np.where(active.any(axis=-1), conflicts, 0)


def warp_pipe_cycles(lines: np.ndarray, wavefronts: np.ndarray,
                     tag_cycles: float = TAG_CYCLES_PER_LINE) -> np.ndarray:
    """Cycles of one warp instruction: its data wavefronts or its tag
    lookups, ``1 + tag_cycles * (lines - 1)``, whichever is more."""
    return np.maximum(wavefronts, 1.0 + tag_cycles * (lines - 1))


def l1_pipe_cycles_per_warp_lup(s: Sample, tag_cycles: float = TAG_CYCLES_PER_LINE) -> float:
    """L1 cycles per 32 lattice updates from what each warp issues
    (issue 21, part 2; an alternative to MODEL.md §4's half-warp count):
    per warp instruction :func:`warp_pipe_cycles` of its distinct 128 B
    lines and its data wavefronts (:func:`pass_wavefronts`, passes of
    :func:`lanes_per_pass` lanes), summed over instructions and warps,
    per active thread times 32, divided by the updates per thread.

    A warp with idle lanes (a block x-extent of 16 floats over two rows, a
    block of 16 threads) costs what a full one costs and does less: this
    is the half-speed of half-warp blocks that the 1 KiB rule of §4 cannot
    see for 4 B elements. Instructions one multiple of 4 B apart share
    their wavefronts (the banks are permuted); lines are counted per
    instruction (:func:`warpspeed.volumes.sampling.shifted_distinct_sum`).
    ``tag_cycles`` is the cost of each further line (the micro-benchmark's
    slope by default; ``fits/l1_evidence.py`` scans it)."""
    nb, threads = s.active.shape
    warps = threads // WARP
    act = s.active.reshape(nb, warps, WARP)
    any_active = act.any(axis=-1)
    total = np.zeros(nb)
    by_size: dict[int, list[int]] = {}
    for k, acc in enumerate(s.accesses):
        by_size.setdefault(acc.field.itemsize, []).append(k)
    groups = [(rep, shifts, size) for size, ks in by_size.items()
              for rep, shifts in shift_groups(s, ks, PIPE_WORD)]
    for rep, shifts, itemsize in groups:
        lanes = lanes_per_pass(itemsize)
        a = rep.reshape(nb, warps, WARP // lanes, lanes)
        wf = pass_wavefronts(a, act.reshape(a.shape), itemsize).sum(axis=-1)  # (nb, warps)
        rows = sorted_rows(rep.reshape(nb, warps, WARP), act)
        # max(wf, 1 + t (n - 1)) = 1 + t (max(n, 1 + (wf - 1) / t) - 1)
        floor = 1.0 + (wf - 1.0) / tag_cycles
        n_sum = shifted_distinct_sum(rows, any_active, shifts, LINE, at_least=floor)
        members = len(shifts) * any_active
        total += (members + tag_cycles * (n_sum - members)).sum(axis=1)
    threads_active = s.active.sum(axis=1)
    return float(np.sum(total * s.weights) / np.sum(threads_active * s.weights)
                 * WARP / s.lups_per_thread)



def pattern_addresses(kind: str, itemsize: int, param: int, pitch: int) -> np.ndarray:
    """Byte addresses of one warp's 32 lanes in a benchmark pattern."""
    lane = np.arange(32)
    if kind == "stride":
        return lane * param * itemsize
    return ((lane // param) * pitch + lane % param) * itemsize


def counts(kind: str, itemsize: int, param: int, pitch: int) -> tuple[int, int]:
    """(data wavefronts, distinct 128 B lines) of one warp instruction."""
    a = pattern_addresses(kind, itemsize, param, pitch)
    lanes = lanes_per_pass(itemsize)
    wf = pass_wavefronts(a.reshape(-1, lanes), np.ones((32 // lanes, lanes), bool), itemsize)
    return int(wf.sum()), len(np.unique(a // LINE))


def rows(gpu: str = "a100") -> list[dict[str, object]]:
    path = shared_dir() / "data" / "microbench" / "l1_strides" / f"{gpu}.csv"
    out = []
    with Path(path).open() as fh:
        for r in csv.DictReader(fh):
            itemsize = 4 if r["type"] == "float" else 8
            wf, lines = counts(r["pattern"], itemsize, int(r["stride_or_width"]),
                               int(r["stride_or_pitch"]))
            out.append({**r, "itemsize": itemsize, "wf": wf, "lines": lines,
                        "cycles": float(r["cycles_per_warp_load"]),
                        "lsu": float(r["lsu_wavefronts_per_warp_load"])})
    return out


def fit_slope(data: list[dict[str, object]]) -> float:
    """Least squares slope through the origin of ``cycles - 1`` over
    ``lines - 1`` where one wavefront per pass suffices."""
    sel = [r for r in data if r["wf"] == 32 // lanes_per_pass(r["itemsize"])  # type: ignore[arg-type]
           and r["lines"] > 1]  # type: ignore[operator]
    x = np.array([r["lines"] for r in sel], float) - 1
    y = np.array([r["cycles"] for r in sel], float) - 1
    return float(x @ y / (x @ x))


def main(argv: list[str]) -> int:
    gpu = argv[0] if argv else "a100"
    data = rows(gpu)
    slope = fit_slope(data)
    err = []
    print("type pattern param | wavefronts (counter) | lines | cycles measured, model")
    for r in data:
        model = max(r["wf"], 1 + slope * (r["lines"] - 1))  # type: ignore[operator]
        err.append(abs(model / r["cycles"] - 1))  # type: ignore[operator]
        print(f"{r['type']:6s} {r['pattern']:6s} {r['stride_or_width']:>3s} | "
              f"{r['wf']:3d} ({r['lsu']:5.2f}) | {r['lines']:3d} | "
              f"{r['cycles']:6.2f} {model:6.2f}")
    agree = np.mean([r["wf"] == round(r["lsu"]) for r in data])  # type: ignore[arg-type]
    print(f"tag cycles per further line: {slope:.3f}; wavefronts equal the counter on "
          f"{100 * agree:.0f} % of rows; cycles MAPE {100 * np.mean(err):.1f} % "
          f"over {len(data)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
