"""Literal Python values read from ``ast`` nodes, with the place of every part.

Only what a reader can know without running the code counts: numbers, strings,
booleans, dicts, lists and tuples of them, and calls of a few known constructors
(``ResourceSettings(...)``, ``Resources(...)``) with such arguments. Anything else
(a variable, an arithmetic expression, a function call) is NotLiteral, reported at
its line and column."""

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


class LiteralReader:
    """Reads literal values of one file, recording where every part stands."""

    def __init__(self, source: PySource, imports: Imports, calls: Mapping[str, CallReader]) -> None:
        self.source, self.imports, self.calls = source, imports, calls
        self.places: dict[SubPath, Place] = {}
        self.keys: dict[SubPath, Place] = {}

    def value(self, node: ast.AST, path: SubPath) -> Any:
        self.places[path] = self.source.place(node)
        if isinstance(node, ast.Constant) and not isinstance(node.value, (bytes, complex, type(...))):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and \
                isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)):
            number = node.operand.value
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
