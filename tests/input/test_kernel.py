"""Kernel descriptions are validated on construction (MODEL.md §1)."""

import pytest
import sympy as sp

import warpspeed as ws

x, y, z = ws.tidx, ws.tidy, ws.tidz
A = ws.Field("A", shape=(64, 64, 64))
B = ws.Field("B", shape=(64, 64, 64))


def test_builtins_and_global_coordinates_are_the_same_addresses():
    a = ws.Kernel(loads=[A[x, y, z]], stores=[], domain=(64, 64, 64))
    t, b, d = ws.threadIdx, ws.blockIdx, ws.blockDim
    c = ws.Kernel(
        loads=[A[b.x * d.x + t.x, b.y * d.y + t.y, d.z * b.z + t.z]], stores=[], domain=(64, 64, 64)
    )
    assert a.loads == c.loads


def test_duplicate_accesses_count_once():
    k = ws.Kernel(loads=[A[x, y, z], A[x, y, z], A[x + 1, y, z]], stores=[B[x, y, z]] * 2,
                  domain=(63, 64, 64))
    assert len(k.loads) == 2 and len(k.stores) == 1


def test_product_of_thread_coordinates_is_rejected_naming_the_term():
    with pytest.raises(ws.NonAffineError, match="multiplies thread-dependent"):
        A[x * y, y, z]


def test_indirect_access_is_rejected():
    idx = sp.IndexedBase("idx")
    with pytest.raises(ws.NonAffineError, match="indirect"):
        A[idx[x], y, z]


def test_unknown_symbol_is_rejected_naming_it():
    n = sp.Symbol("n")
    with pytest.raises(ws.NonAffineError, match="unknown symbol n"):
        A[x + n, y, z]


def test_non_integer_coefficient_is_rejected():
    with pytest.raises(ws.NonAffineError, match="non-integer"):
        ws.predict(ws.Kernel(loads=[A[x / 2, y, z]], stores=[], domain=(64, 64, 64)),
                   "A100", (32, 2, 1))


def test_floor_and_modulo_by_constants_are_accepted():
    k = ws.Kernel(loads=[A[sp.floor(x / 2), sp.Mod(y, 4), z]], stores=[], domain=(64, 64, 64))
    assert ws.predict(k, "A100", (32, 4, 2)).glups > 0


def test_modulo_by_a_thread_coordinate_is_rejected():
    with pytest.raises(ws.NonAffineError, match="modulo"):
        A[sp.Mod(x, y + 1), y, z]


def test_wrong_number_of_indices_is_rejected():
    with pytest.raises(ws.KernelError, match="3 dimensions but is indexed with 2"):
        A[x, y]


@pytest.mark.parametrize("domain", [(0, 4, 4), (4, -1, 4), (1, 2, 3, 4), ()])
def test_bad_domain_is_rejected(domain):
    with pytest.raises(ws.KernelError, match="domain"):
        ws.Kernel(loads=[A[x, y, z]], stores=[], domain=domain)


@pytest.mark.parametrize("block", [(2048, 1, 1), (32, 32, 2), (0, 1, 1), (16, 16)])
def test_bad_block_is_rejected(block):
    k = ws.Kernel(loads=[A[x, y, z]], stores=[], domain=(64, 64, 64))
    with pytest.raises(ws.LaunchError, match="block"):
        ws.predict(k, "A100", block)


def test_bad_field_is_rejected():
    with pytest.raises(ws.KernelError, match="itemsize"):
        ws.Field("C", shape=(4,), itemsize=3)
    with pytest.raises(ws.KernelError, match="shape"):
        ws.Field("C", shape=(4, 0))
    with pytest.raises(ws.KernelError, match="identifier"):
        ws.Field("no name", shape=(4,))
    with pytest.raises(ws.KernelError, match="strides"):
        ws.Field("C", shape=(4, 4), strides=(1,))


def test_two_fields_with_one_name_are_rejected():
    other = ws.Field("A", shape=(32, 32, 32))
    with pytest.raises(ws.KernelError, match="both called 'A'"):
        ws.Kernel(loads=[A[x, y, z], other[x, y, z]], stores=[], domain=(8, 8, 8))


def test_kernel_needs_an_access_and_sane_numbers():
    with pytest.raises(ws.KernelError, match="at least one"):
        ws.Kernel(loads=[], stores=[], domain=(4,))
    with pytest.raises(ws.KernelError, match="registers"):
        ws.Kernel(loads=[A[x, y, z]], stores=[], domain=(4,), registers=300)
    with pytest.raises(ws.KernelError, match="fp_instructions"):
        ws.Kernel(loads=[A[x, y, z]], stores=[], domain=(4,), fp_instructions=-1)


