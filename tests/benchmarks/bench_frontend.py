"""Benchmark of the pystencils frontend (run as a script, not a test).

Budgets: extracting the ws.Kernel of the allen_cahn_d3q15 pystencils kernel
(after imports, once the pystencils kernel exists) within 2 s; building all
three folded variants of star3d (pystencils generation + extraction) within
3 s. Prints the measured times and whether each budget holds.
"""

import time

from stencils import allen_cahn_d3q15, star3d
from stencils._common import build
from warpspeed.frontends.pystencils import kernel_from_pystencils


def _allen_cahn_kernel():
    shape = (256, 256, 256)
    from stencils._common import field

    g, g_tmp = field("g", shape, 1, 15), field("g_tmp", shape, 1, 15)
    phi, phi_tmp, u = field("phi", shape, 1), field("phi_tmp", shape, 1), field("u", shape, 1, 3)
    rule = allen_cahn_d3q15.update_rule(g, g_tmp, phi, phi_tmp, u)
    return build(rule, (g, g_tmp, phi, phi_tmp, u), ghost=1, fold=(1, 1, 1),
                 alignment="interior", name="allen_cahn_d3q15")[1]


def main() -> None:
    t0 = time.perf_counter()
    kf = _allen_cahn_kernel()
    t1 = time.perf_counter()
    kernel_from_pystencils(kf)
    t2 = time.perf_counter()
    print(f"allen_cahn_d3q15: lbmpy + pystencils generation {t1 - t0:.2f} s")
    extract_s = t2 - t1
    print(f"allen_cahn_d3q15: extraction {extract_s:.3f} s (budget 2 s): "
          f"{'ok' if extract_s <= 2 else 'OVER'}")
    t3 = time.perf_counter()
    for fold in [(1, 1, 1), (1, 2, 1), (1, 1, 2)]:
        star3d.kernel(fold=fold)
    t4 = time.perf_counter()
    fold_s = t4 - t3
    print(f"star3d: three folded variants {fold_s:.3f} s (budget 3 s): "
          f"{'ok' if fold_s <= 3 else 'OVER'}")


if __name__ == "__main__":
    main()
