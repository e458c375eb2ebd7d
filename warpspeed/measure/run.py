"""A measurement run (MODEL.md §9): every block of every
:class:`~warpspeed.measure.programs.Plan` timed on the GPU, one CSV row each.

1. **Compile** every plan's program in parallel worker processes (spawned,
   never forked: CUDA does not survive a fork), which fills CuPy's on-disk
   kernel cache; timing never waits for a compile.
2. **Time** each plan's blocks (:mod:`warpspeed.measure.gpu`) and append its
   rows to the CSV at once, so a run cut short keeps what it measured. A
   block that cannot launch, or a program that does not compile, is a
   refusal row with the reason (:class:`~warpspeed.measure.schema.Refusal`).
3. **Counters** where ``ncu`` is present: one ncu process profiles a child
   (``python -m warpspeed.measure launch``) that launches a selection of the
   timed blocks once each (``counter_blocks`` per plan, evenly spread over
   its timed blocks), and the run's rows are rewritten with the counters
   filled in. Without ncu, or when it fails, the rows keep empty counter
   cells and the note says why.

Nothing here imports pystencils, islpy or the model: the plans come from
:func:`warpspeed.measure.programs.read_plans` (a folder prepared on another
machine) or from :mod:`warpspeed.measure.program`.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import ncu as ncu_mod
from .counters import cuda_version_string, glups, normalise, parse_smi_identity
from .gpu import (
    Loaded,
    Timing,
    TimingRule,
    clock_samples,
    clocks_of,
    compile_check,
    cupy_module,
    first_line,
    run_text,
    time_blocks,
)
from .programs import Plan, write_plans
from .schema import (
    COLUMNS,
    Measurement,
    MeasurementError,
    Refusal,
    Triple,
    config_key,
    format_triple,
    read_rows,
    write_csv,
)

#: The prefix of every harness kernel's function name (ncu selects them by it).
FUNCTION_PREFIX = "ws_"


@dataclass(frozen=True)
class RunOptions:
    """How a run measures: the timing rule, compile workers, ncu (``None``:
    no counters) and the blocks it profiles per plan (``None``: all), and
    the text that goes into every row's note before the plan's own."""

    rule: TimingRule = TimingRule()
    jobs: int = 1
    ncu: str | None = "ncu"
    counter_blocks: int | None = None
    note: str = ""


def environment(cp: Any, ncu: str | None = "ncu") -> dict[str, str]:
    """The GPU's name, driver, CUDA, ncu and CuPy versions for the rows."""
    smi = run_text(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    try:
        name, driver = parse_smi_identity(smi)
    except MeasurementError:
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        raw = props["name"]
        name, driver = (raw.decode() if isinstance(raw, bytes) else str(raw)), ""
    have_ncu = bool(ncu and shutil.which(ncu))
    return {
        "machine": name,
        "driver": driver,
        "cuda": cuda_version_string(int(cp.cuda.runtime.runtimeGetVersion())),
        "ncu": ncu_mod.parse_version(run_text([ncu, "--version"])) if have_ncu and ncu else "",
        "cupy": str(cp.__version__),
    }


def compile_all(plans: Sequence[Plan], jobs: int) -> dict[str, str]:
    """Compile every plan's program, in ``jobs`` spawned worker processes
    (inline for one); why each does not compile, by plan name ("": it does)."""
    programs = [p.program for p in plans]
    if jobs <= 1 or len(plans) <= 1:
        return {p.name: compile_check(p.program) for p in plans}
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(plans)), mp_context=ctx) as pool:
        errors = list(pool.map(compile_check, programs))
    return {p.name: e for p, e in zip(plans, errors)}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def rows_of(plan: Plan, timings: Sequence[Timing], env: Mapping[str, str],
            clocks: tuple[float | None, float | None], note: str = ""
            ) -> list[Measurement | Refusal]:
    """The CSV rows of one plan's timings: a measurement per timed block, a
    refusal per block that could not launch."""
    set_note = "; ".join(x for x in (note, plan.note) if x)
    versions = dict(env, pystencils=plan.pystencils, warpspeed=plan.warpspeed)
    date = _now()
    out: list[Measurement | Refusal] = []
    for t in timings:
        if t.skipped:
            out.append(Refusal(
                machine=env.get("machine", ""), stencil=plan.stencil, params=plan.params,
                kernel=plan.kernel, domain=plan.interior, block=t.block, fold=plan.fold,
                lups=plan.program.lups, reason=t.skipped, registers=t.registers,
                set_note=set_note, date=date,
                versions=tuple((k, versions.get(k, "")) for k in
                               ("driver", "cuda", "ncu", "cupy", "pystencils", "warpspeed"))))
            continue
        out.append(Measurement(
            machine=env.get("machine", ""), stencil=plan.stencil, params=plan.params,
            kernel=plan.kernel, domain=plan.interior, block=t.block, fold=plan.fold,
            lups=plan.program.lups, registers=t.registers, time_s=t.median,
            time_min_s=t.minimum, repetitions=len(t.times),
            glups=glups(plan.program.lups, t.median), sm_clock_mhz=clocks[0],
            mem_clock_mhz=clocks[1], date=date, note=set_note,
            driver=versions.get("driver", ""), cuda=versions.get("cuda", ""),
            ncu=versions.get("ncu", ""), cupy=versions.get("cupy", ""),
            pystencils=versions.get("pystencils", ""), warpspeed=versions.get("warpspeed", ""),
        ))
    return out


