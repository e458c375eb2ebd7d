"""The vendor's names of a GPU's parts in what warpspeed prints (MODEL.md §15):
NVIDIA's streaming multiprocessor (SM) and warp are AMD's compute unit (CU)
and wavefront. The model's quantities are the same (``Prediction.blocks_per_sm``
counts blocks per CU on AMD, ``l1_cycles`` are per wavefront); only the words
differ. Keys of ``--json`` keep their names on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Words:
    """How output text names the multiprocessor (``sm``) and the group of
    lanes that issues together (``warp``; ``wave`` in table units)."""

    sm: str
    warp: str
    wave: str


NVIDIA = Words(sm="SM", warp="warp", wave="warp")
AMD = Words(sm="CU", warp="wavefront", wave="wave")


def words(vendor: str) -> Words:
    """The words of ``vendor`` (``Machine.vendor``): AMD's, else NVIDIA's."""
    return AMD if vendor == "AMD" else NVIDIA


__all__ = ["AMD", "NVIDIA", "Words", "words"]
