"""The web calculator's whitelist parser (warpspeed.web.parser): valid index
expressions give exactly the sympy expressions of the Python API, hostile
and malformed text is rejected with a message, and nothing is evaluated."""

from __future__ import annotations

import re
import token
import tokenize
from pathlib import Path

import pytest
import sympy as sp

import warpspeed as ws
from warpspeed.web import parser
from warpspeed.web.parser import ExpressionError, parse_access, parse_expression

x, y, z = ws.tidx, ws.tidy, ws.tidz
T, B, D = ws.threadIdx, ws.blockIdx, ws.blockDim


@pytest.mark.parametrize(("text", "expected"), [
    ("threadIdx.x + blockIdx.x*blockDim.x + 4", T.x + B.x * D.x + 4),
    ("tidx", x),
    ("tidy + 1", y + 1),
    ("  tidz-3 ", z - 3),
    ("2*(tidy - 3)", 2 * y - 6),
    ("-tidz + 5", -z + 5),
    ("- -3", sp.Integer(3)),
    ("+tidx", x),
    ("(((tidx)))", x),
    ("tidx // 4", sp.floor(x / 4)),
    ("floor(tidx / 4)", sp.floor(x / 4)),
    ("floor((tidx + 1) / 2) + 1", sp.floor((x + 1) / 2) + 1),
    ("tidx % 8", sp.Mod(x, 8)),
    ("Mod(tidx, 8)", sp.Mod(x, 8)),
    ("Mod(threadIdx.y + 2, 4) * 3", 3 * sp.Mod(T.y + 2, 4)),
    ("blockIdx.z*blockDim.z + threadIdx.z", z),
    ("blockDim.x * blockDim.y", D.x * D.y),
    ("7 // 2 + 10 % 4 - 3 * 2", sp.Integer(3 + 2 - 6)),
    ("tidx*2 + tidy*0", 2 * x),
    ("1099511627775", sp.Integer(2**40 - 1)),
])
def test_valid_expressions(text: str, expected: sp.Expr) -> None:
    assert parse_expression(text) == expected


def test_parsed_expressions_give_the_same_accesses() -> None:
    f = ws.Field("A", shape=(64, 64, 64))
    name, index = parse_access(
        "A[threadIdx.x + blockIdx.x*blockDim.x + 1, tidy // 2, Mod(tidz, 4)]")
    assert name == "A"
    assert f[index] == f[x + 1, sp.floor(y / 2), sp.Mod(z, 4)]
    assert parse_access(" B [ 0 ] ") == ("B", (sp.Integer(0),))


HOSTILE = [
    ("__import__('os').system('id')", "unexpected character"),
    ("__import__", "unknown name '__import__'"),
    ("().__class__", "expected a number"),
    ("tidx.__class__", "unexpected '.'"),
    ("lambda: 0", "unexpected character ':'"),
    ("(" * 40 + "1" + ")" * 40, "nested more than 32"),
    ("-" * 40 + "1", "nested more than 32"),
    ("floor(" * 40 + "1" + ")" * 40, "nested more than 32"),
    ("x" * 2**20, "1048576 characters long; at most 500"),
    ("9**9**9", "powers (**) are not allowed"),
    ("2^64", "powers (^) are not allowed"),
    ("foo + 1", "unknown name 'foo'"),
    ("eval", "unknown name 'eval'"),
    ("open", "unknown name 'open'"),
    ("threadIdx.w", "components x, y and z"),
    ("threadIdx", "expected '.'"),
    ("1.5*tidx", "only integer constants"),
    ("1e9", "unexpected 'e9'"),
    ("1099511627776", "exceeds the limit of 2**40"),
    ("99999999999999999999999", "exceeds the limit of 2**40"),
    ("1048576*1048576", "exceeds the limit"),
    ("1048575*1048575*1048575", "exceeds the limit"),
    ("tidx // 0", "division by zero"),
    ("tidx % (1 - 1)", "division by zero"),
    ("Mod(tidx, 0)", "Mod by zero"),
    ("Mod(tidx)", "Mod() takes 2 arguments, got 1"),
    ("floor(tidx, 2)", "floor() takes 1 argument, got 2"),
    ("", "empty expression"),
    ("   ", "empty expression"),
    ("tidx +", "found the end of the expression"),
    ("tidx)", "unexpected ')'"),
    ("(tidx", "expected ')'"),
    ("tidx tidy", "unexpected 'tidy'"),
    ("\x00", "unexpected character"),
    ("\u0661", "unexpected character"),  # an Arabic-Indic digit
    ("tidx; import os", "unexpected character ';'"),
    ("[1, 2]", "expected a number"),
    ("{}", "unexpected character '{'"),
    ("'tidx'", "unexpected character"),
    ("a if b else c", "unknown name 'a'"),
]


@pytest.mark.parametrize(("text", "message"), HOSTILE, ids=[h[1][:30] for h in HOSTILE])
def test_hostile_and_malformed_input_is_rejected(text: str, message: str) -> None:
    with pytest.raises(ExpressionError) as info:
        parse_expression(text)
    assert message in str(info.value)
    assert len(str(info.value)) < 400  # one readable line, not an echo of the input
    assert isinstance(info.value, ws.KernelError) and isinstance(info.value, ws.WarpspeedError)


@pytest.mark.parametrize(("text", "message"), [
    ("src", "expected '['"),
    ("src[]", "expected a number"),
    ("src[tidx", "expected ']'"),
    ("src[tidx] + 1", "unexpected '+'"),
    ("1[tidx]", "expected a field name"),
    ("src[" + ", ".join(["1"] * 9) + "]", "at most 8 indices"),
    ("src[tidx]" + " " * 2000, "characters long"),
    ("os.system('id')", "unexpected character"),
])
def test_bad_accesses(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=re.escape(message)):
        parse_access(text)


def test_the_web_package_evaluates_nothing() -> None:
    """No eval, exec, sympify or parse_expr in the code of the web package
    (names in the code; docstrings may mention them)."""
    banned = {"eval", "exec", "sympify", "parse_expr", "__import__", "S"}
    for path in Path(parser.__file__).parent.glob("*.py"):
        with path.open("rb") as fh:
            names = {t.string for t in tokenize.tokenize(fh.readline) if t.type == token.NAME}
        assert not names & banned, f"{path.name} uses {names & banned}"


def test_column_of_the_fault_is_named() -> None:
    with pytest.raises(ExpressionError, match="column 8: unknown name 'nope'"):
        parse_expression("tidx + nope")