def test_base_offset_is_reduced_to_its_alignment():
    assert ws.Field("C", shape=(4,), base_offset=128 + 24).base_offset == 24


def test_an_index_crossing_into_the_next_row_is_refused_naming_its_range():
    # inside the allocation (flat offsets 60..262139) but x - 4 spans -4..59: the row before
    with pytest.raises(ws.OutOfBoundsError, match=r"index 0 spans -4\.\.59 but the extent is 64"):
        ws.Kernel(loads=[A[x - 4, y + 1, z]], stores=[], domain=(64, 63, 64))
    k = ws.Kernel(loads=[A[x + 4, y + 1, z]], stores=[], domain=(60, 63, 64))
    assert ws.predict(k, "A100", (64, 4, 1)).volumes.l1_load == pytest.approx(8.0)


def test_an_access_outside_its_fields_allocation_is_refused_naming_it():
    small = ws.Field("small", shape=(64, 64, 64))
    with pytest.raises(ws.OutOfBoundsError) as info:
        ws.Kernel(loads=[small[x + 100000, y, z]], stores=[], domain=(640, 640, 640))
    text = str(info.value)
    # hand count: x + 100000 over x = 0..639; extent 64; flat 64^3 - 1 = 262143
    assert "small[" in text and "index 0 spans 100000..100639 but the extent is 64" in text
    assert "0..262143" in text
    # a forgotten ghost layer: x - 1 at x = 0 of the first row is element -1
    with pytest.raises(ws.OutOfBoundsError, match=r"reads outside field A.*-1\.\.262142"):
        ws.Kernel(loads=[A[x - 1, y, z]], stores=[B[x, y, z]], domain=(64, 64, 64))
    # a store past the end: the last thread writes element 64^3
    with pytest.raises(ws.OutOfBoundsError, match="writes outside field B"):
        ws.Kernel(loads=[A[x, y, z]], stores=[B[x + 1, y, z]], domain=(64, 64, 64))


def test_a_wrapped_index_inside_the_field_is_accepted_and_one_outside_refused():
    # periodic wrap along x: (x + 1) mod 64 stays inside a 64-wide row
    ws.Kernel(loads=[A[sp.Mod(x + 1, 64), y, z]], stores=[B[x, y, z]], domain=(64, 64, 64))
    # floor form reaching past the end at the last corner thread: x // 2 + 40 reaches 71
    with pytest.raises(ws.OutOfBoundsError):
        ws.Kernel(loads=[A[sp.floor(x / 2) + 40, y, z + 1]], stores=[], domain=(64, 64, 64))


def test_indices_of_the_thread_index_alone_are_not_checked():
    # depends on the block's own thread index: a function of the block size, not checked
    C = ws.Field("C", shape=(32,))
    ws.Kernel(loads=[C[ws.threadIdx.x]], stores=[B[x, y, z]], domain=(64, 64, 64))


@pytest.mark.parametrize("cls", [ws.Kernel, ws.Field])
def test_the_constructor_takes_every_field_the_dataclass_declares(cls):
    # Kernel and Field write their own __init__ (they take lists, 1 to 3
    # extents, a mapping of FP work, strides or None); a field added without a
    # parameter would never be set
    import dataclasses
    import inspect

    params = list(inspect.signature(cls.__init__).parameters)[1:]
    assert params == [f.name for f in dataclasses.fields(cls) if f.init]


def test_loads_and_stores_must_be_lists_of_accesses():
    """One access given where a list is asked for ended in "TypeError:
    'Access' object is not iterable"."""
    A = ws.Field("A", shape=(66, 66, 66))
    one = A[ws.tidx + 1, ws.tidy, ws.tidz]
    with pytest.raises(ws.KernelError, match=r"^loads must be a list of accesses like "
                                             r"\[A\[x, y, z\]\], got the one access A\[.*wrap it"):
        ws.Kernel(loads=one, stores=[], domain=(64, 64, 64))
    for bad in (None, 5):
        with pytest.raises(ws.KernelError, match=f"stores must be a list of accesses .* got {bad}"):
            ws.Kernel(loads=[one], stores=bad, domain=(64, 64, 64))
    with pytest.raises(ws.KernelError, match="loads must be accesses like A\\[x, y, z\\], got 3"):
        ws.Kernel(loads=[one, 3], stores=[], domain=(64, 64, 64))