def time_plan(cp: Any, plan: Plan, rule: TimingRule, compile_error: str = ""
              ) -> tuple[list[Timing], tuple[float | None, float | None]]:
    """Every block of ``plan`` timed (GPU), and the clocks meanwhile; every
    block refused when the program does not compile."""
    if compile_error:
        return [Timing(b, (), None, skipped=compile_error) for b in plan.blocks], (None, None)
    try:
        dev = Loaded(cp, plan.program)
    except MeasurementError as exc:
        return [Timing(b, (), None, skipped=str(exc)) for b in plan.blocks], (None, None)
    try:
        with clock_samples() as samples:
            timings = time_blocks(dev, plan.blocks, rule)
    finally:
        dev.release()
    return timings, clocks_of(samples)


def select_counters(timed: Mapping[str, Sequence[Triple]], per_plan: int | None
                    ) -> list[tuple[str, Triple]]:
    """(plan, block) pairs to profile: ``per_plan`` blocks of each plan's
    timed blocks, evenly spread from the first to the last (all: ``None``)."""
    out = []
    for name, blocks in timed.items():
        n = len(blocks)
        if per_plan is None or per_plan >= n:
            picks = list(range(n))
        elif per_plan <= 0:
            picks = []
        elif per_plan == 1:
            picks = [0]
        else:
            picks = sorted({round(i * (n - 1) / (per_plan - 1)) for i in range(per_plan)})
        out += [(name, blocks[i]) for i in picks]
    return out


def child_command(programs: str | Path, selection: str | Path) -> list[str]:
    """argv of the child that launches each selected (plan, block) once."""
    return [sys.executable, "-m", "warpspeed.measure", "launch", "--programs", str(programs),
            "--selection", str(selection)]


def match_counters(
    launches: Sequence[ncu_mod.KernelMetrics], selection: Sequence[tuple[str, Triple]],
    functions: Mapping[str, str] | None = None,
) -> list[ncu_mod.KernelMetrics]:
    """Profiled launches in launch order, checked against the selection the
    child launched: by count, by the "Block Size" column if ncu printed one,
    and by kernel name (``functions``: plan name -> function)."""
    if len(launches) != len(selection):
        raise MeasurementError(
            f"ncu profiled {len(launches)} launches, the child made {len(selection)}"
        )
    for k, (name, b) in zip(launches, selection):
        if k.block is not None and k.block != tuple(b):
            raise MeasurementError(f"ncu launch {k.id} ran block {k.block}, expected {b}")
        want = (functions or {}).get(name)
        if want and k.kernel and not k.kernel.startswith(want):
            raise MeasurementError(f"ncu launch {k.id} ran {k.kernel}, expected {want}")
    return list(launches)


def profile(programs: str | Path, selection: Sequence[tuple[str, Triple]],
            functions: Mapping[str, str], ncu: str = "ncu") -> list[ncu_mod.KernelMetrics]:
    """Run ncu over the child of :func:`child_command` (GPU)."""
    with tempfile.TemporaryDirectory() as tmp:
        sel = Path(tmp) / "selection.json"
        sel.write_text(json.dumps([[n, format_triple(b)] for n, b in selection]))
        cmd = ncu_mod.ncu_command(child_command(programs, sel), f"^{FUNCTION_PREFIX}", ncu=ncu)
        env = dict(os.environ, LC_ALL="C", LANG="C")
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        except OSError as exc:
            raise MeasurementError(f"cannot run {ncu}: {exc}") from exc
    if res.returncode != 0 or "==ERROR==" in res.stdout:
        tail = (res.stdout + res.stderr).strip().splitlines()[-3:]
        raise MeasurementError(f"ncu failed ({res.returncode}): {' | '.join(tail)}")
    try:
        return match_counters(ncu_mod.parse_csv(res.stdout), selection, functions)
    except ncu_mod.NcuError as exc:
        raise MeasurementError(str(exc)) from exc


def with_counters(rows: Sequence[Measurement | Refusal],
                  counters: Mapping[tuple[str, str, Triple, Triple], Mapping[str, float | None]],
                  missing_note: str = "") -> list[Measurement | Refusal]:
    """``rows`` with the counters of their configurations filled in, and
    ``missing_note`` added to the notes of measurements without counters."""
    out: list[Measurement | Refusal] = []
    for r in rows:
        values = counters.get(r.config)
        if isinstance(r, Refusal):
            out.append(r)
        elif values is not None:
            regs = values.get(ncu_mod.REGISTERS)
            out.append(replace(r, **normalise(values, r.lups),
                               registers=int(regs) if regs is not None else r.registers))
        elif missing_note:
            out.append(replace(r, note="; ".join(x for x in (r.note, missing_note) if x)))
        else:
            out.append(r)
    return out


