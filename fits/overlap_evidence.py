"""What the development sets and the stream micro-benchmarks say about the
overlap of core work with the memory stream and about the L2 time
(``python fits/overlap_evidence.py``; MODEL.md §10, §11; issue "core work
and memory overlap as the hardware does").

Three hypotheses are put to the data; nothing here changes the model.

1. **Latency hiding by what the SM keeps in flight.** Memory time is hidden
   by core work as far as the resident threads' outstanding loads cover
   the latency. In the model's Little's law (``warpspeed.timing.memory``)
   that is a longer residence: a block's threads start together, and the
   last warp's loads leave the SM only after the L1 pipe has issued the
   whole block, ``block threads * t_core * SMs`` ns (the whole-GPU time per
   update spread over one SM). That issue time is added to the turnover,
   the DRAM bandwidth solved again, and the time per update is the larger
   of core and memory time (no exponent). Printed per set: MAPE, median
   predicted/measured, Spearman, against the p-norm of the model at its
   machine exponent and at ``p -> inf`` (roofline).
2. **L2 time with the DRAM fill traffic.** Every byte from DRAM passes the
   L2 too: ``t_L2 = (L2 load + L2 store + DRAM load + DRAM store) /
   l2_bandwidth``. Printed for the V100 radius-4 star: per row the
   measured DRAM and L2 throughput (measured load volumes times measured
   GLup/s),
   with and without the fill, against the L2 bandwidth of the machine file.
3. **The star's DRAM-bound rows as a sum.** Per row the measured time per
   update against ``t_dram``, ``t_dram + t_l1`` and the model's p-norm.

And the stream micro-benchmarks' 1D stencils (``shared/data/microbench``):
the 3- and 5-point stencils against the copy (scale) at full occupancy,
and the core/memory ratio the model gives such a kernel (doubles, block
1024), with what each exponent would charge there.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

import warpspeed as ws
from warpspeed.timing import parameter
from warpspeed.timing.latency import kernel_time_ns, memory_params, overlap
from warpspeed.timing.memory import achieved_bandwidth
from warpspeed.validation.reference import ReferenceDataError, Row, predictions
from warpspeed.validation.transfer import DEV_SETS

STREAM = Path(__file__).resolve().parents[2] / "shared" / "data" / "microbench" / "stream"


def issue_time_ns(block: Sequence[int], terms: dict[str, float], sms: int) -> float:
    """The time the L1 (or FP) pipe of one SM needs for one block's core
    work: ``block threads * max(t_l1, t_fp) * SMs`` (hypothesis 1)."""
    return math.prod(block) * max(terms["t_l1_ns"], terms["t_fp_ns"]) * sms


def in_flight_glups(p: ws.Prediction, m: ws.Machine) -> float:
    """GLup/s of hypothesis 1: the block's issue time lengthens the
    residence of Little's law, then ``max(core, memory)``."""
    t, v = p.terms, p.volumes
    mem = memory_params(m, t["dram_stream_efficiency"])
    mem = dataclasses.replace(mem, turnover_ns=mem.turnover_ns + issue_time_ns(p.block, t, m.sms))
    dram = v.dram_load + v.dram_store
    t_dram = dram / achieved_bandwidth(mem, t["dram_bytes_in_flight"], v.dram_load / dram)
    t_upd = max(t["t_l1_ns"], t["t_fp_ns"], t["t_l2_ns"], t_dram)
    total = kernel_time_ns(t_upd, t["updates"], t["waves"], 1000 * t["block_chain_us"],
                           1000 * t["launch_us"])
    return t["updates"] / total


def pnorm_glups(p: ws.Prediction, exponent: float) -> float:
    """The model's GLup/s with another L1 overlap exponent."""
    t = p.terms
    t_upd = max(overlap(t["t_fp_ns"], t["t_memory_ns"], t["fp_overlap_exponent"]),
                overlap(t["t_l1_ns"], t["t_memory_ns"], exponent))
    total = kernel_time_ns(t_upd, t["updates"], t["waves"], 1000 * t["block_chain_us"],
                           1000 * t["launch_us"])
    return t["updates"] / total


def scores(pred: Sequence[float], meas: Sequence[float]) -> str:
    q = np.array(pred) / np.array(meas)
    rho = spearmanr(pred, meas)[0]
    return f"MAPE {100 * np.mean(abs(q - 1)):5.1f} %, median {np.median(q):.3f}, Spearman {rho:.3f}"


