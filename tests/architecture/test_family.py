"""GPU families as declared capabilities (MODEL.md §12, "GPU families";
warpspeed.family): every machine has one, behaviour reads its record and no
module but the family module compares vendor or architecture names; a
family file of one's own predicts without a code change; a warp the
family's L1 count cannot use is refused."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import warpspeed as ws
from stencils import star3d_by_hand
from warpspeed.family import FAMILY_DIR, families, load_family
from warpspeed.machine import MACHINE_DIR, machine_files
from warpspeed.volumes.sampling import HALF_WARP

PACKAGE = Path(ws.__file__).parent
#: Attributes and names that hold a vendor or an architecture.
LABELS = {"vendor", "arch", "architecture"}
#: Modules that compare a label as data, not to decide behaviour, with why.
DATA = {
    "timing/evidence.py": "the measured error band of ACCURACY.json is stored per vendor label; "
                          "looking up a prediction's rows compares the labels (MODEL.md §14)",
}


def _vocabulary() -> set[str]:
    return ({f.vendor for f in families().values()}
            | {a for f in families().values() for a in f.architectures})


def _is_label(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in LABELS) or (
        isinstance(node, ast.Name) and node.id in LABELS)


def _is_name(node: ast.AST, vocabulary: set[str]) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value in vocabulary
        or re.fullmatch(r"(sm_|gfx|RDNA|CDNA|GCN)[0-9a-z]*", node.value) is not None)


def label_comparisons(source: str, vocabulary: set[str]) -> list[str]:
    """Where ``source`` decides by a vendor or architecture: a comparison of
    a vendor/arch/architecture value or with one of their names, a
    ``startswith`` on one, a table keyed by one (a dict literal of names,
    a subscript or ``.get`` with a label)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        parts: list[ast.AST] = []
        if isinstance(node, ast.Compare) and not any(
                isinstance(p, ast.Constant) and p.value is None for p in node.comparators):
            parts = [node.left, *node.comparators]
            parts += [e for p in node.comparators if isinstance(p, (ast.Tuple, ast.List, ast.Set))
                      for e in p.elts]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith"):
                parts = [node.func.value, *node.args]
            elif node.func.attr == "get":
                parts = [a for a in node.args[:1] if _is_label(a)]
        elif isinstance(node, ast.Dict):
            parts = [k for k in node.keys if k is not None and _is_name(k, vocabulary)]
        elif isinstance(node, ast.Subscript):
            parts = [node.slice] if _is_label(node.slice) else []
        if any(_is_label(p) or _is_name(p, vocabulary) for p in parts):
            found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_the_check_sees_vendor_decisions() -> None:
    """Independent truth: the decisions issue 47 found, written out."""
    v = _vocabulary()
    for text in ('m.vendor == "AMD"', 'm.vendor != "AMD"', 'kind == "RDNA3"',
                 'machine.arch == "gfx908"', 'arch.startswith("sm_")',
                 'machine.architecture.startswith("RDNA")', 'T = {"NVIDIA": 1}',
                 'T.get(m.vendor, "CUDA")', 'T[m.vendor]', 'v in ("AMD", "X")'):
        assert label_comparisons(text, v), text
    for text in ('print(f"{m.vendor} GPUs")', 'words("NVIDIA")', 'def f(vendor="NVIDIA"): ...',
                 'm.family.target == "HIP"', 'x = {"sm": "SM"}'):
        assert not label_comparisons(text, v), text


@pytest.mark.parametrize("path", sorted(p.relative_to(PACKAGE).as_posix()
                                        for p in PACKAGE.rglob("*.py")))
def test_no_vendor_or_architecture_name_is_compared_outside_the_family_module(path: str) -> None:
    if path == "family.py":
        return
    found = label_comparisons((PACKAGE / path).read_text(), _vocabulary())
    if path in DATA:  # one lookup of stored rows by their label, nothing else
        assert len(found) == 1 and "b.get('vendor')" in found[0], found
        return
    assert not found, f"{path} decides by a vendor or architecture name {found}: read the " \
                      "machine's GPU family record (Machine.family) instead"


