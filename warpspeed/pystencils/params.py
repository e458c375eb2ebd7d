"""The kernel function's parameters (MODEL.md §1, fields have known
shapes): base pointers, the sizes and strides of fields of symbolic size
bound to the resolved layouts, and the user's values of integer
parameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp
from pystencils.codegen.properties import FieldBasePtr, FieldShape, FieldStride
from pystencils.types import PsIntegerType

from ..errors import KernelError
from .layouts import FieldLayout, resolve


def pointer_of(fields: Mapping[str, Any], name: str) -> str | None:
    """The base-pointer parameter of the field named ``name``, if any."""
    return next((p for p, f in fields.items() if f.name == name), None)


def parameters(kernel_function: Any) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """Base-pointer parameter name → pystencils field, and every
    (parameter name, property) pair."""
    pointers: dict[str, Any] = {}
    props: list[tuple[str, Any]] = []
    for param in kernel_function.parameters:
        for prop in param.properties:
            props.append((param.name, prop))
            if isinstance(prop, FieldBasePtr):
                pointers[param.name] = prop.field
    return pointers, props


def sizes(
    params: list[tuple[str, Any]], layouts: Mapping[str, FieldLayout | None]
) -> dict[str, int]:
    """Size parameters bound to the resolved layouts."""
    out: dict[str, int] = {}
    for name, prop in params:
        if isinstance(prop, FieldShape):
            lay = layouts.get(prop.field.name)
            if lay is None:
                lay = resolve(prop.field, None, None)
            if lay is None:
                continue
            size = int(lay.sizes[prop.coordinate])
            if out.setdefault(name, size) != size:
                raise KernelError(
                    f"fields that share the size parameter {name} must have equal sizes "
                    f"(pystencils checks this at launch), but the shapes give {out[name]} and "
                    f"{size} (field {prop.field.name}); pass one shape for all of them"
                )
    return out


def given_params(kernel_function: Any, params: Mapping[str, int] | None) -> dict[str, int]:
    """``params`` checked against the kernel's scalar integer parameters."""
    if not params:
        return {}
    if not isinstance(params, Mapping):
        raise KernelError(f"params must be a mapping of parameter name to integer, got {params!r}")
    scalars = {
        p.name for p in kernel_function.parameters
        if not p.properties and isinstance(p.dtype, PsIntegerType)
    }
    out: dict[str, int] = {}
    for name, value in params.items():
        if name not in scalars:
            raise KernelError(
                f"params names {name!r}, which is not an integer parameter of the kernel; its "
                f"integer parameters are {sorted(scalars) or 'none'}"
            )
        if isinstance(value, bool) or not isinstance(value, int) and not hasattr(
            value, "__index__"
        ):
            raise KernelError(f"params[{name!r}] must be an integer, got {value!r}")
        out[name] = int(value)
    return out


def stride_params(params: list[tuple[str, Any]]) -> dict[str, dict[str, int]]:
    """Stride parameter name → {field name: pystencils dimension}.

    Fields that pystencils requires to have equal strides (lbmpy's default
    ``src`` and ``dst``) share one parameter, which then belongs to each."""
    out: dict[str, dict[str, int]] = {}
    for name, prop in params:
        if isinstance(prop, FieldStride):
            out.setdefault(name, {})[prop.field.name] = int(prop.coordinate)
    return out


def stride_values(
    strides: Mapping[str, Mapping[str, int]],
    fields: Mapping[str, Any],
    layouts: Mapping[str, FieldLayout | None],
) -> dict[sp.Symbol, int]:
    """Stride parameter → its value in the resolved layouts; fields that
    share a parameter must agree on it."""
    out: dict[sp.Symbol, int] = {}
    for name, owners in strides.items():
        values = {}
        for f, d in owners.items():
            ptr = pointer_of(fields, f)
            lay = layouts.get(ptr) if ptr is not None else None
            if lay is not None:
                values[f] = int(lay.strides[d])
        if len(set(values.values())) > 1:
            raise KernelError(
                f"fields {sorted(values)} share the stride parameter {name}, so pystencils "
                f"requires them to have equal strides, but their layouts give {values}; "
                "pass one shape and layout for all of them"
            )
        if values:
            out[sp.Symbol(name)] = next(iter(values.values()))
    return out


__all__ = ["given_params", "parameters", "pointer_of", "sizes", "stride_params", "stride_values"]