def star_rows(preds: Sequence[ws.Prediction], measured: Sequence[float], m: ws.Machine,
              data: Sequence[Row] = ()) -> list[str]:
    """Hypotheses 2 and 3 on the V100 radius-4 star, one line per row;
    the load volumes are the measured ones where ``data`` has them (the
    stores, 8 B per update, are the model's)."""
    loads = {r.block: (r.dram_load, r.l2_load) for r in data}
    lines = ["block | meas ps | t_l1 | t_l2 | t_dram | dram+l1 | p-norm | DRAM GB/s | "
             f"L2 GB/s | L2+fill GB/s (L2 bandwidth {m.l2_bandwidth:.0f})"]
    for p, g in sorted(zip(preds, measured), key=lambda x: -x[1]):
        t, v = p.terms, p.volumes
        d_load, l2_load = loads.get(p.block, (None, None))
        dram = (v.dram_load if d_load is None else d_load) + v.dram_store
        l2 = (v.l2_load if l2_load is None else l2_load) + v.l2_store
        ps = 1000.0
        lines.append(
            f"{p.block} | {ps / g:5.1f} | {ps * t['t_l1_ns']:5.1f} | {ps * t['t_l2_ns']:5.1f} | "
            f"{ps * t['t_dram_ns']:5.1f} | {ps * (t['t_dram_ns'] + t['t_l1_ns']):5.1f} | "
            f"{ps * t['t_update_ns']:5.1f} | {dram * g:4.0f} | {l2 * g:4.0f} | "
            f"{(l2 + dram) * g:4.0f}")
    return lines


def stream_lines() -> list[str]:
    """The 1D stencils of the stream tables against the copy, and the
    model's core/memory ratio for such a kernel."""
    out = []
    for gpu, machine in (("v100", "V100"), ("a100_40", "A100")):
        path = STREAM / f"{gpu}.csv"
        if not path.is_file():
            out.append(f"{gpu}: {path} not found")
            continue
        with path.open() as fh:
            last = list(csv.DictReader(fh))[-1]
        m = ws.load_machine(machine)
        for name, width in (("3pt", 1), ("5pt", 2)):
            loss = float(last["scale_GBs"]) / float(last[f"{name}_GBs"]) - 1
            n = 1 << 26
            a = ws.Field("A", shape=(n + 2 * width,))
            b = ws.Field("B", shape=(n + 2 * width,))
            x = ws.tidx
            k = ws.Kernel(loads=[a[x + width + d] for d in range(-width, width + 1)],
                          stores=[b[x + width]], domain=(n,), fp_ops={"fma": 2 * width + 1})
            t = ws.predict(k, m, (1024, 1, 1)).terms
            r = t["t_l1_ns"] / t["t_memory_ns"]
            charged = ", ".join(f"p = {e:g}: {100 * (overlap(r, 1.0, e) - 1):.1f} %"
                                for e in (float(parameter(m, "overlap_exponent")), 2.0, 3.0))
            out.append(f"{gpu} {name}: measured loss against scale {100 * loss:+.1f} %; model "
                       f"core/memory {r:.2f}; a p-norm charges {charged}")
    return out


def main() -> int:
    try:
        sets = {d.name: (d, [r for r in d.load() if r.glups]) for d in DEV_SETS}
        print("1. what the SM keeps in flight, no exponent (block issue time in the "
              "residence), against the p-norm")
        star = None
        for name, (dev, data) in sets.items():
            m = ws.load_machine(dev.machine)
            preds = predictions("latency", data, m)
            meas = [float(r.glups) for r in data]  # type: ignore[arg-type]
            print(f"  {name}: in flight: {scores([in_flight_glups(p, m) for p in preds], meas)}")
            for e in (float(parameter(m, "overlap_exponent")), 2.0, 1e3):
                print(f"  {name}: p-norm {e:g}: {scores([pnorm_glups(p, e) for p in preds], meas)}")
            if name == "star3d_r4":
                star = (preds, meas, m, data)
    except ReferenceDataError as exc:
        print(exc, file=sys.stderr)
        return 2
    if star is not None:
        print("\n2./3. V100 radius-4 star, per row (ps per update; throughputs at the measured "
              "speed)")
        print("\n".join(star_rows(*star)))
    print("\n1D stencils of the stream micro-benchmark at full occupancy (1024-thread blocks)")
    print("\n".join(stream_lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
