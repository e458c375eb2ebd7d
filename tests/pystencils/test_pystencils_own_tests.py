"""Every kernel of pystencils' own GPU tests that pystencils 2.1 generates is
predicted with a believable number, or refused by name where the construct
is outside the input (issue "no silent wrong answer"; the cases:
``tests/corpus/pstests.py``). DRAM volumes are checked against the hand
counts where the case has one (the corpus band, ``tests/corpus/_base.py``)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

import warpspeed as ws
import warpspeed.pystencils as wps
from tests.corpus import LOWER, UPPER
from tests.corpus.pstests import CASES, generate

# a corpus, like tests/corpus: every kernel of pystencils' own tests
pytestmark = pytest.mark.slow

#: Cases refused by design, with the words their refusal must contain.
REFUSED = {"triangle_pattern": "not a box"}


@pytest.mark.parametrize("target, machine", [("CUDA", "A100"), ("HIP", "MI250X-GCD")])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pystencils_test_kernel_is_predicted_or_refused_by_name(case, target, machine) -> None:
    import pystencils as ps

    kernel = generate(case, getattr(ps.Target, target))
    assert not isinstance(kernel, Exception), f"pystencils 2.1 does not generate it: {kernel}"
    if case.name in REFUSED:
        with pytest.raises(ws.KernelError, match=REFUSED[case.name]):
            wps.extract(kernel, case.options)
        return
    ex = wps.extract(kernel, case.options)
    block = ex.kernel.fixed_block or (256, 1, 1)
    p = wps.predict(kernel, machine, block, options=replace(case.options, registers=32))
    v = p.volumes
    assert math.isfinite(p.glups) and p.glups > 0
    assert v.dram_load + v.dram_store > 0
    if case.dram is not None:
        ratio = (v.dram_load + v.dram_store) / case.dram
        assert LOWER <= ratio <= UPPER, (case.name, ratio)
