"""The repository's Python modules as Python's import system would find them, each
parsed on first use and never imported or run.

An absolute import (``from steps import train``) is searched where Python would find
it when the pipeline runs: the directory of the file the source names (Python puts a
script's directory first on ``sys.path``), the directory above the package that file
is in, the ZenML source root (the nearest directory holding ``.zen``), the repository
root and its ``src/`` (a src-layout project is installed, so its packages import). A relative import is resolved
against the importing file's package. Nothing outside the repository is ever read
(``paths.outside``); a module that is not found is reported, never guessed.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from ..diagnostics import Diagnostic
from .literals import Imports
from .paths import outside
from .pysource import PySource, parse

# The modules one source may lead to, in number and in bytes: beyond, the import that
# goes further is refused (C006) rather than read without end.
MAX_MODULES = 500
MAX_PROJECT_BYTES = 16 * 1024 * 1024


@dataclass
class Module:
    """One parsed file: its tree, absolute-import names and every module-level binding."""

    path: str
    source: PySource
    imports: Imports
    bindings: dict[str, list[ast.AST]] = field(default_factory=dict)
    order: dict[int, int] = field(default_factory=dict)   # id(statement) -> its index in the body
    # name -> its ``name.configure(...)`` calls: (index of the module-level statement, the call,
    # "top" for a statement of its own, "block" under a module-level if/for/try, "function" in a def)
    configures: dict[str, list[tuple[int, ast.Call, str]]] = field(default_factory=dict)

    @property
    def package_dir(self) -> str:
        return os.path.dirname(self.path)

    def binding(self, name: str) -> ast.AST | None:
        """The one statement that binds ``name`` at module level, or None (not bound, or bound more than once)."""
        found = self.bindings.get(name, [])
        return found[0] if len(found) == 1 else None

    def rebound(self, name: str) -> bool:
        return len(self.bindings.get(name, [])) > 1


def _targets(node: ast.AST) -> list[str]:
    """The names an assignment target binds."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for item in node.elts for n in _targets(item)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


