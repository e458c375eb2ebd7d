"""Register counts from nvcc (optional tool): the neutral compiler module
(warpspeed.input.compiler) fed with source text, and the pystencils front
end's source (warpspeed.pystencils.nvcc)."""

import shutil

import pytest

from warpspeed.input import compiler
from warpspeed.pystencils import nvcc

PTXAS = """ptxas info    : Compiling entry function '_Z6kernelPdPKd' for 'sm_80'
ptxas info    : Function properties for _Z6kernelPdPKd
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 368 bytes cmem[0]
ptxas info    : Used 24 registers, used 0 barriers, 360 bytes cmem[0]
"""


def test_ptxas_output_gives_the_largest_register_count():
    assert compiler.parse_ptxas(PTXAS) == 40
    assert compiler.parse_ptxas("no counts here") is None


@pytest.mark.nvcc
def test_missing_nvcc_keeps_the_default(monkeypatch):
    monkeypatch.setattr(compiler.shutil, "which", lambda name: None)
    count = compiler.register_count("__global__ void k() {}", "sm_80")
    assert count.registers is None and "not installed" in count.reason
    assert count.or_default() == 32


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_counts_registers_of_a_generated_stencil():
    from stencils.star3d import generate

    _, kf = generate(radius=1, shape=(64, 64, 64))
    count = nvcc.pystencils_registers(kf, "sm_80")
    assert count.registers is not None and 8 <= count.registers <= 255


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_broken_source_is_reported_not_raised():
    count = compiler.register_count("this is not CUDA", "sm_80")
    assert count.registers is None and count.reason.startswith("nvcc failed")


def test_warpspeed_nvcc_none_runs_no_compiler_and_says_so(monkeypatch):
    monkeypatch.setenv("WARPSPEED_NVCC", "none")
    monkeypatch.setattr(compiler.subprocess, "run", _no_compiler)
    assert compiler.nvcc_path() is None and not compiler.nvcc_available()
    count = compiler.register_count("__global__ void k() {}", "sm_80")
    assert (count.registers, count.reason) == (None, "WARPSPEED_NVCC=none: nvcc not used")


def test_warpspeed_nvcc_that_is_no_executable_is_named_in_the_reason(monkeypatch, tmp_path):
    missing = tmp_path / "cuda" / "bin" / "nvcc"
    monkeypatch.setenv("WARPSPEED_NVCC", str(missing))
    monkeypatch.setattr(compiler.subprocess, "run", _no_compiler)
    count = compiler.register_count("__global__ void k() {}", "sm_80")
    assert count.registers is None
    assert count.reason == f"WARPSPEED_NVCC={missing} is not an executable nvcc"


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_warpspeed_nvcc_names_the_compiler_to_run(monkeypatch, tmp_path):
    """A path in WARPSPEED_NVCC runs that nvcc (here a wrapper script that
    records its call and runs the nvcc on the PATH)."""
    log = tmp_path / "called"
    wrapper = tmp_path / "my-nvcc"
    wrapper.write_text(f'#!/bin/sh\necho called > "{log}"\nexec "{shutil.which("nvcc")}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("WARPSPEED_NVCC", str(wrapper))
    count = compiler.register_count("__global__ void k(double *a) { a[threadIdx.x] *= 2; }",
                                    "sm_80")
    assert count.registers is not None and log.read_text().strip() == "called"


def _no_compiler(*args, **kwargs):
    raise AssertionError(f"a compiler ran: {args}")


def test_a_count_made_without_nvcc_is_not_reused_once_there_is_one(monkeypatch, tmp_path):
    """The memory cache keys on the nvcc too: a source counted under
    WARPSPEED_NVCC=none is counted by nvcc when the variable is gone."""
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("")
    monkeypatch.setattr(compiler.shutil, "which", lambda name: str(nvcc))
    monkeypatch.setattr(compiler, "_CACHE", {})
    monkeypatch.setenv("WARPSPEED_CACHE_DIR", str(tmp_path / "cache"))

    def fake(source, arch, includes=(), timeout=120.0):
        if compiler.nvcc_path() is None:
            return compiler.RegisterCount(None, compiler.nvcc_missing_reason())
        return compiler.RegisterCount(40, f"nvcc -arch={arch}")

    monkeypatch.setattr(compiler, "register_count", fake)
    monkeypatch.setenv("WARPSPEED_NVCC", "none")
    assert compiler.cached_count("k", (), "sm_80").registers is None
    monkeypatch.delenv("WARPSPEED_NVCC")
    assert compiler.cached_count("k", (), "sm_80") == compiler.RegisterCount(40, "nvcc -arch=sm_80")
