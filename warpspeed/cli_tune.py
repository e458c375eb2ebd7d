"""``warpspeed tune STENCIL --machine M --measure K``: rank every
configuration, time the model's best K (and their ties) on this machine's
GPU, or replay them from a measurement CSV (``--replay FILE.csv``), and print
the measured best beside the prediction (MODEL.md §8, §9; the work is
:mod:`warpspeed.measure.tune`). Without a GPU it says so in one line and
prints the model's ranking."""

from __future__ import annotations

import argparse
import inspect
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .cli_stencils import ranked_variants
from .input.stencil_spec import load_stencil, parse_params
from .measure.gpu import TimingRule
from .measure.programs import Plan
from .measure.schema import MeasurementError, Triple
from .measure.tune import Backend, GpuBackend, Replay, Tuned, gpu_missing, tune, untimed
from .model import Prediction, load_machine
from .search.rank import rank

HELP = ("time the model's best K configurations on this GPU (or replay them from a CSV) "
        "and pick the measured best")


def add_parser(sub: argparse._SubParsersAction, common: Callable[[Any], None]) -> None:
    """Add ``tune`` to the command's subparsers (``common``: the options
    ``predict`` and ``rank`` share)."""
    p = sub.add_parser("tune", help=HELP, description=HELP)
    common(p)
    p.add_argument("--measure", type=int, default=10, metavar="K",
                   help="configurations to time, the model's best first (default 10)")
    p.add_argument("--replay", type=Path, metavar="FILE.csv",
                   help="a measurement CSV (warpspeed.measure's schema) in place of the GPU: "
                        "a configuration it lacks could not launch")
    p.add_argument("--threads", type=int, nargs="+", metavar="N",
                   help="threads per block (default every power of two that can launch)")
    p.add_argument("--fold", nargs="+", metavar="X,Y,Z",
                   help="folding variants (default as for rank)")
    p.add_argument("--jobs", type=int, default=None, metavar="J",
                   help="worker processes of the ranking (default: all CPUs)")
    p.add_argument("--json", action="store_true",
                   help="the chosen block and fold, and each configuration timed, as JSON")
    p.set_defaults(func=cmd_tune)


def stencil_parameters(spec: str, items: Sequence[str]) -> tuple[dict[str, Any],
                                                                   dict[str, Any]]:
    """The ``--set`` parameters of ``spec``'s generator and its defaults
    (what a measurement CSV's ``params`` records)."""
    module = load_stencil(spec)
    func = getattr(module, "generate", None) or module.kernel
    defaults = {k: v.default for k, v in inspect.signature(func).parameters.items()
                if v.default is not inspect.Parameter.empty and k not in ("fold", "target")}
    return parse_params(func, items), defaults


def backend_for(args: argparse.Namespace, ranking: Sequence[Prediction]) -> Backend | str:
    """The replay of ``--replay``, this GPU, or why there is none."""
    given, defaults = stencil_parameters(args.stencil, args.set)
    if args.replay is not None:
        return Replay.from_csv(args.replay, Path(args.stencil).stem, given, defaults)
    why = gpu_missing()
    if why:
        return why
    from .measure.program import plan_for

    folds = dict.fromkeys(p.fold for p in ranking[: 4 * args.measure])
    plans: dict[Triple, Plan] = {
        f: plan_for(args.stencil, given, f, blocks=[p.block for p in ranking if p.fold == f])
        for f in folds}
    return GpuBackend(plans, TimingRule())


def cmd_tune(args: argparse.Namespace) -> int:
    if args.measure < 1:
        raise MeasurementError(f"--measure takes a positive number of configurations, got "
                               f"{args.measure}")
    m = load_machine(args.machine)
    chosen = ranked_variants(args, m)
    r = rank(chosen.kernels, m, threads=chosen.threads, jobs=args.jobs, model=args.model)
    ranking = list(r.predictions)
    backend = backend_for(args, ranking)
    tuned: Tuned = (untimed(ranking, backend) if isinstance(backend, str)
                    else tune(ranking, backend, args.measure))
    if args.json:
        print(json.dumps({"kernel": r.kernel, "machine": r.machine, "model": r.model,
                          **tuned.to_dict()}, indent=2))
        return 0
    timed = f"the best {args.measure} timed" if tuned.timed else "none timed"
    print(f"{r.kernel} on {r.machine} ({r.model} model): {r.configurations} configurations "
          f"ranked, {timed}")
    print("\n".join([*tuned.lines(), *chosen.left_out]))
    return 0
