"""Fields and accesses, the leaves of the model's input (MODEL.md §1): an
array in global memory and one load or store of it. :mod:`.kernel` builds
kernels of them; :mod:`.bounds` and :mod:`.gathers` check and extend their
accesses. Validated on construction, as everything in :mod:`warpspeed.input`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from ..errors import KernelError, NonAffineError
from .expr import SymForm, parse

ITEMSIZES = (1, 2, 4, 8, 16)

def _positive_ints(value: object, what: str) -> tuple[int, ...]:
    # whatever the caller gave: one value, or values checked one by one below
    try:
        items: tuple[Any, ...] = tuple(cast(Iterable[Any], value))
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


@dataclass(frozen=True, init=False)
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
    #: In elements; given or computed by the constructor (its default None: dimension 0
    #: contiguous), so never the default written here.
    strides: tuple[int, ...] = ()
    base_offset: int = 0

    def __init__(self, name: str, shape: Iterable[int], itemsize: int = 8,
                 strides: Iterable[int] | None = None, base_offset: int = 0) -> None:
        # What the generated __init__ of a frozen dataclass does, with the types a
        # field is given in: __post_init__ checks them and stores the tuples
        given = {"name": name, "shape": shape, "itemsize": itemsize, "strides": strides,
                 "base_offset": base_offset}
        for key, value in given.items():
            object.__setattr__(self, key, value)
        self.__post_init__()

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
    index: tuple[object, ...] = dataclasses.field(compare=False)
    forms: tuple[SymForm, ...] = dataclasses.field(init=False, repr=False)
    _hash: int = dataclasses.field(init=False, repr=False, compare=False)

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


__all__ = ["ITEMSIZES", "Access", "Field"]
