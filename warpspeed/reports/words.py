"""The vendor's names of a GPU's parts in what warpspeed prints (MODEL.md §15):
NVIDIA's streaming multiprocessor (SM) and warp are AMD's compute unit (CU)
and wavefront. The model's quantities are the same (``Prediction.blocks_per_sm``
counts blocks per CU on AMD, ``l1_cycles`` are per wavefront); only the words
differ. Keys of ``--json`` keep their names on every machine. The words are
the GPU families' (:mod:`warpspeed.family`, ``words``).
"""

from __future__ import annotations

from ..family import Words, words_of


def words(vendor: str) -> Words:
    """The words of ``vendor`` (``Machine.vendor``) as its GPU families name
    them; a vendor of no family is refused (:func:`warpspeed.family.words_of`)."""
    return words_of(vendor)


#: The words of tables printed without a machine: NVIDIA's.
NVIDIA = words("NVIDIA")

__all__ = ["NVIDIA", "Words", "words"]