def _bindings(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Every statement that binds a name at module level (in ``if``/``try``/``for``
    blocks too), and names a function declares ``global``: such a name is rebound."""
    found: dict[str, list[ast.AST]] = {}

    def add(name: str, node: ast.AST) -> None:
        found.setdefault(name, []).append(node)

    def visit(statements: list[ast.stmt], top: bool = True) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                add(node.name, node)
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Global):
                        for name in inner.names:
                            add(name, inner)
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in _targets(target):
                        add(name, node)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                for name in _targets(node.target):
                    add(name, node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    add(alias.asname or alias.name.split(".")[0], node)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                for name in _targets(node.target):
                    add(name, node)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    for name in _targets(item.optional_vars) if item.optional_vars else []:
                        add(name, node)
            # a top-level statement is walked once for := (the blocks below it are inside
            # that walk: walking each again cost a pass per level of nesting, #42)
            for inner in ast.walk(node) if top and not isinstance(node, (ast.Import, ast.ImportFrom)) else ():
                if isinstance(inner, ast.NamedExpr):
                    add(inner.target.id, inner)
            for block in ("body", "orelse", "finalbody"):
                if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith)):
                    visit(getattr(node, block, []) or [], False)
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    if handler.name:
                        add(handler.name, handler)
                    visit(handler.body, False)
            if isinstance(node, ast.Match):
                for case in node.cases:
                    visit(case.body, False)

    visit(tree.body)
    return found


def _configures(tree: ast.Module) -> dict[str, list[tuple[int, ast.Call, str]]]:
    """Every ``<name>.configure(...)`` call of a module, found in one walk."""
    found: dict[str, list[tuple[int, ast.Call, str]]] = {}
    for index, statement in enumerate(tree.body):
        top = statement.value if isinstance(statement, ast.Expr) else None
        where = "function" if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else "block"
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "configure" and isinstance(node.func.value, ast.Name):
                found.setdefault(node.func.value.id, []).append((index, node, "top" if node is top else where))
    return found


@dataclass
class Lookup:
    """Where an import leads: a module file of the repository, or why not."""

    path: str | None
    problem: str | None = None
    leaves: bool = False     # found, but through a path that leaves the repository (refused, not "not there")


class Project:
    """The modules of one repository, found and parsed on demand (each once)."""

    def __init__(self, root: str, entry: str) -> None:
        self.root = os.path.abspath(root)
        self.entry = entry
        self.search = [os.path.dirname(os.path.abspath(entry))]
        zen = self._zen_root(self.search[0])
        src = os.path.join(self.root, "src")
        for folder in (self._package_root(self.search[0]), zen, self.root, src if os.path.isdir(src) else None):
            if folder and folder not in self.search and not outside(self.root, folder):
                self.search.append(folder)
        self._modules: dict[str, Module | list[Diagnostic]] = {}
        self._bytes = 0
        self._relative = os.path.dirname(entry)    # how paths are shown: as the entry was named
        self._entry_abs = os.path.dirname(os.path.abspath(entry))

    def _package_root(self, start: str) -> str | None:
        """The directory above the package the entry is in (its topmost directory with
        ``__init__.py``): where Python must look for the entry's own package by its name."""
        folder, found = start, None
        while os.path.isfile(os.path.join(folder, "__init__.py")) and not outside(self.root, os.path.dirname(folder)):
            found = os.path.dirname(folder)
            folder = found
        return found

    def _zen_root(self, start: str) -> str | None:
        folder = start
        while folder.startswith(self.root):
            if os.path.isdir(os.path.join(folder, ".zen")):
                return folder
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        return None

    def shown(self, absolute: str) -> str:
        """A path as diagnostics show it: relative like the path the entry was named by."""
        if os.path.abspath(absolute) == os.path.abspath(self.entry):
            return self.entry
        relative = os.path.relpath(absolute, self._entry_abs)
        return os.path.normpath(os.path.join(self._relative, relative)).replace(os.sep, "/")

    def module(self, path: str) -> Module | list[Diagnostic]:
        """The parsed module at ``path`` (absolute), or the diagnostics of why it cannot be read."""
        path = os.path.abspath(path)
        if path not in self._modules:
            try:
                size = os.path.getsize(path)
            except OSError:
                size = 0
            if len(self._modules) >= MAX_MODULES or self._bytes + size > MAX_PROJECT_BYTES:
                return []
            self._bytes += size
            source, problems = parse(self.shown(path))
            if source is None:
                self._modules[path] = problems
            else:
                module = Module(path, source, Imports(source.tree), _bindings(source.tree))
                module.order = {id(node): index for index, node in enumerate(source.tree.body)}
                module.configures = _configures(source.tree)
                self._modules[path] = module
        return self._modules[path]

    def _candidate(self, base: str, parts: list[str]) -> Lookup | None:
        """``base/a/b.py`` or ``base/a/b/__init__.py`` when one is a file of the repository."""
        stem = os.path.join(base, *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if os.path.lexists(candidate):
                problem = outside(self.root, candidate)
                return Lookup(None, problem, leaves=True) if problem else Lookup(candidate)
        if parts and os.path.isdir(stem) and not outside(self.root, stem):
            return Lookup(stem)      # a namespace package (a directory without __init__.py)
        return None

    def find(self, importer: Module, module: str | None, level: int) -> Lookup:
        """The file of the module an import in ``importer`` names (a directory for a
        namespace package), or why there is none in the repository."""
        parts = module.split(".") if module else []
        if level:
            base = importer.package_dir
            for _ in range(level - 1):
                base = os.path.dirname(base)
            if outside(self.root, base) is not None:
                return Lookup(None, f"{'.' * level}{module or ''} goes above the repository root", leaves=True)
            found = self._candidate(base, parts)
            if found is None and not parts:
                return Lookup(base)
            return found or Lookup(None, f"no module {'.' * level}{module or ''} in the repository "
                                   f"(looked for {self.shown(os.path.join(base, *parts))}.py)")
        for base in self.search:
            found = self._candidate(base, parts)
            if found is not None:
                return found
        where = ", ".join(self.shown(x) or "." for x in self.search)
        return Lookup(None, f"module {module} is not in the repository (looked in {where}, as Python would "
                      "from the pipeline's directory and the repository root); poolc reads only the "
                      "repository's own code")

    def find_in(self, package: str, name: str) -> str | None:
        """The submodule ``name`` of the package directory ``package``, when the repository has it."""
        found = self._candidate(package, [name])
        return found.path if found is not None else None

    def loaded(self) -> list[Module]:
        return [m for m in self._modules.values() if isinstance(m, Module)]

    def by_source(self, source: PySource) -> Module | None:
        return next((m for m in self.loaded() if m.source is source), None)

    def package_module(self, path: str) -> Module | list[Diagnostic] | None:
        """The module of a file, or of a package's ``__init__.py`` (None for a namespace package)."""
        if os.path.isdir(path):
            init = os.path.join(path, "__init__.py")
            return self.module(init) if os.path.isfile(init) else None
        return self.module(path)
