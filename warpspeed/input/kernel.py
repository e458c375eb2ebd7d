"""The input of the model: kernels of fields and accesses (MODEL.md §1;
:mod:`.fields` defines those two, :mod:`.bounds` checks the accesses,
:mod:`.gathers` and :mod:`.atomics` add indexed accesses and atomics).

Everything is validated on construction, so that an invalid description fails
where it is written and not deep inside NumPy or islpy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Protocol

from ..errors import KernelError
from ..fpclasses import FP_CLASSES as _FP_CLASSES
from .atomics import Atomics
from .bounds import check_bounds
from .fields import ITEMSIZES as ITEMSIZES  # re-exported: the kernel description's item sizes
from .fields import Access, Field, _positive_ints
from .gathers import Gather

#: Classes of floating-point work (defined in :mod:`warpspeed.fpclasses`, which the
#: machine files share); re-exported here for the kernel description.
FP_CLASSES = _FP_CLASSES


def _dedupe(accesses: object, kind: str) -> tuple[Access, ...]:
    """``accesses`` (a list of them) each once, in order; a KernelError for
    anything else (one access not in a list says so)."""
    if isinstance(accesses, Access):
        raise KernelError(f"{kind} must be a list of accesses like [A[x, y, z]], got the one "
                          f"access {accesses}: wrap it in a list")
    if not isinstance(accesses, Iterable):
        raise KernelError(f"{kind} must be a list of accesses like [A[x, y, z]], got "
                          f"{accesses!r:.80}")
    out: dict[Access, None] = {}
    for a in accesses:
        if not isinstance(a, Access):
            raise KernelError(f"{kind} must be accesses like A[x, y, z], got {a!r}")
        out.setdefault(a, None)
    return tuple(out)


def _output_guards(value: object, n_loads: int, fold: tuple[int, ...]
                   ) -> bool | tuple[int, ...]:
    """Validated ``output_guards`` (class docstring): a bool, or 1-3
    positive extents padded with 1; with guards, the loads must split into
    one equal group per output."""
    if isinstance(value, bool):
        guards: bool | tuple[int, ...] = value
    else:
        try:
            ext = _positive_ints(value, "output_guards extents")
        except KernelError:
            raise KernelError(
                "output_guards must be True, False or the output extents (Nx, Ny[, Nz]) the "
                f"code specialises for, got {value!r}") from None
        if len(ext) > 3:
            raise KernelError(f"output_guards has at most 3 extents (x, y, z), got {ext}")
        guards = ext + (1,) * (3 - len(ext))
    outputs = math.prod(fold)
    if guards is not False and n_loads % outputs:
        raise KernelError(
            f"output_guards needs the loads listed output by output, {outputs} equal groups "
            f"(fold {fold}), but the kernel has {n_loads} distinct loads; list every output's "
            "loads (equal accesses of two outputs differ by the fold's offset) or set "
            "output_guards=False")
    return guards


def _fp_ops(ops: object) -> tuple[tuple[str, float], ...]:
    """Validated FP work by class, as sorted pairs (hashable); accepts the
    pairs themselves too (``dataclasses.replace`` passes them back)."""
    if isinstance(ops, tuple) and all(isinstance(x, tuple) and len(x) == 2 for x in ops):
        ops = dict(ops)
    if not isinstance(ops, Mapping):
        raise KernelError(f"fp_ops must be a mapping of FP class to count, got {ops!r}")
    out = {}
    for k, v in ops.items():
        if k not in FP_CLASSES:
            raise KernelError(f"unknown FP class {k!r} in fp_ops; the classes are {FP_CLASSES}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise KernelError(f"fp_ops[{k!r}] must be a non-negative number, got {v!r}")
        if v:
            out[k] = float(v)
    return tuple(sorted(out.items()))


@dataclass(frozen=True, init=False)
class Kernel:
    """A GPU kernel as the model sees it (MODEL.md §1).

    * ``loads`` / ``stores``: accesses per thread; duplicates count once.
    * ``domain``: extents of valid global thread coordinates (the guard),
      1 to 3 values, padded with 1.
    * ``fold``: lattice updates per thread along x, y, z; the volumes are
      reported per lattice update, i.e. per thread divided by the product.
    * ``fp_instructions``: floating-point instructions per thread (adds,
      muls, FMAs, each one instruction); ``None`` if unknown, in which case
      the FP limit is not applied.
    * ``fp_ops``: floating-point work per thread by class (:data:`FP_CLASSES`),
      e.g. ``{"fma": 25, "div": 1}``; each class is costed by the machine
      (a double division takes several FMA slots); stored as sorted
      ``(class, count)`` pairs so that kernels stay hashable. When given,
      ``fp_instructions`` defaults to the total count. ``precision``: 64
      (double) or 32 (float) arithmetic, which selects the machine's FMA rate.
    * ``registers``: registers per thread (default 32) and
      ``registers_source``, where the count comes from, shown with every
      prediction: ``"kernel"`` (given with the kernel), ``"user"``,
      ``"nvcc sm_80"``, ``"estimate: <why>"`` (:mod:`warpspeed.pystencils.registers`).
      ``register_counter``: a :class:`RegisterCounter` that counts them for
      the machine a prediction or ranking runs on (:func:`counted_for`; the
      pystencils front end gives its kernels one: nvcc's count for the
      machine's architecture where nvcc is installed, else the estimate), so
      that a kernel made without a machine never keeps a placeholder count;
      a count set since (``replace(kernel, registers=48)``) stays;
      ``shared_memory``: bytes of shared memory per block.
    * ``fixed_block``: the only block size the kernel can be launched with,
      when its code generator fixes it (pystencils' ``blockwise4d``); ``None``
      if any block size works.
    * ``reload_repeated``: when False (the default), accesses of one thread
      that address the same element once the block size is bound count
      once at every level: the compiler loads read-only data once per
      thread (common-subexpression elimination over unrolled loops, e.g.
      the outputs of a thread folded by the block size whose inputs
      overlap). True keeps every access, for code where the compiler cannot
      merge them (aliasing pointers, ``volatile``, loads across barriers).
    * ``output_guards``: whether each of a folded thread's outputs sits
      under its own bounds check (``if (x < Nx && y < Ny)`` around each
      output). Loads under different guards are not merged (a guarded load
      may not execute, so the compiler cannot share it): the loads, listed
      output by output in equal consecutive groups (``lups_per_thread`` of
      them), merge only within their group. ``False`` (default): one guard
      for the thread, or none; ``True``: separate guards at every launch;
      extents ``(Nx, Ny[, Nz])``: the compile-time switch of kernel families
      that specialise divisible shapes, separate guards exactly when some
      extent is not a multiple of block times fold along it
      (:func:`warpspeed.input.addresses.guarded_separately`; MODEL.md §1).

    * ``unbounded``: names of fields whose allocation is not known (a view
      into a larger array); every other access must stay inside its field's
      extent over the domain, else :class:`warpspeed.OutOfBoundsError`
      (:mod:`warpspeed.input.bounds`).
    * ``atomics``: atomic updates of single addresses (a reduction into a
      scalar), :class:`warpspeed.input.atomics.Atomics`; their own limiter.
    * ``gathers``: indexed accesses, a field at positions read from an index
      list (one thread per entry), :class:`warpspeed.input.gathers.Gather`; the
      list itself is read by ordinary ``loads``.

    Example: a 3-point stencil along x over 64^3 points, and an index the
    model refuses (MODEL.md §13)::

        >>> import warpspeed as ws
        >>> x, y, z = ws.tidx, ws.tidy, ws.tidz
        >>> A = ws.Field("A", shape=(66, 66, 66))
        >>> B = ws.Field("B", shape=(66, 66, 66))
        >>> k = ws.Kernel(loads=[A[x + 1 + d, y + 1, z + 1] for d in (-1, 0, 1)],
        ...               stores=[B[x + 1, y + 1, z + 1]], domain=(64, 64, 64),
        ...               fp_ops={"fma": 3})
        >>> len(k.loads), k.lups_per_thread, k.fp_work
        (3, 1, {'fma': 3.0})
        >>> ws.Kernel(loads=[A[x, y, z]], stores=[B[x, y, z]], domain=(64, 64, 64),
        ...           fold=(1, 1, 2)).lups_per_thread
        2
        >>> A[x * y, y, z]  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        warpspeed.errors.NonAffineError: A[...]: ...
    """

    loads: tuple[Access, ...]
    stores: tuple[Access, ...]
    domain: tuple[int, int, int]
    fold: tuple[int, int, int] = (1, 1, 1)
    fp_instructions: float | None = None
    registers: int = 32
    shared_memory: int = 0
    name: str = "kernel"
    fp_ops: tuple[tuple[str, float], ...] | None = None
    precision: int = 64
    fixed_block: tuple[int, int, int] | None = None
    reload_repeated: bool = False
    output_guards: bool | tuple[int, ...] = False
    atomics: Atomics | None = None
    gathers: tuple[Gather, ...] = ()
    #: The code generator's target ("CUDA", "HIP"), when known: a prediction on
    #: the other vendor's GPU carries a note (MODEL.md §15). Not part of equality.
    target: str | None = field(default=None, compare=False)
    registers_source: str = "kernel"
    unbounded: tuple[str, ...] = ()
    #: Counts the registers for a machine's ``arch``: ``arch -> (count,
    #: source)`` (:func:`counted_for`); set by the pystencils front end.
    #: Not part of equality.
    register_counter: RegisterCounter | None = field(
        default=None, repr=False, compare=False)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __init__(
        self,
        loads: Iterable[Access],
        stores: Iterable[Access],
        domain: Sequence[int],
        fold: Sequence[int] = (1, 1, 1),
        fp_instructions: float | None = None,
        registers: int = 32,
        shared_memory: int = 0,
        name: str = "kernel",
        fp_ops: Mapping[str, float] | tuple[tuple[str, float], ...] | None = None,
        precision: int = 64,
        fixed_block: Sequence[int] | None = None,
        reload_repeated: bool = False,
        output_guards: bool | Sequence[int] = False,
        atomics: Atomics | None = None,
        gathers: Iterable[Gather] = (),
        target: str | None = None,
        registers_source: str = "kernel",
        unbounded: Iterable[str] = (),
        register_counter: RegisterCounter | None = None,
    ) -> None:
        # What the generated __init__ of a frozen dataclass does, with the types
        # a kernel is given in (lists, 1 to 3 extents, a mapping of FP work):
        # __post_init__ checks them and stores the tuples of the fields above.
        given = {"loads": loads, "stores": stores, "domain": domain, "fold": fold,
                 "fp_instructions": fp_instructions, "registers": registers,
                 "shared_memory": shared_memory, "name": name, "fp_ops": fp_ops,
                 "precision": precision, "fixed_block": fixed_block,
                 "reload_repeated": reload_repeated, "output_guards": output_guards,
                 "atomics": atomics, "gathers": gathers, "target": target,
                 "registers_source": registers_source, "unbounded": unbounded,
                 "register_counter": register_counter, "_hash": None}
        for key, value in given.items():
            object.__setattr__(self, key, value)
        self.__post_init__()

    def __hash__(self) -> int:
        # computed once: rankings key their wave tables by kernel
        if self._hash is not None:
            return self._hash
        h = hash(tuple(getattr(self, f.name) for f in fields(self) if f.compare))
        object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict[str, object]:
        # string hashes differ between processes: a worker recomputes its own
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        object.__setattr__(self, "_hash", None)

    def __post_init__(self) -> None:
        if self.gathers:
            gathers = tuple(self.gathers)
            if not all(isinstance(g, Gather) for g in gathers):
                raise KernelError(f"gathers must be ws.Gather accesses, got {self.gathers!r}")
            if len({g.length for g in gathers}) != 1:
                raise KernelError("the gathers of a kernel must have the same list length")
            object.__setattr__(self, "gathers", gathers)
        if self.atomics is not None and not isinstance(self.atomics, Atomics):
            raise KernelError(
                f"atomics must be a ws.Atomics (count, scope, addresses), got {self.atomics!r}"
            )
        loads = _dedupe(self.loads, "loads")
        stores = _dedupe(self.stores, "stores")
        if not loads and not stores:
            raise KernelError("a kernel needs at least one load or store")
        object.__setattr__(self, "loads", loads)
        object.__setattr__(self, "stores", stores)
        dom = _positive_ints(self.domain, "domain extents")
        if len(dom) > 3:
            raise KernelError(f"domain has at most 3 extents (x, y, z), got {dom}")
        object.__setattr__(self, "domain", dom + (1,) * (3 - len(dom)))
        fold = _positive_ints(self.fold, "fold factors")
        if len(fold) > 3:
            raise KernelError(f"fold has at most 3 factors (x, y, z), got {fold}")
        object.__setattr__(self, "fold", fold + (1,) * (3 - len(fold)))
        if self.fp_instructions is not None:
            if isinstance(self.fp_instructions, bool) or not (
                isinstance(self.fp_instructions, (int, float)) and self.fp_instructions >= 0
            ):
                raise KernelError(
                    f"fp_instructions must be a non-negative number, got {self.fp_instructions!r}"
                )
        if self.fp_ops is not None:
            ops = _fp_ops(self.fp_ops)
            object.__setattr__(self, "fp_ops", ops)
            if self.fp_instructions is None:
                object.__setattr__(self, "fp_instructions", float(sum(v for _, v in ops)))
        if self.precision not in (32, 64):
            raise KernelError(f"precision must be 32 or 64 (bits), got {self.precision!r}")
        if self.fixed_block is not None:
            fb = _positive_ints(self.fixed_block, "fixed_block")
            if len(fb) != 3:
                raise KernelError(f"fixed_block must be three integers (x, y, z), got {fb}")
            object.__setattr__(self, "fixed_block", fb)
        if not isinstance(self.reload_repeated, bool):
            raise KernelError(
                f"reload_repeated must be True or False, got {self.reload_repeated!r}"
            )
        object.__setattr__(self, "output_guards", _output_guards(self.output_guards,
                                                                   len(loads), fold))
        if isinstance(self.registers, bool) or not isinstance(self.registers, int) or not (
            1 <= self.registers <= 255
        ):
            raise KernelError(f"registers per thread must be 1..255, got {self.registers!r}")
        if not isinstance(self.registers_source, str) or not self.registers_source:
            raise KernelError(
                f"registers_source must be a non-empty text, got {self.registers_source!r}"
            )
        if isinstance(self.shared_memory, bool) or not isinstance(self.shared_memory, int) or (
            self.shared_memory < 0
        ):
            raise KernelError(
                f"shared_memory must be a non-negative number of bytes, got {self.shared_memory!r}"
            )
        names: dict[str, Field] = {}
        for a in loads + stores:
            other = names.setdefault(a.field.name, a.field)
            if other != a.field:
                raise KernelError(
                    f"two different fields are both called {a.field.name!r}; "
                    "give them distinct names"
                )
        object.__setattr__(self, "unbounded", tuple(self.unbounded))
        check_bounds([a for a in loads if a.field.name not in self.unbounded],
                     [a for a in stores if a.field.name not in self.unbounded], self.domain)

    @property
    def fp_work(self) -> dict[str, float]:
        """FP work per thread by class: ``fp_ops``, or ``fp_instructions``
        counted as plain FMA-class instructions when no classes are given."""
        if self.fp_ops is not None:
            return dict(self.fp_ops)
        return {"fma": float(self.fp_instructions)} if self.fp_instructions else {}

    @property
    def lups_per_thread(self) -> int:
        return math.prod(self.fold)

    @property
    def fields(self) -> tuple[Field, ...]:
        seen: dict[str, Field] = {}
        for a in self.loads + self.stores:
            seen.setdefault(a.field.name, a.field)
        return tuple(seen.values())


def data_bytes(kernel: Kernel) -> int:
    """Bytes of every distinct field the kernel loads, stores or gathers:
    whole arrays (their ``shape`` times ``itemsize``), the kernel's data set
    (MODEL.md §15, the last-level cache; §3, the GPU's memory)."""
    fields = {a.field.name: a.field for a in kernel.loads + kernel.stores}
    fields.update({g.field.name: g.field for g in kernel.gathers})
    return sum(math.prod(f.shape) * f.itemsize for f in fields.values())


class RegisterCounter(Protocol):
    """Counts a kernel's registers per thread for a machine's ``arch``:
    ``(count, source)``. ``origin`` is the ``(registers, registers_source)``
    the kernel came with: a count set since is the caller's and stays."""

    @property
    def origin(self) -> tuple[int, str]: ...

    def __call__(self, arch: str | None) -> tuple[int, str]: ...


def counted_for(kernel: Kernel, arch: str | None) -> Kernel:
    """``kernel`` with its registers counted for a machine's ``arch`` by its
    ``register_counter`` (MODEL.md §3), which it then no longer carries (it
    is that machine's kernel: worker processes of a ranking need not import
    the front end that made the counter); as it is when it has none, or
    when its count was set since it was made (the counter's ``origin``)."""
    counter = getattr(kernel, "register_counter", None)
    if counter is None or (kernel.registers, kernel.registers_source) != counter.origin:
        return kernel  # none, a count of the caller's, or no kernel (predict's check names it)
    count, source = counter(arch)
    return replace(kernel, registers=count, registers_source=source, register_counter=None)
