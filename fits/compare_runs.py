"""Two measurement runs of the same configurations side by side (MODEL.md §9):
``python fits/compare_runs.py NEW.csv [OLD.csv]`` (default OLD: the shipped
H200 run, ``fits/data/h200/measurements.csv``).

For every configuration (stencil, parameters, fold, block) both files time,
the ratio of NEW's GLup/s over OLD's, and per set (the ``note``'s ``set
NAME``, a ``check_`` prefix dropped) the median ratio, its spread (the
smallest and largest) and whether the two runs order the configurations
alike (Spearman). A run repeated on the same GPU should give ratios near 1;
the shipped run's note says its clocks.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from warpspeed.measure import Measurement, read_csv
from warpspeed.validation.measured_sets import set_of as measured_set
from warpspeed.validation.reference import dataset_dir
from warpspeed.validation.validate import spearman


def set_of(m: Measurement) -> str:
    """The row's set (:func:`warpspeed.validation.measured_sets.set_of`, else
    its kernel and parameters), a cross-check series named as the set it checks."""
    return (measured_set(m) or f"{m.kernel} {m.params}").removeprefix("check_")


def compare(new: Sequence[Measurement], old: Sequence[Measurement]
            ) -> dict[str, list[tuple[Measurement, Measurement]]]:
    """The configurations both runs time, paired, by set of the new run."""
    by_config = {m.config: m for m in old}
    out: dict[str, list[tuple[Measurement, Measurement]]] = {}
    for m in new:
        o = by_config.get(m.config)
        if o is not None:
            out.setdefault(set_of(m), []).append((m, o))
    return out


def report(pairs: dict[str, list[tuple[Measurement, Measurement]]]) -> str:
    lines = ["| set | configurations | median new/old | smallest | largest | Spearman |",
             "|---|---|---|---|---|---|"]
    for name, ps in sorted(pairs.items()):
        ratios = [n.glups / o.glups for n, o in ps]
        rho = spearman([n.glups for n, _ in ps], [o.glups for _, o in ps])
        lines.append(f"| {name} | {len(ps)} | {statistics.median(ratios):.3f} | "
                     f"{min(ratios):.3f} | {max(ratios):.3f} | "
                     f"{'-' if rho is None else f'{rho:.2f}'} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2:
        print("usage: python fits/compare_runs.py NEW.csv [OLD.csv]", file=sys.stderr)
        return 2
    old_path = Path(args[1]) if len(args) == 2 else dataset_dir("h200") / "measurements.csv"
    pairs = compare(read_csv(args[0]), read_csv(old_path))
    if not pairs:
        print(f"compare_runs: {args[0]} and {old_path} share no configuration", file=sys.stderr)
        return 2
    print(f"{args[0]} against {old_path}: GLup/s of the same configurations")
    print(report(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
