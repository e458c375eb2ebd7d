"""Launch configuration: occupancy, grid, waves and the thread sets of the
DRAM model (MODEL.md §3 and §6)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import LaunchError
from ..input.kernel import Kernel, data_bytes
from ..input.triples import as_triple, ints_of
from ..machine import Machine

Range = tuple[int, int]  # half-open range of block indices
BlockBox = tuple[Range, Range, Range]


@dataclass(frozen=True)
class Occupancy:
    """Blocks per SM and which of the four limits binds (MODEL.md §3)."""

    blocks_per_sm: int
    by_threads: int
    by_blocks: int
    by_registers: int
    by_shared_memory: int
    #: RDNA: one block per work-group processor (two CUs) only, counted as one
    #: per CU (MODEL.md §15); the prediction's notes say so.
    per_wgp: bool = False
    #: AMD: the kernel's registers as the compiler caps them (MODEL.md §15).
    registers: int = 0

    @property
    def limited_by(self) -> str:
        limits = {
            "threads": self.by_threads,
            "blocks": self.by_blocks,
            "registers": self.by_registers,
            "shared_memory": self.by_shared_memory,
        }
        return min(limits, key=limits.__getitem__)


@dataclass(frozen=True)
class Launch:
    """A block size applied to a kernel on a machine: grid, occupancy, wave."""

    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    occupancy: Occupancy
    wave_blocks: int
    wave_shape: tuple[int, int, int]
    row_skip: int


AXES = "xyz"


def check_block(block: Sequence[int], machine: Machine) -> tuple[int, int, int]:
    """Validate a block size: three positive integers (values equal to an
    integer: ``256.5`` or ``"256"`` are refused, never rounded; the grammar of
    :mod:`warpspeed.input.triples`) within the machine's limits, in all and
    along each axis (its family's ``block_extents``)."""
    b = as_triple(ints_of(block, "block", count=3, error=LaunchError))
    if math.prod(b) > machine.max_threads_per_block:
        raise LaunchError(
            f"block {b} has {math.prod(b)} threads; {machine.name} allows at most "
            f"{machine.max_threads_per_block} per block"
        )
    for axis, v, most in zip(AXES, b, machine.family.block_extents):
        if v > most:
            raise LaunchError(f"block {b} has {v} threads along {axis}; {machine.vendor} GPUs "
                              f"launch at most {most} along {axis}: use a smaller block {axis}")
    return b


def check_memory(kernel: Kernel, machine: Machine) -> None:
    """Refuse a kernel whose fields (:func:`~warpspeed.input.kernel.data_bytes`)
    exceed the machine's memory (``memory_gib``; MODEL.md §3); a machine
    file without it is not checked."""
    need = data_bytes(kernel)
    if machine.memory_gib is not None and need > machine.memory_gib * 2**30:
        raise LaunchError(
            f"kernel {kernel.name}'s fields take {need / 2**30:,.1f} GiB, but {machine.name} has "
            f"{machine.memory_gib:g} GiB of memory: it cannot run there; use a smaller domain "
            "or split it over several GPUs")


def check_grid(grid: tuple[int, int, int], block: tuple[int, int, int], machine: Machine
               ) -> None:
    """Refuse a grid the machine's family cannot launch (its ``grid_blocks``
    or ``grid_threads``; MODEL.md §3), naming the axis and the fix."""
    most = machine.family.grid_blocks
    threads = machine.family.grid_threads
    for i, axis in enumerate(AXES):
        if most is not None and grid[i] > most[i]:
            raise LaunchError(
                f"block {block} needs {grid[i]} blocks along {axis}; {machine.vendor} GPUs launch "
                f"at most {most[i]} along {axis}: use a larger block {axis}, or a domain with "
                f"fewer cells along {axis} per launch")
        if threads is not None and grid[i] * block[i] > threads:
            raise LaunchError(
                f"block {block} needs {grid[i] * block[i]} threads along {axis}; "
                f"{machine.vendor} GPUs launch at most {threads} along an axis: split the "
                "domain into several launches")


def occupancy(kernel: Kernel, machine: Machine, block: tuple[int, int, int]) -> Occupancy:
    """Blocks per SM from threads, blocks, registers and shared memory.

    Registers are allocated per warp in units of ``register_alloc_unit``
    (256); MODEL.md §3 asks for all four limits, not registers only. On a
    machine with ``simds_per_sm`` > 1 (AMD CUs: 4 SIMDs on CDNA, 2 SIMD32 on
    RDNA) the register file is counted per SIMD (MODEL.md §15): approximated,
    the wavefronts of a block are taken to spread evenly over the SIMDs. On
    AMD the registers are capped as the compiler caps them
    (:func:`compiled_registers`), and on RDNA a block that needs the two CUs
    of a work-group processor counts as one per CU (:func:`_by_registers`).
    """
    threads = math.prod(block)
    warps = math.ceil(threads / machine.warp_size)
    regs = compiled_registers(kernel.registers, machine)
    # thread slots are taken in whole warps (wavefronts): a block of 48 threads
    # holds two warps' slots, idle lanes included (MODEL.md §3, §15)
    by_threads = (machine.max_threads_per_sm // machine.warp_size) // warps
    by_registers, per_wgp = _by_registers(regs, warps, machine)
    if kernel.shared_memory > machine.shared_memory_per_block:
        raise LaunchError(
            f"the kernel uses {kernel.shared_memory} B of shared memory per block; "
            f"{machine.name} allows at most {machine.shared_memory_per_block} B"
        )
    by_smem = (
        machine.shared_memory_per_sm // kernel.shared_memory
        if kernel.shared_memory
        else machine.max_blocks_per_sm
    )
    bps = min(by_threads, machine.max_blocks_per_sm, by_registers, by_smem)
    if bps == 0:
        raise LaunchError(
            f"a block of {threads} threads with {kernel.registers} registers per thread "
            f"does not fit on an SM of {machine.name}; use fewer threads or registers"
        )
    return Occupancy(bps, by_threads, machine.max_blocks_per_sm, by_registers, by_smem,
                     per_wgp and bps == by_registers, regs)


def register_budget(machine: Machine) -> int | None:
    """VGPRs per lane the AMD compiler may give a kernel compiled for
    ``max_threads_per_block`` threads (HIP's default work-group bound of
    1024 without ``__launch_bounds__``; MODEL.md §15): the VGPR file of a CU
    (RDNA: of the two CUs of a work-group processor, HIP's default WGP mode;
    gfx908: VGPRs and the AGPRs LLVM spills into, a file of the same size)
    over that many threads, at most :data:`MAX_VGPRS`: the family's
    ``register_budget_files``. None where that is 0 (NVIDIA: nvcc's count)."""
    files = machine.family.register_budget_files
    if not files:
        return None
    return min(MAX_VGPRS, machine.registers_per_sm * files // machine.max_threads_per_block)


def wgp_mode(machine: Machine) -> bool:
    """Whether a block may spread over the two CUs of a work-group processor:
    RDNA, where HIP compiles for WGP mode unless told ``-mcumode`` (MODEL.md §15)."""
    return machine.family.wgp_mode


#: The largest VGPR count one lane of a wavefront can address (GCN, CDNA
#: and RDNA ISA references: v0-v255).
MAX_VGPRS = 256


def compiled_registers(registers: int, machine: Machine) -> int:
    """The registers per thread the kernel runs with: on AMD at most
    :func:`register_budget` (the compiler spills the rest; MODEL.md §15)."""
    budget = register_budget(machine)
    return registers if budget is None else min(registers, budget)


def _by_registers(regs: int, warps: int, machine: Machine) -> tuple[int, bool]:
    """Blocks per SM the register file holds, and whether that is one block
    per RDNA work-group processor counted as one per CU. Registers are
    allocated per warp in units of ``register_alloc_unit``; a CU's VGPRs are
    split among its SIMDs and a wavefront's live in one: the waves that fit
    are counted per SIMD (MODEL.md §15); one pool on NVIDIA. In WGP mode a
    block's waves spread over the four SIMDs of two CUs: a block the CU alone
    cannot hold still runs, one per two CUs."""
    unit = machine.register_alloc_unit
    regs_per_warp = math.ceil(regs * machine.warp_size / unit) * unit
    simds = machine.simds_per_sm
    waves = simds * ((machine.registers_per_sm // simds) // regs_per_warp)
    blocks = waves // warps
    if blocks == 0 and wgp_mode(machine) and 2 * waves >= warps:
        return 1, True
    return blocks, False


def occupancy_note(launch: Launch, machine: Machine, registers: int) -> str | None:
    """What the occupancy of an AMD launch approximates or assumes
    (MODEL.md §15), or None."""
    occ = launch.occupancy
    notes = []
    if occ.registers and occ.registers < registers:
        notes.append(f"the kernel's {registers} registers per thread exceed the "
                     f"{occ.registers} VGPRs the compiler may use at its default bound of "
                     f"{machine.max_threads_per_block} threads per block: it spills the rest "
                     "(not modelled; the occupancy counts "
                     f"{occ.registers})")
    if occ.per_wgp:
        notes.append(f"block {launch.block} fits one work-group processor (two CUs) only, "
                     "not one CU: counted as one block per CU, twice the occupancy it has")
    return "; ".join(notes) + " (MODEL.md §15)" if notes else None


def make_launch(kernel: Kernel, machine: Machine, block: Sequence[int]) -> Launch:
    """Grid, occupancy and the wave shape of MODEL.md §3. A kernel whose
    code generator fixed its block size runs with that block only."""
    b = check_block(block, machine)
    if kernel.fixed_block is not None and b != kernel.fixed_block:
        raise LaunchError(
            f"kernel {kernel.name} can only be launched with the block {kernel.fixed_block} "
            f"that its indexing scheme fixes; got {b}"
        )
    check_memory(kernel, machine)
    d = kernel.domain
    g = as_triple(math.ceil(d[i] / b[i]) for i in range(3))
    check_grid(g, b, machine)
    occ = occupancy(kernel, machine, b)
    n = occ.blocks_per_sm * machine.sms
    w0 = min(g[0], n)
    w1 = min(g[1], math.ceil(n / (d[0] / b[0])))
    w2 = min(g[2], math.ceil(n / (d[0] * d[1] / (b[0] * b[1]))))
    # Skip the last block row when it holds less than 10 % of a block.
    last_row = d[1] - (g[1] - 1) * b[1]
    s = 1 if last_row < 0.1 * b[1] and g[1] - w1 - 1 >= 0 else 0
    return Launch(b, g, occ, n, (w0, w1, w2), s)


@dataclass(frozen=True)
class WaveSets:
    """Block ranges of the current wave and of the earlier x, y and z sets
    (MODEL.md §6). An empty range means the set is empty."""

    current: BlockBox
    x: BlockBox
    y: BlockBox
    z: BlockBox


def wave_sets(launch: Launch) -> WaveSets:
    """The representative wave sits at the end of the x and y block ranges
    and in the middle of z (MODEL.md §3); the earlier sets precede it."""
    g0, g1, g2 = launch.grid
    w0, w1, w2 = launch.wave_shape
    s = launch.row_skip
    ys = (g1 - w1 - s, g1 - s)
    zs = (g2 // 2, min(g2, g2 // 2 + w2))
    current = ((g0 - w0, g0), ys, zs)
    xset = ((max(0, g0 - 2 * w0), g0 - w0), ys, zs)
    yset = ((0, g0), (max(0, g1 - 2 * w1 - s), g1 - w1 - s), zs)
    zset = ((0, g0), (0, g1), (max(0, g2 // 2 - 1), g2 // 2))
    return WaveSets(current, xset, yset, zset)


def working_threads(kernel: Kernel, launch: Launch) -> int:
    """The threads of one block that work: threads beyond a domain smaller
    than the block stay idle (MODEL.md §11, §5)."""
    return math.prod(min(b, d) for b, d in zip(launch.block, kernel.domain))


def block_lups(kernel: Kernel, launch: Launch) -> float:
    """The lattice updates of one block's working threads
    (:func:`working_threads`)."""
    return working_threads(kernel, launch) * kernel.lups_per_thread


def valid_threads(box: BlockBox, launch: Launch, domain: tuple[int, int, int]) -> int:
    """Number of threads of a block box inside the domain (the guard)."""
    n = 1
    for (lo, hi), b, dim in zip(box, launch.block, domain):
        n *= max(0, min(hi * b, dim) - max(lo, 0) * b) if hi > lo else 0
    return n


def partial_wave(block: tuple[int, int, int], machine: Machine) -> str | None:
    """What a block of a fraction of a wavefront costs on an AMD ``machine``,
    or None: its last wavefront is issued whole, its idle lanes included
    (MODEL.md §15): the prediction (and a ranking) counts it so, and says it
    in its notes. NVIDIA machines get no note (the warp issue of §4 is the
    same rule there)."""
    threads = block[0] * block[1] * block[2]
    if not machine.family.whole_wavefront_note or threads % machine.warp_size == 0:
        return None
    waves = -(-threads // machine.warp_size)
    return (f"block {tuple(block)} has {threads} threads, not whole wavefronts of "
            f"{machine.warp_size} on {machine.name}: predicted as the hardware runs it, "
            f"{waves} whole wavefronts issued ({waves * machine.warp_size - threads} idle lanes "
            "per block, charged in the L1 count and the occupancy; MODEL.md §15)")
