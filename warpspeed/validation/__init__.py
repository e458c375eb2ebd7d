"""Stage 8 of the pipeline, against measurements: the predictions of
:mod:`warpspeed.model` compared with measured counters and times, and the
constants refitted from them (MODEL.md §9-§11).

* ``reference``: the public V100 measurements and both timing models on them.
* ``transfer``: the development sets, the joint fit and the leave-one-set-out table.
* ``regression``: built-in regression kernels, both models side by side.
* ``validate``: validation of predictions against a measurement CSV.
* ``pairing``: measured configurations paired with the model's predictions.
* ``refit``: per-machine capacity curves refitted from measurements.
* ``hit_fractions``: measured hit fractions of the capacity curves.
* ``grounds``: what grounds each machine, and the lattice Boltzmann rows.
* ``evidence``: the error bands of the development rows a prediction quotes.
* ``provenance``: where the reference measurements come from.
* ``microbench``: the public micro-benchmark tables and what each determines.
* ``calibrate``: a machine file from micro-benchmark tables and a base file.
* ``datasheet``: a machine file from a data sheet and a known GPU.
* ``memory_fit``: the memory systems' fitted constants.
* ``kernel_calibrate``: a machine file's figures fitted on kernel measurements.
* ``median_rule``: the rows, the median ratio and the bisection a kernel calibration fits by.
* ``measured_sets``: the project's own measurements as development sets.
"""
