"""Classes of floating-point work (MODEL.md §1, §12), shared by the kernel
description (:mod:`warpspeed.input.kernel`) and the machine files
(:mod:`warpspeed.machine`, the ``[fp64_cost]`` / ``[fp32_cost]`` tables), so
that neither imports the other."""

#: Classes of floating-point work, each costed per machine in FMA issue
#: slots (``[fp_cost]`` of the machine files): ``fma`` covers add, sub, mul,
#: fused multiply-add, min, max and abs; ``trig`` sin, cos, tan and their
#: inverses; ``other`` any other math function.
FP_CLASSES = ("fma", "div", "sqrt", "rsqrt", "exp", "log", "pow", "trig", "other")
