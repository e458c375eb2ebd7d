"""One prediction: the block stage, the wave sets, the volumes per level and
a timing model (MODEL.md §3-§8).

``predict(..., model="paper")`` is the paper's four-limiter roofline on the
paper's sector space; the default model (:data:`warpspeed.timing.DEFAULT_MODEL`)
counts DRAM sectors in the linear address space and predicts the time
itself (:mod:`warpspeed.timing.latency`). Both report the same volumes and
the four limits; the default adds its terms."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from .errors import LaunchError
from .input.binding import BoundKernel, bind_kernel
from .input.expr import LinForm, SymForm
from .input.kernel import Kernel, counted_for
from .machine import Machine
from .machine import load_machine as read_machine
from .timing import DEFAULT_MODEL, MODELS, SHARED_LIMITERS, check_tables, timing_model
from .timing.atomics import warp_note
from .timing.base import with_limiters
from .timing.evidence import Evidence, evidence
from .timing.hierarchy import (
    architecture_notes,
    one_row_note,
    with_mall,
    x_fold_note,
)
from .timing.paper import LIMITERS
from .volumes.capacity import CapacityFits, curves_for
from .volumes.footprint import Footprint, footprints_of
from .volumes.gathers import GatherL1, gather_volumes, with_gathers
from .volumes.held import as_compiled
from .volumes.l1 import l1_cycles_of, line_cycles_of, pipe_cycles_of
from .volumes.launch import Launch, block_lups, make_launch, occupancy_note, partial_wave
from .volumes.levels import AccessTraits, LevelVolumes, Volumes, access_traits, level_volumes
from .volumes.sampling import Sample, sample, stack
from .volumes.streams import address_streams
from .volumes.waves import WaveVolumes, wave_volumes


@dataclass(frozen=True)
class Prediction:
    """The result of :func:`predict`: volumes, limits and the intermediate
    quantities that explain them. ``to_dict()`` is JSON-serialisable.
    ``registers`` / ``registers_source``: the kernel's registers per thread
    that the occupancy used (MODEL.md §3) and where the count comes from
    (:class:`warpspeed.Kernel`)."""

    machine: str
    kernel: str
    block: tuple[int, int, int]
    fold: tuple[int, int, int]
    blocks_per_sm: int
    occupancy_limited_by: str
    wave_blocks: int
    wave_shape: tuple[int, int, int]
    l1_cycles: float
    volumes: Volumes
    #: How the bytes move (DRAM streams, row runs, loads per update): what the
    #: default model reads beside the volumes (MODEL.md §11).
    traits: AccessTraits
    limits: dict[str, float | None]
    glups: float
    limiter: str
    footprint: Footprint
    wave: WaveVolumes
    oversubscription: dict[str, float]
    hit_fractions: dict[str, float]
    model: str = DEFAULT_MODEL
    terms: dict[str, float] = field(default_factory=dict)
    #: Where the model's terms have no counterpart on the machine, or the kernel was
    #: generated for the other vendor (MODEL.md §15).
    notes: tuple[str, ...] = ()
    registers: int = 32
    registers_source: str = "kernel"
    #: The machine file's grounding (MODEL.md §12); :attr:`evidence` turns it
    #: into a phrase and the error band measured for it (MODEL.md §14).
    grounding: str = "datasheet"
    #: The machine's vendor: the error band is measured per vendor (MODEL.md §14).
    vendor: str = "NVIDIA"

    @property
    def evidence(self) -> Evidence:
        """How grounded this number is: the machine's grounding and the error
        measured on development data for its grounding, vendor and kernel
        class (:mod:`warpspeed.timing.evidence`, MODEL.md §14)."""
        return evidence(self.grounding, self.limiter, self.model, self.vendor)

    def __repr__(self) -> str:
        """One line (what Jupyter shows); every field stays an attribute and
        :meth:`to_dict` holds them all (MODEL.md §14)."""
        return (f"Prediction({self.kernel} on {self.machine}, {self.model} model: block "
                f"{self.block}, fold {self.fold}, {self.glups:.2f} GLup/s, bound by "
                f"{self.limiter})")

    def to_dict(self) -> dict[str, object]:
        v = self.volumes
        return {
            "machine": self.machine,
            "kernel": self.kernel,
            "block": list(self.block),
            "fold": list(self.fold),
            "blocks_per_sm": self.blocks_per_sm,
            "occupancy_limited_by": self.occupancy_limited_by,
            "registers": self.registers,
            "registers_source": self.registers_source,
            "wave_blocks": self.wave_blocks,
            "wave_shape": list(self.wave_shape),
            "l1_cycles": self.l1_cycles,
            "volumes": {
                "l1_load": v.l1_load,
                "l2_load": v.l2_load,
                "l2_store": v.l2_store,
                "dram_load": v.dram_load,
                "dram_store": v.dram_store,
            },
            "limits": dict(self.limits),
            "glups": self.glups,
            "limiter": self.limiter,
            "model": self.model,
            "terms": dict(self.terms),
            "notes": list(self.notes),
            "evidence": self.evidence.to_dict(),
            "details": {
                "volumes": asdict(v),
                "traits": asdict(self.traits),
                "l1_alloc_per_block": self.footprint.alloc_per_block,
                "wave_threads": self.wave.threads,
                "wave_new_load": self.wave.new_load,
                "wave_new_store": self.wave.new_store,
                "wave_old": {"xy": self.wave.old[0], "z": self.wave.old[1]},
                "wave_overlap": {"xy": self.wave.overlap[0], "z": self.wave.overlap[1]},
                "wave_enumerated_points": self.wave.enumerated,
                "oversubscription": dict(self.oversubscription),
                "hit_fractions": dict(self.hit_fractions),
            },
        }


@dataclass(frozen=True)
class BlockStage:
    """The block-level part of a prediction: everything but the wave sets.

    Cheap (NumPy enumeration of a few blocks); ``warpspeed.search.rank.stage_limits``
    bounds a prediction from it alone, which ranking uses for pruning.
    """

    kernel: Kernel
    machine: Machine
    launch: Launch
    bound: dict[SymForm, LinForm]
    l1_cycles: float
    footprint: Footprint
    #: The paper's L1 count (MODEL.md §4: the mean of the active half warps,
    #: idle halves of a warp free) where it differs from ``l1_cycles`` (whole
    #: warps issued); None: the same count (AMD's line count).
    l1_cycles_paper: float | None = None
    #: What the block stage found that the prediction says (MODEL.md §15:
    #: merged loads beyond the AMD compiler's registers).
    notes: tuple[str, ...] = ()
    #: The kernel bound to the block once (MODEL.md §1), ``bound`` its forms;
    #: the wave sets read it. None where only the numbers are kept (a
    #: worker's stage, :mod:`warpspeed.search.evaluate`).
    accesses: BoundKernel | None = None

    def l1_for(self, whole_warps: bool) -> float:
        """The L1 count a timing model reads (its ``whole_warps`` flag)."""
        if whole_warps or self.l1_cycles_paper is None:
            return self.l1_cycles
        return self.l1_cycles_paper


def predict(
    kernel: Kernel,
    machine: str | Path | Machine,
    block: Sequence[int],
    fits: str | Path | CapacityFits | None = None,
    model: str = DEFAULT_MODEL,
) -> Prediction:
    """Predict volumes and performance of ``kernel`` launched with ``block``
    on ``machine`` (MODEL.md §3-§8). ``fits`` overrides the machine's
    capacity curves; ``model`` is a name of :data:`warpspeed.timing.MODELS`
    (``"paper"`` or the default). A kernel with a ``register_counter`` (the
    pystencils front end's) has its registers counted for the machine first
    (:func:`warpspeed.input.kernel.counted_for`).

    Example: a 3-point stencil on 64^3 points with blocks of 64 x 2 x 1::

        >>> import warpspeed as ws
        >>> x, y, z = ws.tidx, ws.tidy, ws.tidz
        >>> A = ws.Field("A", shape=(66, 66, 66))
        >>> B = ws.Field("B", shape=(66, 66, 66))
        >>> k = ws.Kernel(loads=[A[x + 1 + d, y + 1, z + 1] for d in (-1, 0, 1)],
        ...               stores=[B[x + 1, y + 1, z + 1]], domain=(64, 64, 64))
        >>> p = ws.predict(k, "V100", block=(64, 2, 1))
        >>> p.limiter in {"fp", "l1", "l2", "dram"} and p.glups > 0
        True
        >>> p.volumes.l2_store  # B/Lup: rows start 8 B past a sector, 9 sectors per warp
        9.0
        >>> p.volumes.l2_load_v1  # the block's union of the three loads
        8.5
        >>> ws.predict(k, "V100", block=(64, 2, 1), model="paper").limiter
        'dram'
    """
    spec = timing_model(model)
    m = load_machine(machine)
    curves = curves_for(m, fits)
    kernel = counted_for(kernel, m.arch)  # a pystencils kernel's registers for this GPU
    stage = block_stage(kernel, m, block)
    wave = wave_volumes(kernel, stage.launch, stage.accesses or stage.bound,
                        address=spec.address)
    return finish(stage, wave, curves, model)


def block_stage(kernel: Kernel, machine: Machine, block: Sequence[int]) -> BlockStage:
    """Occupancy, L1 cycles and block footprints (MODEL.md §3-§5) of the
    accesses a thread issues once the block is bound
    (:func:`warpspeed.input.binding.bind_kernel`, once per launch: repeats count
    once unless ``kernel.reload_repeated``)."""
    out = block_stages(kernel, machine, [block])[0]
    if isinstance(out, LaunchError):
        raise out
    return out


#: Thread slots (blocks x padded threads x shift classes) counted together
#: by :func:`block_stages`: bounds the memory of one stacked sample.
STACK_LIMIT = 1 << 21


def block_stages(kernel: Kernel, machine: Machine, blocks: Sequence[Sequence[int]]
                 ) -> list[BlockStage | LaunchError]:
    """:func:`block_stage` of every block of ``blocks``, or the
    :class:`LaunchError` that makes one impossible, in order. Launches
    whose threads issue the same accesses in the same shift classes are
    counted together (:func:`warpspeed.volumes.sampling.stack`: one
    :func:`warpspeed.volumes.l1.l1_cycles_of` and
    :func:`warpspeed.volumes.footprint.footprints_of` over their blocks);
    the numbers are those of counting each launch alone."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"predict() needs a ws.Kernel, got {type(kernel).__name__}; pystencils "
                        "assignments and kernels go to warpspeed.pystencils.predict")
    out: list[BlockStage | LaunchError | None] = [None] * len(blocks)
    ready: dict[int, tuple[Launch, BoundKernel, int, Sample, str | None]] = {}
    groups: dict[object, list[int]] = {}
    for i, block in enumerate(blocks):
        try:
            launch = make_launch(kernel, machine, block)
            bk, held = as_compiled(bind_kernel(kernel, launch.block), machine)  # MODEL.md §15
            loads, stores = bk.issued_loads, bk.issued_stores
            smp = sample(kernel, launch, bk.issued, bk.bound, warp=machine.warp_size)
            if not smp.active.any():
                raise LaunchError(f"no thread of block {launch.block} lies inside the domain")
        except LaunchError as exc:
            out[i] = exc
            continue
        ready[i] = (launch, bk, len(loads), smp, held)
        key = (tuple(map(id, loads)), tuple(map(id, stores)), smp.active.shape[1],
               smp.access_class.tobytes(), smp.access_shift.tobytes())
        groups.setdefault(key, []).append(i)
    for members in groups.values():
        batch: list[int] = []
        size = 0
        for i in members:
            slots = ready[i][3].class_addresses.size
            if batch and size + slots > STACK_LIMIT:
                _count_stacked(kernel, machine, [(j, *ready[j]) for j in batch], out)
                batch, size = [], 0
            batch.append(i)
            size += slots
        _count_stacked(kernel, machine, [(j, *ready[j]) for j in batch], out)
    done = [x for x in out if x is not None]
    assert len(done) == len(out)  # every block is counted or refused
    return done


