"""Stage 1 of the pipeline, describing a kernel: what the model is given
(MODEL.md §1), before any launch is chosen. The later stages
(:mod:`warpspeed.volumes`, :mod:`warpspeed.timing`) read what is built here.

* ``fields``: fields and accesses, validated on construction.
* ``kernel``: kernels of them, validated on construction; ``bounds``: every
  access within its field for the domain's threads.
* ``expr``: index expressions: CUDA builtins, quasi-affine forms, isl.
* ``addresses``: addresses of the accesses once the block size is bound.
* ``binding``: a kernel bound to one block, once, for the volume stages.
* ``gathers``: indexed accesses (gathers and scatters) through index lists.
* ``atomics``: atomic updates of one address (the reduction limiter).
* ``stencil_spec``: stencils named on a command line and their parameters.
* ``compiler``: registers per thread from the vendor's compiler, fed with
  source text by the front ends (``nvcc``; cached in memory and on disk).
* ``triples``: x, y, z triples and integer lists from text or sequences, one
  grammar and one error style for every front end.
"""
