"""What the AMDGPU back end makes of the 15x15 convolution's bodies
(``python fits/amdgpu_guarded.py [--cpu gfx1100]``; needs ``llvmlite``, not a
dependency of warpspeed: ``pip install llvmlite``): the evidence of MODEL.md
§15 "Guarded bodies" and §10 "Compiler decisions".

Each body is written as LLVM IR as a HIP compiler would hand it to the back
end after fully unrolling the loops (``shared/data/a100`` README: per
output 225 loads ``input[(y + i) * 4110 + x + j]`` times a coefficient in
constant memory; outputs strided by the block size; the loop order i, j,
then the outputs), guarded per output (``if (x < 4096 && y < 4096)`` around
each output's load and FMA) or not, optimised at O3 and compiled. Printed per
body: code size, VGPRs, VGPR spills, vector loads, and how many of the waits
for vector memory wait for all of it (``s_waitcnt vmcnt(0)``: a load that
must arrive before anything else proceeds). An approximation of the scan's
real kernel, whose source for these rows is not public, and of its compiler
(this is the LLVM inside llvmlite, not ROCm's).
"""

from __future__ import annotations

import argparse
import re
import struct
import sys

W_IN, N, FS = 4110, 4096, 15

#: (block x, block y, tile x, tile y, guarded) of the scan's shapes shown
BODIES = [(48, 1, 1, 1, True), (48, 1, 2, 1, True), (48, 1, 1, 2, True), (48, 1, 4, 1, True),
          (64, 1, 1, 1, False), (64, 1, 2, 1, False), (16, 1, 1, 4, False),
          (16, 1, 4, 4, False), (32, 2, 2, 4, False), (32, 4, 2, 4, False), (32, 8, 1, 4, False)]


def body_ir(bx: int, by: int, tx: int, ty: int, guarded: bool) -> str:
    """The unrolled kernel body as LLVM IR text (module docstring)."""
    out = ['target triple = "amdgcn-amd-amdhsa"',
           "declare i32 @llvm.amdgcn.workitem.id.x()", "declare i32 @llvm.amdgcn.workitem.id.y()",
           "declare i32 @llvm.amdgcn.workgroup.id.x()", "declare i32 @llvm.amdgcn.workgroup.id.y()",
           "declare float @llvm.fmuladd.f32(float, float, float)",
           "define amdgpu_kernel void @conv(ptr addrspace(1) noalias %out, "
           "ptr addrspace(1) noalias readonly %in, ptr addrspace(4) noalias readonly %filt) {",
           "entry:",
           "  %tix = call i32 @llvm.amdgcn.workitem.id.x()",
           "  %tiy = call i32 @llvm.amdgcn.workitem.id.y()",
           "  %bix = call i32 @llvm.amdgcn.workgroup.id.x()",
           "  %biy = call i32 @llvm.amdgcn.workgroup.id.y()",
           f"  %bxo = mul i32 %bix, {bx * tx}", "  %x = add i32 %bxo, %tix",
           f"  %byo = mul i32 %biy, {by * ty}", "  %y = add i32 %byo, %tiy"]
    n = iter(range(10**9))
    acc = {(yi, xi): "0.0" for yi in range(ty) for xi in range(tx)}
    state = {"block": "entry"}

    def value() -> str:
        return f"%t{next(n)}"

    def open_guard(yi: int, xi: int) -> tuple[int, str]:
        xx, yy, c1, c2, c = (value() for _ in range(5))
        b = next(n)
        out.extend([f"  {xx} = add i32 %x, {xi * bx}", f"  {yy} = add i32 %y, {yi * by}",
                    f"  {c1} = icmp slt i32 {xx}, {N}", f"  {c2} = icmp slt i32 {yy}, {N}",
                    f"  {c} = and i1 {c1}, {c2}", f"  br i1 {c}, label %g{b}, label %m{b}",
                    f"g{b}:"])
        prev, state["block"] = state["block"], f"g{b}"
        return b, prev

    def close_guard(b: int, prev: str, key: tuple[int, int] | None, new: str | None) -> None:
        out.extend([f"  br label %m{b}", f"m{b}:"])
        if key is not None:
            phi = value()
            out.append(f"  {phi} = phi float [ {new}, %g{b} ], [ {acc[key]}, %{prev} ]")
            acc[key] = phi
        state["block"] = f"m{b}"

    def tap(yi: int, xi: int, i: int, j: int) -> str:
        row, col, idx, lin, wide, p, v, fp, f, s = (value() for _ in range(10))
        out.extend([f"  {row} = add i32 %y, {yi * by + i}", f"  {col} = add i32 %x, {xi * bx + j}",
                    f"  {idx} = mul i32 {row}, {W_IN}", f"  {lin} = add i32 {idx}, {col}",
                    f"  {wide} = zext i32 {lin} to i64",
                    f"  {p} = getelementptr inbounds float, ptr addrspace(1) %in, i64 {wide}",
                    f"  {v} = load float, ptr addrspace(1) {p}, align 4",
                    f"  {fp} = getelementptr inbounds float, ptr addrspace(4) %filt, "
                    f"i64 {i * FS + j}",
                    f"  {f} = load float, ptr addrspace(4) {fp}, align 4",
                    f"  {s} = call float @llvm.fmuladd.f32(float {v}, float {f}, "
                    f"float {acc[(yi, xi)]})"])
        return s

    for i in range(FS):
        for j in range(FS):
            for yi in range(ty):
                for xi in range(tx):
                    if guarded:
                        b, prev = open_guard(yi, xi)
                        close_guard(b, prev, (yi, xi), tap(yi, xi, i, j))
                    else:
                        acc[(yi, xi)] = tap(yi, xi, i, j)
    for yi in range(ty):
        for xi in range(tx):
            b, prev = open_guard(yi, xi) if guarded else (0, "")
            row, col, idx, lin, wide, p = (value() for _ in range(6))
            out.extend([f"  {row} = add i32 %y, {yi * by}", f"  {col} = add i32 %x, {xi * bx}",
                        f"  {idx} = mul i32 {row}, {N}", f"  {lin} = add i32 {idx}, {col}",
                        f"  {wide} = zext i32 {lin} to i64",
                        f"  {p} = getelementptr inbounds float, ptr addrspace(1) %out, i64 {wide}",
                        f"  store float {acc[(yi, xi)]}, ptr addrspace(1) {p}, align 4"])
            if guarded:
                close_guard(b, prev, None, None)
    out.extend(["  ret void", "}"])
    return "\n".join(out)


