"""The 15x15 convolution scan on three GPUs against the default model
(``python fits/convolution_crossgpu.py [GPU ...]``): per GPU, Spearman,
top-1 (the measured GLup/s of the predicted best over the measured best),
median predicted/measured and MAPE over all rows, the unguarded rows and the
guarded rows (MODEL.md §1 ``output_guards``: the scan's family guards every
output separately unless the block times the tile divides 4096).

Data: ``shared/data/a100/convolution_15x15.csv`` (A100, 30 shapes) and
``shared/data/crossgpu/convolution_15x15_{a4000,w7800}.csv`` (RTX A4000,
Radeon PRO W7800: 60 shapes each). Nothing is fitted here.

The RTX A4000 and the W7800 have no machine file yet: they are described
from their data sheets (``crossgpu/README.md``: SMs, clock, DRAM peak, L2,
Infinity Cache) on a shipped file of the same architecture (A40: GA102, like
the A4000's GA104; RX 7900 XTX: RDNA3, like the W7800's Navi 31): counts
and clock replace the file's, the DRAM plateaus and the L2 bandwidth scale
with the data-sheet peaks and with SMs times clock, the Infinity Cache's
bandwidth with its size and clock. An interim stand-in for a machine
command of the project that does this properly.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import warpspeed as ws
from stencils import convolution2d
from warpspeed.validation.reference import shared_dir

N = 4096  # the scan's output extent


@dataclass(frozen=True)
class Sheet:
    """A GPU's data-sheet figures and the shipped file of its architecture."""

    like: str
    sms: int
    clock_ghz: float
    dram_gbs: float
    like_dram_gbs: float
    l2_mib: float
    mall_mib: float = 0.0


#: crossgpu/README.md's figures; the like-file's data-sheet DRAM peak.
SHEETS = {
    "RTXA4000": Sheet("A40", 48, 1.56, 448.0, 696.0, 4.0),
    "W7800": Sheet("RX7900XTX", 70, 2.499, 576.0, 960.0, 6.0, 64.0),
}
FILES = {
    "A100": "a100/convolution_15x15.csv",
    "RTXA4000": "crossgpu/convolution_15x15_a4000.csv",
    "W7800": "crossgpu/convolution_15x15_w7800.csv",
}


def machine(name: str) -> ws.Machine:
    """A shipped machine, or one described from its data sheet (module docstring)."""
    if name not in SHEETS:
        return ws.load_machine(name)
    s = SHEETS[name]
    m = ws.load_machine(s.like)
    k = s.dram_gbs / s.like_dram_gbs
    c = s.sms * s.clock_ghz / (m.sms * m.clock_ghz)
    kw: dict[str, object] = dict(
        name=name, sms=s.sms, clock_ghz=s.clock_ghz, l2_bytes=int(s.l2_mib * 2**20),
        dram_bandwidth=m.dram_bandwidth * k, dram_bw_read=m.dram_bw_read * k,  # type: ignore[operator]
        dram_bw_copy=m.dram_bw_copy * k, dram_bw_write=m.dram_bw_write * k,  # type: ignore[operator]
        l2_bandwidth=m.l2_bandwidth * c)
    if s.mall_mib:
        kw.update(mall_bytes=int(s.mall_mib * 2**20),
                  mall_bandwidth=m.mall_bandwidth * s.mall_mib / (m.mall_bytes / 2**20)
                  * s.clock_ghz / m.clock_ghz)
    return replace(m, **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Row:
    block: tuple[int, int, int]
    tile: tuple[int, int]
    measured: float

    @property
    def unguarded(self) -> bool:
        """The scan family's switch (``shared/data/a100`` README, "Guards")."""
        return N % (self.block[0] * self.tile[0]) == 0 and N % (self.block[1] * self.tile[1]) == 0


def rows(gpu: str) -> list[Row]:
    """The measured configurations of ``gpu``'s scan."""
    path = Path(shared_dir()) / "data" / FILES[gpu]
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    return [Row((int(r["bx"]), int(r["by"]), 1), (int(r["tile_x"]), int(r["tile_y"])),
                float(r["meas_GLup_per_s"])) for r in csv.DictReader(lines)]


def predict(gpu: str, data: list[Row]) -> list[float]:
    """Default-model GLup/s of every row (nan where it cannot launch)."""
    m = machine(gpu)
    kernels = {t: convolution2d.kernel(tile_x=t[0], tile_y=t[1]) for t in {r.tile for r in data}}
    out = []
    for r in data:
        try:
            out.append(ws.predict(kernels[r.tile], m, block=r.block).glups)
        except ws.WarpspeedError:
            out.append(float("nan"))
    return out


def scores(pred: list[float], meas: list[float]) -> dict[str, float]:
    """Spearman, top-1, median predicted/measured and MAPE."""
    from scipy.stats import spearmanr

    p, m = np.array(pred), np.array(meas)
    ok = np.isfinite(p)
    p, m = p[ok], m[ok]
    ratio = p / m
    return {"rows": float(len(p)), "spearman": float(spearmanr(p, m)[0]),
            "top1": float(m[int(np.argmax(p))] / m.max()),
            "median": float(np.median(ratio)), "mape": float(np.mean(np.abs(ratio - 1.0)))}


def table(gpu: str) -> list[tuple[str, dict[str, float]]]:
    """The scores of ``gpu`` over all, unguarded and guarded rows."""
    data = rows(gpu)
    pred = predict(gpu, data)
    out = []
    for label, keep in (("all", lambda r: True), ("unguarded", lambda r: r.unguarded),
                        ("guarded", lambda r: not r.unguarded)):
        sel = [i for i, r in enumerate(data) if keep(r)]
        out.append((label, scores([pred[i] for i in sel], [data[i].measured for i in sel])))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gpus", nargs="*", help=f"of {list(FILES)} (default: all)")
    args = ap.parse_args(argv)
    gpus = args.gpus or list(FILES)
    unknown = [g for g in gpus if g not in FILES]
    if unknown:
        ap.error(f"unknown GPU {unknown}: choose from {list(FILES)}")
    try:
        tables = [(g, table(g)) for g in gpus]
    except FileNotFoundError as exc:
        print(f"missing data: {exc.filename}", file=sys.stderr)
        return 2
    print("| GPU | rows | n | Spearman | top-1 | median pred/meas | MAPE |")
    print("|---|---|---|---|---|---|---|")
    for gpu, t in tables:
        for label, s in t:
            print(f"| {gpu} | {label} | {s['rows']:.0f} | {s['spearman']:.2f} | {s['top1']:.2f} "
                  f"| {s['median']:.2f} | {100 * s['mape']:.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
