"""Stage 5 of the pipeline, ranking configurations: one prediction
(:mod:`warpspeed.model`) per launch of a design space, best first
(MODEL.md §8, ranking).

* ``rank``: the ranking itself, :func:`warpspeed.rank` (design space, pruning, evaluation).
* ``design_space``: block shapes, folds and the trimming of the design space.
* ``pruning``: launches that provably share a prediction, and bounds from the block stage.
* ``variants``: the kernels a ranking compares and the default thread counts.
* ``evaluate``: the equivalence classes' block stages and wave volumes, pipelined.
* ``ties``: the ranking's order and what it cannot separate.
* ``merge_note``: the note on loads a thread repeats.
* ``executor``: running the chunks of work on an executor, a process pool or inline.
* ``workers``: worker processes safe to start from a process with threads.
"""
