"""How grounded a prediction is (MODEL.md §14, "Grounding and error band"):
its machine's grounding in one phrase, and the error measured on development
data for that grounding and kernel class.

* **Grounding** (the machine file's ``grounding``, MODEL.md §12):
  ``kernel-validated`` (its numbers were checked against kernel measurements
  on this GPU), ``micro-benchmarks`` (calibrated on this GPU's micro-benchmark
  tables) or ``data sheet`` (data-sheet figures, a related GPU's tables
  standing in).
* **Kernel class**, from the binding limiter: ``DRAM-bound``, ``L2-bound``,
  ``L1-bound``, ``FP-bound``, ``atomics-bound``, ``launch-bound``. DRAM and L2
  are apart: their errors differ (a streaming kernel's DRAM time against a
  stencil's cache traffic), and one band over both would quote the worse
  error to both.
* **Error band**: the 10th to 90th percentile of predicted over measured
  GLup/s, the median ratio and the mean absolute error, over the development
  rows of machines of the same grounding and vendor whose prediction has the
  same class and model (vendors apart: the W7800's convolution misses by
  several times what the RTX A4000's does, and one band over both would
  quote each the other's error), as ``warpspeed validate --v100`` measured them and
  ``fits/accuracy_report.py`` recorded them in ``warpspeed/ACCURACY.json``
  (``evidence``). Rows whose constants were fitted on them are scored with the
  constant fitted on the other GPUs where the validation has it (the memory
  systems' leave-one-GPU-out). A class without such rows says so: no band is
  invented.

Approximation: the band is a property of the development data, not of the
kernel at hand; a kernel unlike every development kernel may miss by more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypedDict, cast

#: The recorded validation (``fits/accuracy_report.py`` writes it).
ACCURACY = Path(__file__).resolve().parents[1] / "ACCURACY.json"
#: A machine file's grounding as a prediction names it.
PHRASES = {"kernels": "kernel-validated", "micro-benchmarks": "micro-benchmarks",
           "datasheet": "data sheet"}
#: Kernel class of each limiter.
CLASSES = {"dram": "DRAM-bound", "l2": "L2-bound", "l1": "L1-bound", "fp": "FP-bound",
           "atomics": "atomics-bound", "launch": "launch-bound", "partial wave": "launch-bound",
           "block launch": "launch-bound"}


def kernel_class(limiter: str) -> str:
    """The kernel class of a binding limiter (module docstring)."""
    return CLASSES.get(limiter, f"{limiter}-bound")


@dataclass(frozen=True)
class Evidence:
    """A prediction's grounding and the error band measured for it (module
    docstring); ``low``/``high``/``median``/``mape`` are None without rows."""

    grounding: str
    kernel_class: str
    model: str
    vendor: str = "NVIDIA"
    rows: int = 0
    gpus: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    median: float | None = None
    mape: float | None = None

    @property
    def phrase(self) -> str:
        """One phrase: the grounding, then the measured band or its absence."""
        head = f"grounding: {self.grounding}"
        if not self.rows or self.low is None or self.high is None:
            return (f"{head}; no {self.kernel_class} development rows on {self.vendor} "
                    f"{self.grounding} machines: error unmeasured")
        gpus = f"{len(self.gpus)} GPU{'s' if len(self.gpus) != 1 else ''}"
        return (f"{head}; {self.kernel_class} kernels on such {self.vendor} machines: "
                f"predicted/measured "
                f"{self.low:.2f}-{self.high:.2f} (10-90 %), MAPE {100 * (self.mape or 0):.0f} % "
                f"over {self.rows} rows on {gpus}")

    @property
    def short(self) -> str:
        """A few words: the grounding and the measured MAPE (a ranking's summary)."""
        if not self.rows or self.mape is None:
            return f"{self.grounding}, error unmeasured"
        return f"{self.grounding}, MAPE {100 * self.mape:.0f} %"

    def to_dict(self) -> dict[str, object]:
        return {"grounding": self.grounding, "kernel_class": self.kernel_class,
                "model": self.model, "vendor": self.vendor, "rows": self.rows,
                "gpus": list(self.gpus),
                "low": self.low, "high": self.high, "median": self.median, "mape": self.mape,
                "phrase": self.phrase}


class _Band(TypedDict, total=False):
    """A band as ``ACCURACY.json`` records it
    (:func:`warpspeed.validation.evidence.as_records`)."""

    model: str
    grounding: str
    vendor: str
    kernel_class: str
    rows: int
    gpus: list[str]
    datasets: list[str]
    low: float
    high: float
    median: float
    mape: float


@lru_cache(maxsize=1)
def _recorded() -> tuple[_Band, ...]:
    """The bands of ``ACCURACY.json`` (empty when it is missing or older)."""
    try:
        data = json.loads(ACCURACY.read_text())
    except (OSError, ValueError):
        return ()
    bands = data.get("validation", {}).get("evidence", [])
    # JSON: the records as_records wrote, typed by what they hold
    return tuple(cast(_Band, b) for b in bands if isinstance(b, dict))


@lru_cache(maxsize=256)
def evidence(grounding: str, limiter: str, model: str, vendor: str = "NVIDIA") -> Evidence:
    """The :class:`Evidence` of a prediction of ``model`` bound by ``limiter``
    on a ``vendor`` machine of ``grounding`` (a machine file's label)."""
    phrase = PHRASES.get(grounding, grounding)
    cls = kernel_class(limiter)
    for b in _recorded():
        if (b.get("grounding"), b.get("vendor"), b.get("kernel_class"), b.get("model")) == (
                phrase, vendor, cls, model):
            return Evidence(phrase, cls, model, vendor, int(b["rows"]),
                            tuple(b.get("gpus", ())),
                            b.get("low"), b.get("high"), b.get("median"),
                            b.get("mape"))
    return Evidence(phrase, cls, model, vendor)


def class_rows(limiter: str, model: str) -> tuple[int, tuple[str, ...]]:
    """The development rows of ``model`` whose prediction is bound like
    ``limiter`` (every grounding and vendor), and the sets they come from:
    a regime no set is in as a whole may still have rows (module docstring)."""
    cls = kernel_class(limiter)
    bands = [b for b in _recorded() if (b.get("kernel_class"), b.get("model")) == (cls, model)]
    sets = tuple(dict.fromkeys(d for b in bands for d in b.get("datasets", ())))
    return sum(int(b.get("rows", 0)) for b in bands), sets


__all__ = ["ACCURACY", "CLASSES", "PHRASES", "Evidence", "class_rows", "evidence",
           "kernel_class"]
