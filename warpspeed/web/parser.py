"""A whitelist parser for the index expressions typed into the web calculator.

The server never evaluates user text: no ``eval``, no ``sympify``, no
``parse_expr``. A small tokenizer and a recursive-descent parser accept
exactly this grammar and build the sympy expression node by node
(``sp.Integer``, the builtin symbols of :mod:`warpspeed.input.expr`, ``sp.Add``,
``sp.Mul``, ``sp.floor``, ``sp.Mod``)::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "//" | "/" | "%") unary)*
    unary   := ("-" | "+") unary | primary
    primary := INTEGER
             | ("threadIdx" | "blockIdx" | "blockDim") "." ("x" | "y" | "z")
             | "tidx" | "tidy" | "tidz"
             | "floor" "(" expr ")" | "Mod" "(" expr "," expr ")"
             | "(" expr ")"
    access  := NAME "[" expr ("," expr)* "]"

``a // b`` is ``floor(a / b)``, ``a % b`` is ``Mod(a, b)``; whether a
divisor is constant, and whether the whole is quasi-affine, is left to the
library (:func:`warpspeed.input.expr.parse`), whose error then names the access.

Limits (:data:`MAX_LENGTH`, :data:`MAX_DEPTH`, :data:`MAX_INT`) bound the
work of a single expression; every violation raises :class:`ExpressionError`
(a :class:`warpspeed.KernelError`) with the column at fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy as sp

from ..errors import KernelError
from ..input.expr import blockDim, blockIdx, threadIdx, tidx, tidy, tidz

#: Longest expression (characters) the parser reads.
MAX_LENGTH = 500
#: Deepest nesting of parentheses, function calls and unary signs.
MAX_DEPTH = 32
#: Integers (literals and every constant the expression folds to) stay below this.
MAX_INT = 2**40
#: Most indices of one access.
MAX_INDICES = 8

_BUILTINS = {"threadIdx": threadIdx, "blockIdx": blockIdx, "blockDim": blockDim}
_SHORTHANDS = {"tidx": tidx, "tidy": tidy, "tidz": tidz}
_ALLOWED = (
    "integers, threadIdx/blockIdx/blockDim.{x,y,z}, tidx/tidy/tidz, + - * // / %, "
    "floor(...), Mod(a, b) and parentheses"
)
_TOKEN = re.compile(
    r"(?P<space>\s+)|(?P<float>[0-9]+\.[0-9]*|\.[0-9]+)|(?P<int>[0-9]+)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op>\*\*|//|[-+*/%(),.\[\]^])"
)


class ExpressionError(KernelError):
    """An index expression the web calculator does not accept."""


@dataclass(frozen=True)
class Token:
    """One token: its kind (``int``, ``name``, ``op``, ``end``), text and column (1-based)."""

    kind: str
    text: str
    col: int


def tokenize(text: str, limit: int = MAX_LENGTH) -> list[Token]:
    """The tokens of ``text``, ending with an ``end`` token; rejects
    over-long text, characters outside the grammar, decimals and powers."""
    if not isinstance(text, str):
        raise ExpressionError(f"expected text, got {type(text).__name__}")
    if len(text) > limit:
        raise ExpressionError(
            f"expression is {len(text)} characters long; at most {limit} are accepted"
        )
    out: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExpressionError(
                f"column {pos + 1}: unexpected character {text[pos]!r}; allowed are {_ALLOWED}"
            )
        kind = m.lastgroup or ""
        tok = m.group()
        if kind == "float":
            raise ExpressionError(f"column {pos + 1}: {tok!r}: only integer constants are allowed")
        if kind == "op" and tok in ("**", "^"):
            raise ExpressionError(f"column {pos + 1}: powers ({tok}) are not allowed")
        if kind != "space":
            out.append(Token(kind, tok, pos + 1))
        pos = m.end()
    out.append(Token("end", "", len(text) + 1))
    return out


class _Parser:
    """Recursive descent over a token list (module docstring's grammar)."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    # -- helpers -----------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def _fail(self, message: str, tok: Token | None = None) -> ExpressionError:
        t = tok or self.tok
        return ExpressionError(f"column {t.col}: {message}")

    def _describe(self, tok: Token) -> str:
        return "the end of the expression" if tok.kind == "end" else repr(tok.text)

    def expect(self, text: str) -> Token:
        if self.tok.text != text or self.tok.kind == "end":
            raise self._fail(f"expected {text!r}, found {self._describe(self.tok)}")
        t = self.tok
        self.i += 1
        return t

    def accept(self, text: str) -> bool:
        if self.tok.kind == "op" and self.tok.text == text:
            self.i += 1
            return True
        return False

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self._fail(f"expression nested more than {MAX_DEPTH} levels deep")

    def _checked(self, value: sp.Expr, tok: Token) -> sp.Expr:
        """``value`` if none of its constants reaches :data:`MAX_INT`."""
        for atom in value.atoms(sp.Rational):
            if abs(atom.p) >= MAX_INT or abs(atom.q) >= MAX_INT:
                raise self._fail("a constant exceeds the limit of 2**40 in magnitude", tok)
        return value

    # -- grammar -----------------------------------------------------------

    def expr(self) -> sp.Expr:
        value = self.term()
        while self.tok.kind == "op" and self.tok.text in ("+", "-"):
            op = self.tok
            self.i += 1
            rhs = self.term()
            rhs = rhs if op.text == "+" else sp.Mul(sp.Integer(-1), rhs)
            value = self._checked(sp.Add(value, rhs), op)
        return value

    def term(self) -> sp.Expr:
        value = self.unary()
        while self.tok.kind == "op" and self.tok.text in ("*", "//", "/", "%"):
            op = self.tok
            self.i += 1
            rhs = self.unary()
            if op.text == "*":
                value = sp.Mul(value, rhs)
            elif rhs == 0:
                raise self._fail("division by zero", op)
            elif op.text == "%":
                value = sp.Mod(value, rhs)
            else:
                quotient = sp.Mul(value, sp.Pow(rhs, sp.Integer(-1)))
                value = sp.floor(quotient) if op.text == "//" else quotient
            value = self._checked(value, op)
        return value

    def unary(self) -> sp.Expr:
        if self.tok.kind == "op" and self.tok.text in ("-", "+"):
            op = self.tok
            self.i += 1
            self.enter()
            inner = self.unary()
            self.depth -= 1
            return inner if op.text == "+" else self._checked(sp.Mul(sp.Integer(-1), inner), op)
        return self.primary()

    def primary(self) -> sp.Expr:
        t = self.tok
        if t.kind == "int":
            if len(t.text) > 13 or int(t.text) >= MAX_INT:
                raise self._fail(f"integer {t.text[:20]} exceeds the limit of 2**40", t)
            self.i += 1
            return sp.Integer(int(t.text))
        if t.kind == "name":
            self.i += 1
            if t.text in _BUILTINS:
                self.expect(".")
                axis = self.tok
                if axis.kind != "name" or axis.text not in ("x", "y", "z"):
                    raise self._fail(f"{t.text} has the components x, y and z, found "
                                     f"{self._describe(axis)}", axis)
                self.i += 1
                return getattr(_BUILTINS[t.text], axis.text)
            if t.text in _SHORTHANDS:
                return _SHORTHANDS[t.text]
            if t.text == "floor":
                args = self.call(t, 1)
                return sp.floor(args[0])
            if t.text == "Mod":
                a, b = self.call(t, 2)
                if b == 0:
                    raise self._fail("Mod by zero", t)
                return sp.Mod(a, b)
            raise self._fail(f"unknown name {t.text[:40]!r}; allowed are {_ALLOWED}", t)
        if self.accept("("):
            self.enter()
            value = self.expr()
            self.depth -= 1
            self.expect(")")
            return value
        raise self._fail(f"expected a number, a CUDA builtin or '(', found {self._describe(t)}")

    def call(self, name: Token, nargs: int) -> list[sp.Expr]:
        self.expect("(")
        self.enter()
        args = [self.expr()]
        while self.accept(","):
            args.append(self.expr())
        self.depth -= 1
        self.expect(")")
        if len(args) != nargs:
            raise self._fail(f"{name.text}() takes {nargs} argument{'s' * (nargs > 1)}, "
                             f"got {len(args)}", name)
        return args

    def finish(self) -> None:
        if self.tok.kind != "end":
            raise self._fail(f"unexpected {self._describe(self.tok)} after the expression")


def parse_expression(text: str) -> sp.Expr:
    """The sympy expression of one index expression (module docstring)."""
    tokens = tokenize(text)
    if len(tokens) == 1:
        raise ExpressionError("empty expression")
    p = _Parser(tokens)
    value = p.expr()
    p.finish()
    return value


def parse_access(text: str, limit: int = MAX_LENGTH * 3) -> tuple[str, tuple[sp.Expr, ...]]:
    """``NAME[expr, ...]`` to the field name and its index expressions."""
    tokens = tokenize(text, limit)
    p = _Parser(tokens)
    name = p.tok
    if name.kind != "name":
        raise p._fail(f"expected a field name like src[...], found {p._describe(name)}")
    p.i += 1
    p.expect("[")
    index = [p.expr()]
    while p.accept(","):
        if len(index) >= MAX_INDICES:
            raise p._fail(f"an access has at most {MAX_INDICES} indices")
        index.append(p.expr())
    p.expect("]")
    p.finish()
    return name.text, tuple(index)


__all__ = [
    "MAX_DEPTH",
    "MAX_INT",
    "MAX_LENGTH",
    "ExpressionError",
    "Token",
    "parse_access",
    "parse_expression",
    "tokenize",
]