@pytest.mark.parametrize("path", sorted(FAMILY_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_every_capability_of_a_shipped_family_has_a_source(path: Path) -> None:
    fam = load_family(path)
    assert fam.name == path.stem
    assert fam.sources and all(s.strip() for _, s in fam.sources)
    assert fam.source("warp_sizes") and fam.source("target")


@pytest.mark.parametrize("path", sorted(machine_files().values()), ids=lambda p: p.stem)
def test_every_shipped_machine_is_in_a_family_of_its_vendor(path: Path) -> None:
    m = ws.load_machine(path)
    assert m.architecture in m.family.architectures
    assert m.family.vendor == m.vendor and m.warp_size in m.family.warp_sizes
    assert m.l1_model == m.family.l1_model


def test_the_half_warp_count_takes_warps_of_two_half_warps() -> None:
    """The half-warp L1 count (volumes/l1.py: half warps of 16 lanes) is made
    for warps of 32; a family that names it declares exactly that warp."""
    for fam in families().values():
        if fam.l1_model == "halfwarp":
            assert fam.warp_sizes == (2 * HALF_WARP,), fam.name


def _family_file(tmp_path: Path, **changes: str) -> Path:
    text = (FAMILY_DIR / "nvidia.toml").read_text()
    for old, new in changes.items():
        text = re.sub(old, new, text)
    out = tmp_path / "testfam.toml"
    out.write_text(text)
    return out


def _machine_file(tmp_path: Path, family: str | None, **changes: str) -> Path:
    text = (MACHINE_DIR / "A100.toml").read_text()
    text = text.replace('name = "A100"', 'name = "TestGPU"')
    if family is not None:
        text = text.replace('architecture = "Ampere"',
                            f'architecture = "Testwell"\nfamily = "{family}"')
    for old, new in changes.items():
        text = re.sub(old, new, text)
    out = tmp_path / "test_gpu.toml"
    out.write_text(text)
    return out


def test_a_family_file_of_ones_own_is_predicted_without_code_change(tmp_path: Path) -> None:
    """A throwaway family: NVIDIA's capabilities under a new name and
    architecture, its blocks limited to 32 along z. The A100 described as
    that family predicts as the A100 does; its block limit is the family's."""
    _family_file(tmp_path, **{'name = "nvidia"': 'name = "testfam"',
                              r'architectures = \[.*\]': 'architectures = ["Testwell"]',
                              r"value = \[1024, 1024, 64\]": "value = [1024, 1024, 32]"})
    m = ws.load_machine(_machine_file(tmp_path, "testfam.toml"))
    assert (m.family.name, m.architecture, m.family.block_extents) == (
        "testfam", "Testwell", (1024, 1024, 32))
    kernel = star3d_by_hand.kernel()
    a100 = ws.predict(kernel, "A100", (32, 2, 2))
    own = ws.predict(kernel, m, (32, 2, 2))
    assert (own.glups, own.limiter, own.terms) == (a100.glups, a100.limiter, a100.terms)
    ws.predict(kernel, "A100", (4, 4, 64))
    with pytest.raises(ws.LaunchError, match="at most 32 along z"):
        ws.predict(kernel, m, (4, 4, 64))


def test_a_16_lane_warp_on_the_half_warp_count_is_refused(tmp_path: Path) -> None:
    path = _machine_file(tmp_path, None,
                         **{r"\[warp_size\]\nvalue = 32": "[warp_size]\nvalue = 16"})
    with pytest.raises(ws.MachineError, match=r"\[warp_size\] 16 is not a warp the nvidia family's "
                                              r"'halfwarp' L1 count can use \(it takes \[32\]"):
        ws.load_machine(path)


def test_an_unknown_family_or_architecture_is_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ws.MachineError, match=r"family 'nosuch' is no shipped GPU family"):
        ws.load_machine(_machine_file(tmp_path, "nosuch"))
    path = _machine_file(tmp_path, None, **{'architecture = "Ampere"': 'architecture = "Foo"'})
    with pytest.raises(ws.MachineError, match=r"architecture 'Foo' is in no GPU family.*family ="):
        ws.load_machine(path)
    with pytest.raises(ws.MachineError, match=r"vendor 'NVIDIA', but its family 'rdna' is AMD's"):
        ws.load_machine(_machine_file(tmp_path, "rdna"))
    bad = _family_file(tmp_path, **{r'value = "CUDA"': 'value = "OpenCL"'})
    with pytest.raises(ws.MachineError, match=r"testfam.toml: \[target\] value must be one of"):
        ws.load_machine(_machine_file(tmp_path, bad.name))


def test_a_warp_pipe_count_needs_its_tag_slope_and_only_it_does(tmp_path: Path) -> None:
    """MODEL.md §4: the warp-pipe count reads the family's tag cycles per
    line; a family that names the count without it, or the slope without the
    count, is refused naming the key."""
    pipe = _family_file(tmp_path, **{r'value = "halfwarp"': 'value = "warppipe"'})
    with pytest.raises(ws.MachineError, match=r"\[l1_tag_cycles_per_line\] goes with l1_model"):
        ws.load_machine(_machine_file(tmp_path, pipe.name))
    slope = _family_file(tmp_path, **{r"\[l1_model\]": '[l1_tag_cycles_per_line]\nvalue = 0.3\n'
                                      'source = "a test"\n\n[l1_model]'})
    with pytest.raises(ws.MachineError, match=r"\[l1_tag_cycles_per_line\] goes with l1_model"):
        ws.load_machine(_machine_file(tmp_path, slope.name))


def test_a_sycl_kernel_is_named_as_the_gpu_target_it_is() -> None:
    ps = pytest.importorskip("pystencils")
    import warpspeed.pystencils as wps

    f, g = ps.fields("f, g: double[2D]")
    cfg = ps.CreateKernelConfig(target=ps.Target.SYCL, jit=ps.no_jit)
    kernel = ps.create_kernel([ps.Assignment(g.center, f[1, 0] + f[-1, 0])], cfg)
    with pytest.raises(wps.GpuTargetError, match=r"targets SYCL, a GPU target warpspeed does "
                                                 r"not support \(it models CUDA and HIP code\)"):
        wps.extract(kernel)
