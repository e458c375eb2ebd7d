"""Stage 5 of the pipeline, explaining results: what a prediction or a
ranking (:mod:`warpspeed.model`, :mod:`warpspeed.search`) means for the
kernel's author (MODEL.md §5-§8 and §10).

* ``advice``: which limiter binds, why, and what would help by how much.
* ``breakdown``: each volume split into the parts that make it.
* ``plot``: figures of rankings, limits, volume breakdowns and sweeps (matplotlib).
* ``expected``: what accuracy to expect where a number is read.
* ``tables``: the command line's tables, every column with its unit.
* ``words``: the family's names of an SM and a warp in what is printed.
"""