def _count_stacked(
    kernel: Kernel, machine: Machine,
    items: list[tuple[int, Launch, BoundKernel, int, Sample, str | None]],
    out: list[BlockStage | LaunchError | None],
) -> None:
    """The L1 cycles and footprints of launches sharing accesses and
    classes, counted over their stacked samples, into ``out``."""
    stacked, owner = stack([smp for _, _, _, _, smp, _ in items])
    n_loads = items[0][3]
    l1, paper = _l1_cycles(stacked, owner, len(items), machine)
    fps = footprints_of(stacked, owner, len(items), n_loads, machine.l1_sector_bytes,
                        machine.l1_line_bytes, machine.warp_size)
    for j, (i, launch, bk, _, smp, held) in enumerate(items):
        out[i] = BlockStage(
            kernel=kernel, machine=machine, launch=launch, bound=bk.bound, accesses=bk,
            l1_cycles=float(l1[j]),
            footprint=replace(fps[j], streams=address_streams(smp, n_loads,
                                                                fps[j].streams.run_bytes)),
            l1_cycles_paper=None if paper is None else float(paper[j]),
            notes=(held,) if held else (),
        )


def _l1_cycles(s: Sample, owner: np.ndarray, launches: int, m: Machine
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """L1 cycles per wavefront of ``m.warp_size`` lanes and lattice update of
    each stacked launch: the half-warp count of MODEL.md §4 (per 32 lanes,
    scaled to the wavefront; whole warps issued, and the paper's count), on
    Hopper what each warp issues (``l1_model = "warppipe"``, §4; the paper's
    count stays the half-warp one) or one line per clock (``l1_model =
    "lines"``, MODEL.md §15; one count)."""
    if m.l1_model == "lines":
        return line_cycles_of(s, owner, launches, m.l1_line_bytes, m.warp_size,
                              m.l1_lanes_per_cycle), None
    whole, paper = l1_cycles_of(s, owner, launches) * m.warp_size / 32
    if m.l1_model == "warppipe":  # the half-warp count stays the paper model's
        return pipe_cycles_of(s, owner, launches, m.family.l1_tag_cycles_per_line), paper
    return whole, paper


def _gather_l1(m: Machine, whole_warps: bool) -> GatherL1:
    """How the L1 counts ``m``'s indexed accesses (MODEL.md §4): by its L1
    model, as :func:`_l1_cycles` counts the regular ones; the paper model
    keeps the half-warp count on a warp-pipe L1."""
    model = "halfwarp" if m.l1_model == "warppipe" and not whole_warps else m.l1_model
    return GatherL1(model, m.warp_size, m.family.l1_tag_cycles_per_line or 0.0,
                    m.l1_line_bytes, m.l1_lanes_per_cycle)


def finish(
    stage: BlockStage, wave: WaveVolumes, curves: CapacityFits, model: str = DEFAULT_MODEL
) -> Prediction:
    """Volumes per level (:func:`warpspeed.volumes.levels.level_volumes`) and the
    timing of ``model``. ``wave`` must be counted in the model's address
    space (``MODELS[model].address``)."""
    kernel, m, launch = stage.kernel, stage.machine, stage.launch
    spec = MODELS[model]

    def levels(machine: Machine) -> LevelVolumes:
        lv = level_volumes(kernel, machine, launch, stage.footprint, wave, curves,
                           merged_stores=spec.merged_stores, reread_evicts=spec.reread_evicts)
        if gv is not None:  # indexed accesses, counted apart (warpspeed.volumes.gathers)
            lv = replace(lv, volumes=with_gathers(lv.volumes, gv))
        return lv

    gv = (gather_volumes(kernel.gathers, _gather_l1(m, spec.whole_warps)) if kernel.gathers
          else None)
    stage = replace(stage, l1_cycles=stage.l1_for(spec.whole_warps),
                    l1_cycles_paper=None)  # the count this model reads (MODEL.md §4)
    if gv is not None:
        stage = replace(stage, l1_cycles=stage.l1_cycles + gv.l1_cycles)
    lv = levels(m)
    # MODEL.md §15: a last-level cache behind the L2 (Infinity Cache)
    behind = levels(replace(m, l2_bytes=m.mall_bytes)) if m.mall_bytes > m.l2_bytes else None
    mem, mall_note, past_mall = with_mall(kernel, m, lv.volumes,
                                          behind.volumes if behind else None)
    if behind is not None and past_mall:
        lv = behind
    traits = access_traits(stage.footprint, lv.volumes, block_lups(kernel, launch))
    check_tables(m)
    t = with_limiters(spec.time(kernel, mem, launch, stage.l1_cycles, lv.volumes, traits, wave),
                      tuple(SHARED_LIMITERS.values()), kernel, mem, launch)
    optional = (
        mall_note,
        partial_wave(launch.block, m),  # MODEL.md §15: whole wavefronts issued
        occupancy_note(launch, m, kernel.registers),  # MODEL.md §15: AMD registers
        one_row_note(kernel, m, launch.block, t.limiter),  # MODEL.md §10: RDNA
        x_fold_note(kernel, m, t.limiter),  # MODEL.md §10: the third H200 run
        warp_note(kernel, m),  # MODEL.md §8: the code's warp reduction
    )
    notes = (architecture_notes(kernel, m) + spec.notes(kernel, m) + stage.notes
             + tuple(n for n in optional if n))
    return Prediction(
        machine=m.name,
        kernel=kernel.name,
        block=launch.block,
        fold=kernel.fold,
        blocks_per_sm=launch.occupancy.blocks_per_sm,
        occupancy_limited_by=launch.occupancy.limited_by,
        wave_blocks=launch.wave_blocks,
        wave_shape=launch.wave_shape,
        l1_cycles=stage.l1_cycles,
        volumes=lv.volumes,
        traits=traits,
        limits=t.limits,
        glups=t.glups,
        limiter=t.limiter,
        footprint=stage.footprint,
        wave=wave,
        oversubscription=lv.oversubscription,
        hit_fractions=lv.hit_fractions,
        model=model,
        terms=t.terms,
        notes=notes,
        registers=kernel.registers,
        registers_source=kernel.registers_source,
        grounding=m.grounding,
        vendor=m.vendor,
    )


def load_machine(name_or_path: str | Path | Machine) -> Machine:
    """A built-in machine by name or a machine file by path
    (:func:`warpspeed.machine.load_machine`), every timing table checked by
    the model that reads it (:func:`warpspeed.timing.check_tables`, MODEL.md
    §12): ``warpspeed.load_machine``."""
    m = read_machine(name_or_path)
    check_tables(m)
    return m


__all__ = [
    "DEFAULT_MODEL",
    "LIMITERS",
    "MODELS",
    "AccessTraits",
    "BlockStage",
    "Prediction",
    "Volumes",
    "block_stage",
    "finish",
    "load_machine",
    "predict",
]
