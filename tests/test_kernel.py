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
                  domain=(64, 64, 64))
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


def test_indices_outside_the_shape_are_allowed():
    k = ws.Kernel(loads=[A[x - 4, y, z]], stores=[], domain=(64, 64, 64))
    assert ws.predict(k, "A100", (64, 4, 1)).volumes.l1_load == pytest.approx(8.0)
