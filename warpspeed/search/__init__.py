"""Stage 4 of the pipeline, ranking configurations: one prediction
(:mod:`warpspeed.model`) per launch of a design space, best first
(MODEL.md §8, ranking).

* ``rank``: the ranking itself, :func:`warpspeed.rank` (design space, pruning, evaluation).
* ``design_space``: block shapes, folds and the trimming of the design space.
* ``pruning``: launches that provably share a prediction, and bounds from the block stage.
* ``executor``: running the chunks of work on an executor, a process pool or inline.
"""
