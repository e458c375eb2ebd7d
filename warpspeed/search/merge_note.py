"""The ranking's note on loads a thread repeats (MODEL.md §1, §10): how many
of the best configuration's loads count once because they repeat an
address, or how many are issued again because its outputs are guarded
separately (``Kernel.output_guards``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..input.addresses import guard_kept_loads, guarded_separately, repeated_loads
from ..input.kernel import Kernel
from ..model import Prediction
from ..volumes.held import NOTE_START
from .design_space import Fold


def _switch(k: Kernel) -> str:
    """How the kernel's guards depend on the block, for the note."""
    if isinstance(k.output_guards, tuple):
        ext = ", ".join(map(str, k.output_guards[:2] if k.output_guards[2] == 1
                            else k.output_guards))
        return (f"its outputs are guarded separately whenever block x fold does not divide "
                f"({ext})")
    return "its outputs are guarded separately (output_guards=True)"


def _remedy(k: Kernel) -> str:
    """Whether some block would take the unguarded body: only if every
    extent is a multiple of the fold (block extent 1 at least divides)."""
    if not isinstance(k.output_guards, tuple):
        return ""
    if any(n % f for n, f in zip(k.output_guards, k.fold)):
        return (f"; no block merges them: the fold {k.fold} does not divide the extents "
                "themselves")
    return "; a block whose extents times the fold divide those would merge them"


def merge_note(predictions: Sequence[Prediction], variants: Sequence[tuple[Fold, Kernel]]
               ) -> list[str]:
    """The note for the best of ``predictions`` (module docstring), empty
    when its loads repeat no address or the prediction takes them as issued
    again (MODEL.md §15, merged loads beyond the registers)."""
    best = predictions[0] if predictions else None
    k = dict(variants).get(best.fold) if best is not None else None
    if best is None or k is None or any(n.startswith(NOTE_START) for n in best.notes):
        return []  # the prediction's own note says why the loads are issued again
    n = repeated_loads(k, best.block)
    where = f"the best, fold {best.fold} block {best.block},"
    if n:
        guard = ""
        if k.output_guards is not False:
            guard = (f"; {_switch(k)}, which would keep them apart, but not at this block")
        return [f"{where} counts {n} of its {len(k.loads)} loads per thread once because they "
                "repeat an address (MODEL.md §1); compilers do not always merge them "
                "(MODEL.md §10), reload_repeated=True on the kernel ranks without the merge"
                + guard]
    kept = guard_kept_loads(k, best.block)
    if kept and guarded_separately(k, best.block):
        return [f"{where} issues all {len(k.loads)} loads per thread: {kept} of them repeat an "
                f"address of another output, but {_switch(k)}, and loads under separate guards "
                "are not merged (MODEL.md §1)" + _remedy(k)]
    return []


__all__ = ["merge_note"]
