"""The ``slow`` marker (``pyproject.toml``): tests a developer need not run on
every change, run by ``pytest -q`` (and CI) but not by ``pytest -m "not
slow"``, the fast suite. Each behaviour keeps one fast representative."""

from collections.abc import Sequence

import pytest

slow = pytest.mark.slow


def fast_first(cases: Sequence[object], unpack: bool = False) -> list[object]:
    """The cases of a parametrized test: the first stays in the fast suite,
    the others are marked slow (each costs a second or more, typically a
    command run in its own process). ``unpack``: each case holds the values
    of several argument names."""
    rest = [pytest.param(*c, marks=slow) if unpack else pytest.param(c, marks=slow)
            for c in cases[1:]]
    return [cases[0], *rest]