def _text_bytes(obj: bytes) -> int:
    """Size of the ELF object's ``.text`` section."""
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    size, count, names = struct.unpack_from("<HHH", obj, 0x3A)
    secs = [struct.unpack_from("<IIQQQQ", obj, shoff + k * size) for k in range(count)]
    base = secs[names][4]
    for name, _, _, _, _, length in secs:
        if obj[base + name: obj.index(b"\0", base + name)] == b".text":
            return length
    return 0


def compile_body(llvm: object, ir: str, cpu: str) -> dict[str, int]:
    """O3 and code generation for ``cpu``; the counts of the module docstring."""
    wave64 = cpu.startswith("gfx9")
    target = llvm.Target.from_triple("amdgcn-amd-amdhsa")  # type: ignore[attr-defined]
    tm = target.create_target_machine(cpu=cpu, features="+wavefrontsize64" if wave64 else "",
                                      opt=3)
    mod = llvm.parse_assembly(ir)  # type: ignore[attr-defined]
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))  # type: ignore[attr-defined]
    pb.getModulePassManager().run(mod, pb)
    opt = str(mod)
    asm = tm.emit_assembly(llvm.parse_assembly(opt))  # type: ignore[attr-defined]
    code = _text_bytes(tm.emit_object(llvm.parse_assembly(opt)))  # type: ignore[attr-defined]

    def count(pattern: str) -> int:
        return len(re.findall(pattern, asm, re.M))

    def meta(key: str) -> int:
        m = re.search(rf"\.{key}:\s+(\d+)", asm)
        return int(m.group(1)) if m else -1

    return {"code_bytes": code, "vgprs": meta("vgpr_count"), "spills": meta("vgpr_spill_count"),
            "loads": count(r"^\s+global_load"), "full_waits": count(r"s_waitcnt vmcnt\(0\)")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", default="gfx1100", help="gfx1100 (RDNA3), gfx90a (CDNA2), ...")
    args = ap.parse_args(argv)
    try:
        import llvmlite.binding as llvm
    except ImportError:
        print("needs llvmlite (pip install llvmlite), which ships LLVM's AMDGPU back end",
              file=sys.stderr)
        return 2
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    print(f"{args.cpu}:")
    print("| block | tile | body | code KiB | VGPRs | spills | loads | vmcnt(0) waits |")
    print("|---|---|---|---|---|---|---|---|")
    for bx, by, tx, ty, g in BODIES:
        c = compile_body(llvm, body_ir(bx, by, tx, ty, g), args.cpu)
        print(f"| {bx}x{by} | {tx}x{ty} | {'guarded' if g else 'unguarded'} | "
              f"{c['code_bytes'] / 1024:.1f} | {c['vgprs']} | {c['spills']} | {c['loads']} | "
              f"{c['full_waits']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
