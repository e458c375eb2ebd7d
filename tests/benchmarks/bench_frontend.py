"""Benchmark of the pystencils frontend (run as a script, not a test).

Budgets (issue 11): for any kernel, extraction plus one prediction within
1 s; the generation hook ``warpspeed.pystencils.create_kernel`` over the
default design space (1024 threads per block, folds none / 2y / 2z) of a
cumulant D3Q27 lbmpy kernel within 5 s on 2 cores. Kernels: lbmpy SRT
D3Q19 and cumulant D3Q27 pull kernels on 256^3 cells, and the three folded
variants of the paper's star (``stencils.star3d``). lbmpy's derivation of
the update rules is timed separately (it is not the frontend's).

Prints each time and whether its budget holds.
"""

from __future__ import annotations

import os
import sys
import time

import pystencils as ps
import sympy as sp

import warpspeed as ws
import warpspeed.pystencils as wps
from stencils import star3d

SHAPE = (258, 258, 258)
JOBS = int(os.environ.get("WARPSPEED_BENCH_JOBS", "2"))


def _rule(q: int) -> object:
    from lbmpy import LBMConfig, LBMOptimisation, LBStencil, Method, Stencil, create_lb_update_rule

    pdfs, tmp = (
        ps.Field.create_fixed_size(n, SHAPE + (q,), index_dimensions=1, layout="fzyx")
        for n in ("pdfs", "pdfs_tmp")
    )
    stencil, method = (Stencil.D3Q27, Method.CUMULANT) if q == 27 else (Stencil.D3Q19, Method.SRT)
    cfg = LBMConfig(stencil=LBStencil(stencil), method=method, compressible=True,
                    relaxation_rate=sp.Symbol("omega"))
    opt = LBMOptimisation(symbolic_field=pdfs, symbolic_temporary_field=tmp)
    return create_lb_update_rule(lbm_config=cfg, lbm_optimisation=opt)


def _verdict(seconds: float, budget: float) -> str:
    return f"{seconds:.3f} s (budget {budget:g} s): {'ok' if seconds <= budget else 'OVER'}"


def bench_lbm(name: str, q: int) -> None:
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    t0 = time.perf_counter()
    rule = _rule(q)
    t1 = time.perf_counter()
    kernel_function = ps.create_kernel(rule, cfg)
    t2 = time.perf_counter()
    ex = wps.extract(kernel_function)
    t3 = time.perf_counter()
    ws.predict(ex.kernel, "A100", (128, 2, 2))
    t4 = time.perf_counter()
    print(f"{name}: lbmpy update rule {t1 - t0:.2f} s, pystencils generation {t2 - t1:.2f} s")
    print(f"{name}: extraction {t3 - t2:.3f} s, one prediction {t4 - t3:.3f} s; together "
          + _verdict(t4 - t2, 1.0))
    print(f"{name}: {len(ex.kernel.loads)} loads, {len(ex.kernel.stores)} stores, "
          f"FP work {dict(ex.kernel.fp_ops)}")
    t5 = time.perf_counter()
    ranked = wps.create_kernel(rule, cfg, machine="A100", jobs=JOBS)
    t6 = time.perf_counter()
    best = ranked.ranking[0]
    print(f"{name}: hook over {len(ranked.ranking)} configurations with {JOBS} job(s) "
          + _verdict(t6 - t5, 5.0) + f"; best fold {best.fold} block {best.block}")


def bench_star() -> None:
    t0 = time.perf_counter()
    for fold in wps.DEFAULT_FOLDS:
        star3d.kernel(fold=fold)
    print("star3d: three folded variants (generation + extraction) "
          + _verdict(time.perf_counter() - t0, 3.0))


def main() -> None:
    bench_star()
    which = sys.argv[1:] or ["d3q19", "d3q27"]
    if "d3q19" in which:
        bench_lbm("SRT D3Q19", 19)
    if "d3q27" in which:
        bench_lbm("cumulant D3Q27", 27)


if __name__ == "__main__":
    main()
