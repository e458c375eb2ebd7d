"""Stage 2 of the pipeline, what moves where: from a kernel
(:mod:`warpspeed.input`) and a launch to bytes per lattice update at each
memory level (MODEL.md §3-§7), which :mod:`warpspeed.timing` turns into time.

* ``launch``: occupancy, grid, waves and the thread sets of the DRAM model.
* ``sampling``: thread enumeration with NumPy for the block stage.
* ``l1``: L1 load/store cycles by half-warp enumeration.
* ``footprint``: block footprints, the L2 → L1 volumes.
* ``distinct``: sorted distinct values of integer arrays (footprints, gathers).
* ``gathers``: the volumes of indexed accesses (gathers and scatters).
* ``held``: registers a thread's merged loads hold, and whether they fit.
* ``streams``: concurrent DRAM streams of a kernel.
* ``waves``: whole-wave DRAM footprints with isl sets.
* ``direct_images``: wave images of single accesses as strided boxes, without isl.
* ``box_images``: the wave images of a field's accesses at once, with NumPy.
* ``counting``: exact point counts of the wave sets without barvinok.
* ``strided_images``: wave images of folds strided by the block size.
* ``capacity``: the Gompertz capacity curves (evaluation, loading, fitting).
* ``levels``: volumes per level, the counts above through the capacity curves.
"""
