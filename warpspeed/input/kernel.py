"""The input of the model: fields, accesses and kernels (MODEL.md §1).

Everything is validated on construction, so that an invalid description fails
where it is written and not deep inside NumPy or islpy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

from ..errors import KernelError, NonAffineError
from ..fpclasses import FP_CLASSES as _FP_CLASSES
from .atomics import Atomics
from .bounds import check_bounds
from .expr import SymForm, parse
from .gathers import Gather

ITEMSIZES = (1, 2, 4, 8, 16)

#: Classes of floating-point work (defined in :mod:`warpspeed.fpclasses`, which the
#: machine files share); re-exported here for the kernel description.
FP_CLASSES = _FP_CLASSES


def _positive_ints(value: object, what: str) -> tuple[int, ...]:
    try:
        items = tuple(value)  # type: ignore[call-overload]
    except TypeError:
        items = (value,)
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int) and not hasattr(v, "__index__"):
            raise KernelError(f"{what} must be positive integers, got {value!r}")
        iv = int(v)
        if iv <= 0:
            raise KernelError(f"{what} must be positive integers, got {value!r}")
        out.append(iv)
    if not out:
        raise KernelError(f"{what} must not be empty")
    return tuple(out)


@dataclass(frozen=True)
class Field:
    """An array in global memory.

    ``shape`` is in elements with dimension 0 contiguous unless ``strides``
    (in elements) say otherwise. ``base_offset`` is the byte offset of
    element 0 from a 128 B boundary (MODEL.md §1); it is reduced modulo 128
    because only the alignment matters to the model. An access with an
    index outside its dimension's extent, or an element offset outside the
    allocation, for a thread of the kernel's domain is refused with
    :class:`warpspeed.OutOfBoundsError` (:mod:`warpspeed.input.bounds`).

    Example (indexing a field makes an access; nothing is predicted yet)::

        >>> import warpspeed as ws
        >>> A = ws.Field("A", shape=(66, 66, 66), itemsize=8)
        >>> A.strides                  # in elements, dimension 0 contiguous
        (1, 66, 4356)
        >>> a = A[ws.tidx + 1, ws.tidy, ws.tidz]  # an access: the field and its indices
        >>> a.field is A, len(a.index)
        (True, 3)
        >>> ws.Field("B", shape=(64,), base_offset=136).base_offset  # modulo 128 B
        8
    """

    name: str
    shape: tuple[int, ...]
    itemsize: int = 8
    strides: tuple[int, ...] | None = None
    base_offset: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise KernelError(f"field name must be an identifier, got {self.name!r}")
        shape = _positive_ints(self.shape, f"shape of field {self.name}")
        object.__setattr__(self, "shape", shape)
        if self.itemsize not in ITEMSIZES:
            raise KernelError(
                f"itemsize of field {self.name} must be one of {ITEMSIZES} bytes, "
                f"got {self.itemsize!r}"
            )
        if self.strides is None:
            strides = tuple(math.prod(shape[:d]) for d in range(len(shape)))
        else:
            strides = tuple(int(s) for s in self.strides)
            if len(strides) != len(shape):
                raise KernelError(
                    f"field {self.name} has {len(shape)} dimensions but {len(strides)} strides"
                )
        object.__setattr__(self, "strides", strides)
        if isinstance(self.base_offset, bool) or not isinstance(self.base_offset, int):
            raise KernelError(
                f"base_offset of field {self.name} must be an integer byte offset, "
                f"got {self.base_offset!r}"
            )
        object.__setattr__(self, "base_offset", self.base_offset % 128)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # one object per field and process once unpickled (see Access)
        return (_interned_field, (self.name, self.shape, self.itemsize, self.strides,
                                  self.base_offset))

    def __getitem__(self, index: object) -> Access:
        idx = index if isinstance(index, tuple) else (index,)
        return Access(self, idx)


@dataclass(frozen=True)
class Access:
    """One load or store: a field and one index expression per dimension.

    The expressions are parsed into quasi-affine forms on construction;
    two accesses are equal when their field and forms are equal.
    """

    field: Field
    index: tuple[object, ...] = field(compare=False)
    forms: tuple[SymForm, ...] = field(init=False, repr=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # unpickled in a ranking's worker: one object per access and process,
        # so that tables keyed by accesses compare by identity (and string
        # hashes, which differ between processes, are recomputed)
        return (_interned_access, (self.field, self.index, self.forms))

    def __post_init__(self) -> None:
        if not isinstance(self.field, Field):
            raise KernelError(f"an access needs a ws.Field, got {self.field!r}")
        idx = tuple(self.index)
        if len(idx) != self.field.ndim:
            raise KernelError(
                f"field {self.field.name} has {self.field.ndim} dimensions but is "
                f"indexed with {len(idx)} indices: {idx}"
            )
        object.__setattr__(self, "index", idx)
        try:  # printing the access for the message costs more than parsing it
            forms = tuple(parse(e, "") for e in idx)
        except NonAffineError:
            what = f"{self.field.name}{list(idx)}"
            forms = tuple(parse(e, what) for e in idx)
        object.__setattr__(self, "forms", forms)
        # kernels of thousands of accesses are hashed as dictionary keys
        object.__setattr__(self, "_hash", hash((self.field, forms)))

    def __str__(self) -> str:
        return f"{self.field.name}[{', '.join(str(e) for e in self.index)}]"


_ACCESSES: dict[tuple[object, ...], Access] = {}
_FIELDS: dict[Field, Field] = {}
_INTERN_LIMIT = 200_000


def _interned_field(name: str, shape: tuple[int, ...], itemsize: int,
                    strides: tuple[int, ...], base_offset: int) -> Field:
    f = Field(name, shape, itemsize, strides, base_offset)
    if len(_FIELDS) < _INTERN_LIMIT:
        f = _FIELDS.setdefault(f, f)
    return f


def _interned_access(field_: Field, index: tuple[object, ...],
                     forms: tuple[SymForm, ...]) -> Access:
    key = (field_, forms)
    acc = _ACCESSES.get(key)
    if acc is None:
        acc = object.__new__(Access)
        for name, value in (("field", field_), ("index", index), ("forms", forms),
                            ("_hash", hash(key))):
            object.__setattr__(acc, name, value)
        if len(_ACCESSES) < _INTERN_LIMIT:
            _ACCESSES[key] = acc
    return acc


def _dedupe(accesses: Sequence[Access], kind: str) -> tuple[Access, ...]:
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


@dataclass(frozen=True)
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
      ``"nvcc sm_80"``, ``"estimate: <why>"`` (:mod:`warpspeed.pystencils.registers`);
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
    fp_ops: Mapping[str, float] | tuple[tuple[str, float], ...] | None = None
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
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        # computed once: rankings key their wave tables by kernel
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(
                getattr(self, f.name) for f in fields(self) if f.compare)))
        return self._hash  # type: ignore[return-value]

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
        loads = _dedupe(tuple(self.loads), "loads")
        stores = _dedupe(tuple(self.stores), "stores")
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
            return dict(self.fp_ops)  # type: ignore[arg-type]
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
