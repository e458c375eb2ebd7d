"""The measurement series of ``fits/device_prepare.py`` beyond the first two
runs' (MODEL.md §9): each a list of configurations, every one profiled with
Nsight Compute by ``fits/device_measure.sh``. What each series asks is in
``device_prepare.py``'s docstring; this module only lists them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from warpspeed.measure import Plan, params_from_json, plan_for
from warpspeed.measure.programs import plan_name
from warpspeed.measure.schema import params_json

F111, F121, F112, F141 = (1, 1, 1), (1, 2, 1), (1, 1, 2), (1, 4, 1)


#: The probe series: (set name, stencil, parameters, fold, blocks), each block profiled
#: with Nsight Compute (MODEL.md §10: what the H200 run still shows).
PROBE: tuple[tuple[str, str, dict[str, Any], tuple[int, int, int],
                   tuple[tuple[int, int, int], ...]], ...] = (
    # the lattice Boltzmann kernel's narrow blocks: DRAM and L2 volume at each width
    ("probe_lbm_width", "lbm_d3q19", {"precision": 64, "shape": (256, 256, 256)}, F111,
     ((1, 4, 64), (2, 4, 32), (4, 4, 16), (8, 4, 8), (16, 4, 4), (32, 4, 2), (256, 1, 1))),
    # narrow folded stars: predicted 1.3-1.6x too fast
    ("probe_star_narrow", "star3d", {"radius": 1, "shape": (512, 512, 512)}, (1, 8, 1),
     ((1, 8, 32), (2, 8, 16), (8, 4, 8), (64, 4, 1))),
    # 1024-thread blocks of short threads: 20 % slower than 256-thread ones
    ("probe_blocks", "copy3d", {"shape": (512, 512, 512)}, F111,
     ((256, 1, 1), (128, 2, 1), (1024, 1, 1), (64, 4, 4))),
    # small launches: the GPU's own duration beside the time of one launch timed alone
    ("probe_small", "copy3d", {"shape": (64, 64, 64)}, F111, ((32, 4, 2), (128, 2, 1))),
)


#: Shared memory of one SM of the H200 (and every compute capability 9.0
#: GPU), what the driver reserves per block (CUDA programming guide), and
#: the granule a pad is rounded down to (at least the allocation unit).
SM_SHARED, BLOCK_RESERVE, PAD_GRANULE = 233472, 1024, 256

#: The occupancy series: (set name, stencil, parameters, block, most blocks
#: per SM to allow, 0 for none: the unpadded block).
OCCUPANCY: tuple[tuple[str, str, dict[str, Any], tuple[int, int, int],
                       tuple[int, ...]], ...] = (
    ("occ_lbm_f64", "lbm_d3q19", {"precision": 64, "shape": (256, 256, 256)},
     (256, 1, 1), (0, 1, 2, 3)),
    ("occ_lbm_f64", "lbm_d3q19", {"precision": 64, "shape": (256, 256, 256)},
     (128, 1, 1), (0, 1, 2, 3, 4, 5, 6)),
    ("occ_lbm_f64", "lbm_d3q19", {"precision": 64, "shape": (256, 256, 256)},
     (16, 4, 4), (0, 1, 2, 3)),
    ("occ_lbm_f32", "lbm_d3q19", {"precision": 32, "shape": (256, 256, 256)},
     (256, 1, 1), (0, 1, 2, 3, 4, 5, 6)),
    ("occ_lbm_f32", "lbm_d3q19", {"precision": 32, "shape": (256, 256, 256)},
     (16, 4, 4), (0, 1, 2, 3, 6)),
    ("occ_copy", "copy3d", {"shape": (512, 512, 512)}, (256, 1, 1),
     (0, 1, 2, 3, 4, 5, 6, 8)),
    ("occ_copy", "copy3d", {"shape": (512, 512, 512)}, (1024, 1, 1), (0, 1, 2)),
    ("occ_box", "box3d", {"shape": (640, 512, 512)}, (256, 1, 1), (0, 1, 2, 4)),
    ("occ_box", "box3d", {"shape": (640, 512, 512)}, (1024, 1, 1), (0, 1)),
    ("occ_star_r2", "star3d", {"radius": 2, "shape": (640, 512, 512)}, (256, 1, 1),
     (0, 1, 2, 4)),
    ("occ_star_r2", "star3d", {"radius": 2, "shape": (640, 512, 512)}, (1024, 1, 1),
     (0, 1)),
)


def shared_pad(blocks_per_sm: int) -> int:
    """Dynamic shared memory per block that lets at most ``blocks_per_sm``
    blocks onto an SM (:data:`SM_SHARED`, :data:`BLOCK_RESERVE`); 0 for 0."""
    if blocks_per_sm <= 0:
        return 0
    return (SM_SHARED // blocks_per_sm - BLOCK_RESERVE) // PAD_GRANULE * PAD_GRANULE


def padded(plan: Plan, blocks_per_sm: int, note: str) -> Plan:
    """``plan`` with each block reserving :func:`shared_pad` bytes; the pad
    joins the row's parameters (``shared_pad``), so each pad is its own
    configuration."""
    pad = shared_pad(blocks_per_sm)
    if not pad:
        return replace(plan, note=f"{note} unpadded")
    params = params_json({**params_from_json(plan.params), "shared_pad": pad})
    return replace(plan, params=params, note=f"{note} at most {blocks_per_sm} blocks/SM",
                   name=plan_name(plan.program.function, plan.stencil, params, pad),
                   program=replace(plan.program, shared_bytes=pad))


def occupancy_plans(info: dict[str, str]) -> list[Plan]:
    """The occupancy series (:data:`OCCUPANCY`): every block profiled."""
    out = []
    for name, stencil, params, block, counts in OCCUPANCY:
        plan = plan_for(stencil, params, F111, blocks=(block,), note=f"set {name}", info=info)
        out += [padded(plan, n, f"set {name}") for n in counts]
    return merge_blocks(out)


def merge_blocks(plans: Sequence[Plan]) -> list[Plan]:
    """Plans of one name (one kernel and pad) joined: their blocks timed
    in one plan, in order."""
    merged: dict[str, Plan] = {}
    for p in plans:
        if p.name in merged:
            q = merged[p.name]
            p = replace(q, blocks=q.blocks + tuple(b for b in p.blocks if b not in q.blocks))
        merged[p.name] = p
    return list(merged.values())


#: The lbm_sizes series: domains and blocks of lbmpy's D3Q19, each in both precisions.
LBM_SIZES = ((256, 256, 256), (200, 200, 200), (320, 320, 160), (512, 256, 128))
LBM_SIZE_BLOCKS = ((128, 2, 1), (64, 4, 1), (32, 8, 1), (16, 4, 4))


def lbm_size_plans(info: dict[str, str]) -> list[Plan]:
    """The lbm_sizes series (module docstring)."""
    sizes = [plan_for("lbm_d3q19", {"precision": prec, "shape": shape}, F111,
                      blocks=LBM_SIZE_BLOCKS, note=f"set lbm_sizes_f{prec}", info=info)
             for prec in (64, 32) for shape in LBM_SIZES]
    folded = [plan_for("lbm_d3q19", {"precision": prec, "shape": LBM_SIZES[0]}, fold,
                       blocks=LBM_SIZE_BLOCKS, note=f"set lbm_folds_f{prec}", info=info)
              for prec in (64, 32) for fold in ((2, 1, 1), F121)]
    return sizes + folded


#: The drain series: block widths of a copy 1024 wide, each padded to
#: 1024 resident threads per SM and unpadded.
DRAIN_BLOCKS, DRAIN_THREADS = (64, 128, 256, 512, 1024), 1024


def drain_plans(info: dict[str, str]) -> list[Plan]:
    """The drain series (module docstring)."""
    out = []
    for width in DRAIN_BLOCKS:
        plan = plan_for("copy3d", {"shape": (1024, 512, 256)}, F111, blocks=((width, 1, 1),),
                        note="set drain_copy", info=info)
        out += [padded(plan, n, "set drain_copy") for n in (0, DRAIN_THREADS // width)]
    return merge_blocks(out)


#: The heldout series: (set name, stencil, parameters, fold, blocks).
SMALL_BLOCKS = ((32, 1, 1), (64, 1, 1), (32, 2, 1), (16, 2, 2), (128, 1, 1), (64, 2, 1),
                (32, 4, 1), (8, 4, 4), (256, 1, 1))
XFOLD_BLOCKS = ((256, 1, 1), (128, 2, 1), (64, 4, 1), (32, 8, 1))
HELDOUT: tuple[tuple[str, str, dict[str, Any], tuple[int, int, int],
                     tuple[tuple[int, int, int], ...]], ...] = (
    # the unfolded star's blocks include the x-folds' (one plan per kernel and fold)
    ("heldout_small_r1", "star3d", {"radius": 1, "shape": (512, 512, 512)}, F111,
     SMALL_BLOCKS + XFOLD_BLOCKS[1:]),
    ("heldout_small_r4", "star3d", {"radius": 4, "shape": (640, 512, 512)}, F111,
     ((64, 1, 1), (32, 2, 1), (128, 1, 1), (256, 1, 1))),
    ("heldout_small_box", "box3d", {"shape": (640, 512, 512)}, F111,
     ((64, 1, 1), (32, 2, 1), (128, 1, 1), (256, 1, 1))),
    *(("heldout_xfold_r1", "star3d", {"radius": 1, "shape": (512, 512, 512)}, fold,
       XFOLD_BLOCKS) for fold in ((2, 1, 1), (4, 1, 1))),
)


#: The r4probe series (module docstring): set, stencil, parameters, fold, blocks.
R4PROBE: tuple[tuple[str, str, dict[str, Any], tuple[int, int, int],
                     tuple[tuple[int, int, int], ...]], ...] = (
    ("r4probe_fold", "star3d", {"radius": 4, "shape": (640, 512, 512)}, (1, 4, 1),
     ((16, 1, 32), (16, 1, 16), (64, 1, 16), (32, 2, 16), (16, 4, 16), (32, 1, 32), (32, 8, 4),
      (256, 1, 1))),
    ("r4probe_flat", "star3d", {"radius": 4, "shape": (640, 512, 512)}, F111,
     ((16, 1, 32), (64, 1, 16), (32, 8, 4))),
    ("r4probe_narrow", "star3d", {"radius": 4, "shape": (640, 512, 512)}, F121,
     ((1, 256, 1), (2, 128, 1), (8, 32, 1), (1, 4, 64), (8, 1, 32), (4, 4, 16))),
)


def r4probe_plans(info: dict[str, str]) -> list[Plan]:
    """The r4probe series (:data:`R4PROBE`): every block profiled."""
    return listed_plans(R4PROBE, info)


def heldout_plans(info: dict[str, str]) -> list[Plan]:
    """The heldout series (:data:`HELDOUT`): every block profiled."""
    return listed_plans(HELDOUT, info)


#: The streams series: arrays copied at once, precisions, domain and blocks.
STREAMS = ((1, 2, 4, 8, 19), (64, 32), (512, 256, 256),
           ((256, 1, 1), (64, 4, 1), (32, 8, 1), (16, 4, 4)))


def stream_plans(info: dict[str, str]) -> list[Plan]:
    """The streams series (module docstring)."""
    counts, precisions, shape, blocks = STREAMS
    return [plan_for("streams3d", {"fields": n, "precision": prec, "shape": shape}, F111,
                     blocks=blocks, note=f"set streams_f{prec}", info=info)
            for prec in precisions for n in counts]


#: The lbm_parts series: kernel types, precisions and blocks of lbmpy's D3Q19 (256^3).
LBM_PARTS = (("stream_pull_collide", "collide_only", "stream_pull_only"), (64, 32),
             ((256, 1, 1), (128, 2, 1), (64, 4, 1), (32, 8, 1), (16, 4, 4), (8, 8, 4)))


def lbm_part_plans(info: dict[str, str]) -> list[Plan]:
    """The lbm_parts series (module docstring)."""
    types, precisions, blocks = LBM_PARTS
    return [plan_for("lbm_d3q19", {"kernel_type": kt, "precision": prec,
                                   "shape": (256, 256, 256)}, F111,
                     blocks=blocks, note=f"set lbm_parts_f{prec}", info=info)
            for prec in precisions for kt in types]


#: The shifts series: shifts, precisions and blocks of a 19-array copy (256^3).
SHIFTS = (("none", "x", "y", "z", "d3q19"), (64, 32), ((256, 1, 1), (32, 8, 1), (16, 4, 4)))


def shift_plans(info: dict[str, str]) -> list[Plan]:
    """The shifts series (module docstring)."""
    shifts, precisions, blocks = SHIFTS
    return [plan_for("streams3d", {"fields": 19, "shift": sh, "precision": prec,
                                   "shape": (256, 256, 256)}, F111,
                     blocks=blocks, note=f"set shifts_f{prec}", info=info)
            for prec in precisions for sh in shifts]


#: The pitch series: interiors, shifts, precisions and blocks.
PITCH = (((256, 256, 256), (254, 256, 256)), ("ghost", "x", "y"), (64, 32),
         ((128, 2, 1), (32, 8, 1)))


def pitch_plans(info: dict[str, str]) -> list[Plan]:
    """The pitch series (module docstring)."""
    shapes, shifts, precisions, blocks = PITCH
    copies = [plan_for("streams3d", {"fields": 19, "shift": sh, "precision": prec,
                                     "shape": shape}, F111,
                       blocks=blocks, note=f"set pitch_f{prec}", info=info)
              for prec in precisions for shape in shapes for sh in shifts]
    lbm = [plan_for("lbm_d3q19", {"precision": prec, "shape": shape}, F111, blocks=blocks,
                    note=f"set pitch_lbm_f{prec}", info=info)
           for prec in precisions for shape in shapes]
    return copies + lbm


#: The pitch2 series: arrays, cells along x, precisions, the block.
PITCH2 = ((2, 8, 19), (250, 252, 254, 256), (64, 32), (128, 2, 1))


def pitch2_plans(info: dict[str, str]) -> list[Plan]:
    """The pitch2 series (module docstring)."""
    counts, widths, precisions, block = PITCH2
    copies = [plan_for("streams3d", {"fields": n, "shift": "ghost", "precision": prec,
                                     "shape": (x, 256, 256)}, F111, blocks=(block,),
                       note=f"set pitch2_f{prec}", info=info)
              for prec in precisions for n in counts for x in widths]
    lbm = [plan_for("lbm_d3q19", {"precision": prec, "shape": (x, 256, 256)}, F111,
                    blocks=(block,), note=f"set pitch2_lbm_f{prec}", info=info)
           for prec in precisions for x in widths[:2]]
    return copies + lbm


def listed_plans(series: Sequence[tuple[str, str, dict[str, Any], tuple[int, int, int],
                                         tuple[tuple[int, int, int], ...]]],
                 info: dict[str, str]) -> list[Plan]:
    """The plans of a series listed as (set name, stencil, parameters, fold,
    blocks), one per entry."""
    return [plan_for(stencil, params, fold, blocks=blocks, note=f"set {name}", info=info)
            for name, stencil, params, fold, blocks in series]


def probe_plans(info: dict[str, str]) -> list[Plan]:
    """The probe series (:data:`PROBE`): every block profiled."""
    return listed_plans(PROBE, info)


#: The capacity series (``device_prepare.py``'s docstring): the 7-point star's
#: plane sizes around its layer condition's break, each in 256x1x1 blocks
#: unfolded and folded along y; the radius-4 star's plane sizes below it.
LAYER_PLANES, R4_PLANES = (640, 768, 896), (384, 448, 576, 640)
CAPACITY: tuple[tuple[str, str, dict[str, Any], tuple[int, int, int],
                      tuple[tuple[int, int, int], ...]], ...] = (
    *(("capacity_layer", "star3d", {"radius": 1, "shape": (2048, ny, 32)}, fold, ((256, 1, 1),))
      for ny in LAYER_PLANES for fold in (F111, F121, F141)),
    # the same wave 2 and 4 rows deep without folding
    ("capacity_layer", "star3d", {"radius": 1, "shape": (2048, 768, 32)}, F111,
     ((128, 2, 1), (64, 4, 1))),
    *(("capacity_r4", "star3d", {"radius": 4, "shape": (640, ny, 512)}, F111, ((256, 1, 1),))
      for ny in R4_PLANES),
)
#: lbmpy's D3Q19 in float folded 2x1x1 (every store instruction writes half
#: sectors) at these most blocks per SM (0: unpadded).
SPLIT_PADS = (0, 1, 3)


def capacity_plans(info: dict[str, str]) -> list[Plan]:
    """The capacity series (:data:`CAPACITY`, :data:`SPLIT_PADS`): every block profiled."""
    split = plan_for("lbm_d3q19", {"precision": 32, "shape": (256, 256, 256)}, (2, 1, 1),
                     blocks=((16, 4, 4),), note="set capacity_split", info=info)
    return merge_blocks(listed_plans(CAPACITY, info)
                        + [padded(split, n, "set capacity_split") for n in SPLIT_PADS])
