"""The web calculator's machines: the shipped ones by name, and uploaded
TOML files, packed into URL-safe text for the form and the link
(:func:`pack_machine`, :func:`unpack_machine`) and loaded only after checks
(:func:`machine_from_toml`: size, built-in capacity fits, CUDA's launch
limits). :func:`build_machine` picks the machine of a
:class:`~warpspeed.web.form.Form`. Every function raises
:class:`~warpspeed.web.FieldError` naming the form field at fault;
:mod:`warpspeed.web.state` re-exports them all.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import tempfile
import zlib
from pathlib import Path

from ..errors import WarpspeedError
from ..machine import Machine, machines
from ..model import load_machine
from ..volumes.capacity import load_fits
from .errors import FieldError
from .form import Form

#: Largest uploaded machine file (bytes).
MAX_MACHINE_FILE = 64 * 1024
#: The machine choice that means "the uploaded file".
UPLOADED = "upload"


def machine_names() -> list[str]:
    """The shipped machines."""
    return machines()


def pack_machine(filename: str, text: str) -> str:
    """An uploaded machine file as URL-safe text (zlib + base64), as the
    form and the link hold it."""
    raw = json.dumps({"name": filename, "toml": text}).encode()
    return "z1" + base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode()


def unpack_machine(blob: str) -> tuple[str, str]:
    """``(filename, text)`` of :func:`pack_machine`, bounded in size."""
    try:
        if len(blob) > 2 * MAX_MACHINE_FILE or not blob.startswith("z1"):
            raise ValueError("not a packed machine file")
        d = zlib.decompressobj()
        raw = d.decompress(base64.urlsafe_b64decode(blob[2:]), 2 * MAX_MACHINE_FILE)
        if d.unconsumed_tail:
            raise ValueError("too large")
        data = json.loads(raw)
        return str(data["name"])[:100], str(data["toml"])
    except (ValueError, KeyError, TypeError, zlib.error) as exc:
        raise FieldError("machine_file", f"the machine file in the link is damaged ({exc}); "
                         "upload it again") from None


@functools.lru_cache(maxsize=16)
def machine_from_toml(text: str, filename: str = "uploaded.toml") -> Machine:
    """A machine from the text of an uploaded TOML file: written to a
    temporary file and read by :func:`warpspeed.load_machine`. The file must
    name built-in capacity fits (no paths: the server reads no file a user
    names) and stay within the launch limits of CUDA and HIP (wavefronts of
    up to 64 lanes on AMD)."""
    if len(text.encode()) > MAX_MACHINE_FILE:
        raise FieldError("machine_file", f"{filename}: larger than {MAX_MACHINE_FILE} bytes")
    with tempfile.TemporaryDirectory(prefix="warpspeed-web-") as tmp:
        path = Path(tmp) / "machine.toml"
        path.write_text(text, encoding="utf-8")
        try:
            m = load_machine(path)
        except WarpspeedError as exc:
            raise FieldError("machine_file", str(exc).replace(str(path), filename)) from None
    if "/" in m.fits or "\\" in m.fits or m.fits.endswith(".toml"):
        raise FieldError("machine_file", f"{filename}: fits must name built-in capacity fits "
                         f"(e.g. fits = \"paper\"), not a path, got {m.fits[:80]!r}")
    try:
        load_fits(m.fits)
    except WarpspeedError as exc:
        raise FieldError("machine_file", f"{filename}: {exc}") from None
    limits = {"max_threads_per_block": 1024, "max_threads_per_sm": 4096,
              "max_blocks_per_sm": 64, "sms": 4096, "warp_size": 64}
    for key, high in limits.items():
        if getattr(m, key) > high:
            raise FieldError("machine_file", f"{filename}: [{key}] must be at most {high}")
    return dataclasses.replace(m, path=f"<uploaded {filename}>")


def build_machine(form: Form) -> Machine:
    """The machine of ``form``: a shipped one by name, or the uploaded file."""
    if form.machine == UPLOADED:
        if not form.machine_file.strip():
            raise FieldError("machine_file", "upload a machine file (.toml) first")
        name, text = unpack_machine(form.machine_file)
        return machine_from_toml(text, name)
    if form.machine not in machine_names():
        raise FieldError("machine", f"unknown machine {form.machine[:40]!r}; the machines "
                         f"are {', '.join(machine_names())}")
    return load_machine(form.machine)


__all__ = [
    "MAX_MACHINE_FILE",
    "UPLOADED",
    "build_machine",
    "machine_from_toml",
    "machine_names",
    "pack_machine",
    "unpack_machine",
]
