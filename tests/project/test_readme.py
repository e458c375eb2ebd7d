"""The README's Python example runs as written."""

import re
from pathlib import Path

from warpspeed.timing.base import LEAD_SHARE

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs_and_ranks():
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    p, r = namespace["p"], namespace["r"]
    assert p.limiter in ("fp", "l1", "l2", "dram") and p.glups > 0
    assert len(r.predictions) == 5
    # best first, up to the leaders within 1 % that go by L2 headroom (MODEL.md §8, "Ties")
    best = max(q.glups for q in r.predictions)
    assert r.predictions[0].glups >= best * (1 - LEAD_SHARE)