def rewrite_tail(path: Path, keep: int, rows: Sequence[Measurement | Refusal]) -> None:
    """Replace the data rows of ``path`` after the first ``keep`` with
    ``rows`` (written to a new file, then moved over the old one)."""
    head = read_rows(path)[:keep]
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(head)
        writer.writerows(r.to_row() for r in rows)
    os.replace(tmp, path)


def _count_rows(path: Path) -> int:
    return len(read_rows(path)) if path.is_file() and path.stat().st_size else 0


def measure_plans(
    plans: Sequence[Plan], out: str | Path, options: RunOptions = RunOptions(), *,
    programs: str | Path | None = None, report: Callable[[str], None] = lambda _: None,
    cupy: Any = None,
) -> list[Measurement | Refusal]:
    """Measure ``plans`` into the CSV ``out`` (module docstring); the rows
    written. ``programs``: the folder the plans were read from (the ncu
    child reads them there; else they are written to a temporary one).
    ``report`` receives one line per plan; ``cupy`` stands in for CuPy."""
    cp = cupy if cupy is not None else cupy_module()
    path = Path(out)
    keep = _count_rows(path)
    env = environment(cp, options.ncu)
    report(f"compiling {len(plans)} programs in {max(1, options.jobs)} processes")
    errors = compile_all(plans, options.jobs)
    rows: list[Measurement | Refusal] = []
    timed: dict[str, list[Triple]] = {}
    for plan in plans:
        timings, clocks = time_plan(cp, plan, options.rule, errors.get(plan.name, ""))
        mine = rows_of(plan, timings, env, clocks, options.note)
        write_csv(path, mine)
        rows += mine
        timed[plan.name] = [t.block for t in timings if not t.skipped]
        refused = sum(1 for t in timings if t.skipped)
        report(f"{plan.name}: {len(timings) - refused} blocks timed, {refused} refused"
               + (f" ({timings[0].skipped})" if refused == len(timings) and timings else ""))
    if options.ncu is None:
        return rows
    counted = _counters(plans, timed, options, programs, env, report)
    if counted is None:
        return rows
    counters, note = counted
    rows = with_counters(rows, counters, note)
    rewrite_tail(path, keep, rows)
    return rows


def _counters(plans: Sequence[Plan], timed: Mapping[str, Sequence[Triple]],
              options: RunOptions, programs: str | Path | None, env: Mapping[str, str],
              report: Callable[[str], None],
              ) -> tuple[dict[tuple[str, str, Triple, Triple], Mapping[str, float | None]], str
                         ] | None:
    """The counters of the selected blocks by configuration, and the note of
    the rows without them; None when nothing is to be profiled."""
    selection = select_counters(timed, options.counter_blocks)
    if not selection or options.ncu is None:
        return None
    if not env.get("ncu"):
        report(f"no counters: {options.ncu} not found")
        return {}, f"no counters: {options.ncu} not found"
    by_name = {p.name: p for p in plans}
    report(f"ncu: profiling {len(selection)} launches")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = programs
            if folder is None:
                write_plans(tmp, plans)
                folder = tmp
            launches = profile(folder, selection, {n: p.program.function
                                                   for n, p in by_name.items()}, options.ncu)
    except MeasurementError as exc:
        report(f"no counters: {exc}")
        return {}, f"no counters: {first_line(exc)}"
    counters = {}
    for (name, block), k in zip(selection, launches):
        p = by_name[name]
        counters[config_key(p.stencil, p.params, p.fold, block)] = k.values
    return counters, ""


def launch_selection(plans: Sequence[Plan], selection: Sequence[tuple[str, Triple]],
                     cupy: Any = None) -> int:
    """Launch each selected (plan, block) once, in order (GPU): the child
    that ncu profiles. Returns the launches made."""
    from .gpu import launch_once

    cp = cupy if cupy is not None else cupy_module()
    by_name = {p.name: p for p in plans}
    missing = sorted({n for n, _ in selection} - set(by_name))
    if missing:
        raise MeasurementError(f"the selection names plans the folder lacks: {missing}")
    made = 0
    i = 0
    while i < len(selection):
        name = selection[i][0]
        j = i
        while j < len(selection) and selection[j][0] == name:
            j += 1
        dev = Loaded(cp, by_name[name].program)
        try:
            made += len(launch_once(dev, [b for _, b in selection[i:j]]))
        finally:
            dev.release()
        i = j
    return made


__all__ = [
    "FUNCTION_PREFIX",
    "RunOptions",
    "child_command",
    "compile_all",
    "environment",
    "launch_selection",
    "match_counters",
    "measure_plans",
    "profile",
    "rows_of",
    "select_counters",
    "time_plan",
    "with_counters",
]
