"""Literal Python values read from ``ast`` nodes, with the place of every part.

Only what a reader can know without running the code counts: numbers, strings,
booleans, dicts, lists and tuples of them, calls of a few known constructors
(``ResourceSettings(...)``, ``Resources(...)``) with such arguments, a module-level
name bound once to such a value (``NUM_GPUS = 4``; the front end says which names
are), and arithmetic or f-strings over numbers and strings. Anything else (a
variable of a function, a function call, a name bound twice) is NotLiteral, reported
at its line and column. A value read through a name is placed where the name's
literal is written: that is the line an engineer changes."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from .found import Place, SubPath
from .pysource import PySource


class NotLiteral(Exception):
    """A value poolc cannot know without running the code."""

    def __init__(self, node: ast.AST, message: str) -> None:
        super().__init__(message)
        self.node, self.message = node, message


class Imports:
    """Local names of a module -> the qualified names they were imported as
    (``from zenml.config import ResourceSettings as RS`` gives RS ->
    zenml.config.ResourceSettings), read from its top-level imports."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top

    def qualified(self, node: ast.AST) -> str | None:
        """The qualified name an expression such as ``zenml.step`` or ``RS`` stands for."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return f"{base}.{node.attr}" if base else None
        return None


def describe(node: ast.AST) -> str:
    """A short text of an expression for a message (``ast.unparse``, cut)."""
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):  # pragma: no cover - unparse handles any parsed tree
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


# A constructor poolc understands: (reader, node of the call, path) -> its value as plain data.
CallReader = Callable[["LiteralReader", ast.Call, SubPath], Any]
# A module-level name -> (the source it is written in, the expression bound to it), or
# None when the name is not bound once at module level.
NameReader = Callable[[PySource, ast.Name], "tuple[PySource, ast.expr] | None"]

_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a ** b,
}
# Literal arithmetic stays small: a 5,000-digit number or a 10**9-character string is not a demand.
_MAX_NUMBER = 10 ** 30
_MAX_TEXT = 4096
_MAX_NAME_HOPS = 32


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class LiteralReader:
    """Reads literal values of one file, recording where every part stands."""

    def __init__(self, source: PySource, imports: Imports, calls: Mapping[str, CallReader],
                 names: NameReader | None = None) -> None:
        self.source, self.imports, self.calls, self.names = source, imports, calls, names
        self.places: dict[SubPath, Place] = {}
        self.keys: dict[SubPath, Place] = {}
        self._hops = 0

    def _through_name(self, node: ast.Name, path: SubPath) -> Any:
        """The value of a module-level name bound once to a literal, placed where that literal is written."""
        bound = self.names(self.source, node) if self.names is not None else None
        if bound is None or self._hops >= _MAX_NAME_HOPS:
            raise NotLiteral(node, f"{node.id} is not a literal: poolc reads this file without running it, so "
                             "it reads a name only when it is bound once, at module level, to a literal")
        saved, self.source = self.source, bound[0]
        self._hops += 1
        try:
            return self.value(bound[1], path)
        except NotLiteral as exc:
            if exc.node is bound[1] or not isinstance(exc.node, ast.AST):
                raise NotLiteral(node, f"{node.id} is not a literal: it is bound to {describe(bound[1])}, "
                                 "which poolc cannot read without running the code") from None
            raise NotLiteral(node, f"{node.id} is not a literal: {exc.message}") from None
        finally:
            self.source = saved
            self._hops -= 1

    def _scratch(self, node: ast.AST, path: SubPath) -> Any:
        """An operand's value, without recording its place as the place of ``path``."""
        places, keys = dict(self.places), dict(self.keys)
        try:
            return self.value(node, path)
        finally:
            self.places, self.keys = places, keys

    def _arithmetic(self, node: ast.BinOp, path: SubPath) -> Any:
        left, right = self._scratch(node.left, path), self._scratch(node.right, path)
        operation = _ARITHMETIC.get(type(node.op))
        numbers = _number(left) and _number(right)
        texts = isinstance(left, str) and isinstance(right, str) and isinstance(node.op, ast.Add)
        if operation is None or not (numbers or texts) or \
                (isinstance(node.op, ast.Pow) and (not isinstance(right, int) or abs(right) > 64 or
                                                    abs(left) > _MAX_NUMBER)):
            raise NotLiteral(node, f"{describe(node)} is not literal arithmetic: poolc computes +, -, *, /, //, "
                             "% and small powers of numbers, and + of strings")
        try:
            result = operation(left, right)
        except (ArithmeticError, ValueError):
            raise NotLiteral(node, f"{describe(node)} has no value (division by zero or overflow)") from None
        if (numbers and abs(result) > _MAX_NUMBER) or (texts and len(result) > _MAX_TEXT):
            raise NotLiteral(node, f"{describe(node)} is too large to be a demand")
        return result

    def _fstring(self, node: ast.JoinedStr, path: SubPath) -> str:
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                parts.append(part.value)
                continue
            if not (isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None):
                raise NotLiteral(part, f"{describe(node)}: poolc reads f-strings of plain {{name}} fields only")
            value = self._scratch(part.value, path)
            if not (_number(value) or isinstance(value, str)):
                raise NotLiteral(part, f"{describe(part.value)} in an f-string is not a number or a string")
            parts.append(str(value))
        text = "".join(parts)
        if len(text) > _MAX_TEXT:
            raise NotLiteral(node, f"{describe(node)} is too long to be a demand")
        return text

    def value(self, node: ast.AST, path: SubPath) -> Any:
        self.places[path] = self.source.place(node)
        if isinstance(node, ast.Name):
            return self._through_name(node, path)
        if isinstance(node, ast.BinOp):
            result = self._arithmetic(node, path)
            self.places[path] = self.source.place(node)
            return result
        if isinstance(node, ast.JoinedStr):
            result = self._fstring(node, path)
            self.places[path] = self.source.place(node)
            return result
        if isinstance(node, ast.Constant) and not isinstance(node.value, (bytes, complex, type(...))):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            number = self._scratch(node.operand, path)
            if not _number(number):
                raise NotLiteral(node, f"{describe(node)} is not a number")
            self.places[path] = self.source.place(node)
            return -number if isinstance(node.op, ast.USub) else number
        if isinstance(node, ast.Dict):
            return self.mapping(node, path)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = []
            for index, item in enumerate(node.elts):
                if isinstance(item, ast.Starred):
                    raise NotLiteral(item, f"{describe(item)} is not a literal: write the items out")
                items.append(self.value(item, path + (index,)))
            return items
        if isinstance(node, ast.Call):
            reader = self.calls.get(self.imports.qualified(node.func) or "")
            if reader is not None:
                return reader(self, node, path)
        raise NotLiteral(node, f"{describe(node)} is not a literal: poolc reads this file without running it, "
                         "so write the value itself here")

    def mapping(self, node: ast.Dict, path: SubPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:
                raise NotLiteral(item, f"**{describe(item)} is not a literal: write the keys out")
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise NotLiteral(key, f"{describe(key)} is not a literal string key")
            self.keys[path + (key.value,)] = self.source.place(key)
            result[key.value] = self.value(item, path + (key.value,))
        return result

    def keywords(self, call: ast.Call, path: SubPath, *, positional: tuple[str, ...] = ()) -> dict[str, Any]:
        """The arguments of a constructor call as a dict; positional ones take the
        names in ``positional``; ``None`` means not given (left out)."""
        if len(call.args) > len(positional):
            extra = call.args[len(positional)]
            raise NotLiteral(extra, f"{describe(extra)}: give this argument by name")
        result: dict[str, Any] = {}
        pairs = [(name, arg) for name, arg in zip(positional, call.args, strict=False)]
        for keyword in call.keywords:
            if keyword.arg is None:
                raise NotLiteral(keyword.value, f"**{describe(keyword.value)} is not a literal: write the "
                                 "arguments out")
            pairs.append((keyword.arg, keyword.value))
            self.keys[path + (keyword.arg,)] = self.source.place(keyword)
        for name, arg in pairs:
            value = self.value(arg, path + (name,))
            if value is not None:
                result[name] = value
        return result
