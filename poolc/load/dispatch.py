"""Files and texts -> poolc's documents: which files are read, which of their
documents are poolc's, and what all the files of one run may add up to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import SequenceNode
from ruamel.yaml.reader import ReaderError

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from .files import decode, error_at, expand_paths, read_regular
from .kinds import OURS, foreign_count, mentions_poolc, node_is_ours
from .parse import MAX_DEPTH, Builder, Reject, block_too_deep, compose_all, node_span, offset_to_position, too_deep
from .positions import Document, FilePositions, PositionCache


@dataclass
class LoadResult:
    files: list[str]
    documents: list[Document]
    diagnostics: list[Diagnostic]
    # "documents": poolc documents seen, "foreign": other documents skipped (for the summary line)
    counts: dict[str, int] = field(default_factory=dict)


def _tally(counts: dict[str, int] | None, what: str, n: int = 1) -> None:
    if counts is not None:
        counts[what] = counts.get(what, 0) + n


def load_text(file: str, text: str, max_documents: int | None = None,
              counts: dict[str, int] | None = None,
              cache: PositionCache | None = None) -> tuple[list[Document], list[Diagnostic]]:
    """All poolc documents of one file's text. Other documents are skipped, and a
    file that never mentions ``poolc/`` is not even parsed: a pre-commit hook may
    hand us Helm templates or CloudFormation, which are not ours to judge. A file
    that is not valid YAML is reported only if it declares ``apiVersion: poolc/``."""
    if not mentions_poolc(text):
        _tally(counts, "foreign", foreign_count(text))
        return [], []
    ours = OURS.search(text) is not None
    nesting = _nesting_problem(file, text)
    if nesting is not None:
        return [], [nesting] if ours else []
    reader = _TextReader(file, text, counts, cache)
    try:
        reader.read(max_documents)
    except (YAMLError, RecursionError, ValueError) as exc:
        if not ours:
            return [], []
        reader.problems.append(_syntax_error(file, text, exc))
    reader.settle()
    return reader.documents, reader.problems


def _nesting_problem(file: str, text: str) -> Diagnostic | None:
    """Y006 where the text nests deeper than the composer's stack bears, found before
    parsing (``too_deep``, ``block_too_deep``): parsing it would kill the process."""
    deep = too_deep(text)
    if deep is not None:
        line, col = offset_to_position(text, deep)
    else:
        block = block_too_deep(text)
        if block is None:
            return None
        line, col = block
    return error_at(file, d.Y006, f"nesting is deeper than {MAX_DEPTH} levels", line, col)


class _TextReader:
    """One file's text read document by document; what it found so far survives a
    YAML error further down, which ``load_text`` then reports beside it."""

    def __init__(self, file: str, text: str, counts: dict[str, int] | None, cache: PositionCache | None) -> None:
        self.file = file
        self.text = text
        self.counts = counts
        self.cache = cache
        self.documents: list[Document] = []
        self.problems: list[Diagnostic] = []
        self.lazy: FilePositions | None = None     # made for the file's first poolc document

    def read(self, max_documents: int | None) -> None:
        """Every document of the text, until one past ``max_documents`` of poolc's: the
        caller reports the budget, and composing the rest would only cost time."""
        for index, node in enumerate(compose_all(self.text)):
            if node is None or not self._take(index, node):
                continue
            if max_documents is not None and len(self.documents) > max_documents:
                break

    def _take(self, index: int, node: Any) -> bool:
        """One document: a list of poolc documents is an error, a foreign one is only
        counted, and one of poolc's becomes a Document unless the builder rejects it.
        True when it did (only then can the budget be spent)."""
        if isinstance(node, SequenceNode) and any(node_is_ours(item) for item in node.value):
            self.problems.append(_at_node(self.file, node, d.Y008, "this document is a list of poolc documents; "
                                          "write each as its own document separated by '---'"))
            _tally(self.counts, "documents")
            return False
        if not node_is_ours(node):
            _tally(self.counts, "foreign")
            return False
        _tally(self.counts, "documents")
        if self.lazy is None:
            self.lazy = FilePositions(self.file, self.text, self.cache if self.cache is not None else PositionCache())
        self.lazy.note(index, node)
        try:
            data = Builder(record=False).build(node, (), 0)
        except Reject as reject:
            self.problems.append(_at_node(self.file, reject.node, reject.rule, reject.message))
            return False
        self.documents.append(Document(self.file, index, data, node_span(node), lazy=self.lazy))
        return True

    def settle(self) -> None:
        """A file of one document is read whole anyway: its lines table goes (20,000
        small tables less in a large repository)."""
        if self.lazy is not None and self.lazy.lines is not None and len(self.lazy.lines) < 2:
            self.lazy.lines = None


def _at_node(file: str, node: Any, rule: d.Rule, message: str) -> Diagnostic:
    """A diagnostic over the whole of ``node``, as its span in the file says."""
    line, col, end_line, end_col = node_span(node)
    return Diagnostic(file, line, col, end_line, end_col, rule.id, rule.severity, message)


def _syntax_error(file: str, text: str, exc: Exception) -> Diagnostic:
    """Y002 for a text ruamel.yaml cannot read, where the error says it is."""
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or "invalid YAML"
        if exc.context and exc.problem:
            problem = f"{problem} ({exc.context})"
        return error_at(file, d.Y002, f"YAML syntax error: {problem}", line, col)
    if isinstance(exc, ReaderError):
        line, col = offset_to_position(text, exc.position) if isinstance(exc.position, int) else (1, 1)
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        return error_at(file, d.Y002, f"YAML syntax error: character U+{char:04X} is not allowed in YAML "
                        "(control characters must be escaped in a quoted string)", line, col)
    return error_at(file, d.Y002, f"YAML syntax error: {exc}".splitlines()[0])


class Budget:
    """What all the files of one run may add up to: a per-file limit alone lets four
    8 MiB files cost a minute and gigabytes."""

    def __init__(self) -> None:
        self.bytes = 0
        self.documents = 0
        self.exhausted = False


# A repository of 20,000 pipeline files is about 20-25 MiB of YAML; these leave it
# room and still stop a run from growing without end.
MAX_TOTAL_BYTES = 64 * 1024 * 1024

MAX_DOCUMENTS = 100_000


def too_many_documents(file: str) -> Diagnostic:
    return error_at(file, d.Y007, f"the files given hold more than {MAX_DOCUMENTS} poolc documents; poolc stops "
                     "reading here")


def load_file(path: str, budget: Budget | None = None, counts: dict[str, int] | None = None,
              cache: PositionCache | None = None) -> tuple[list[Document], list[Diagnostic]]:
    raw = read_regular(path)
    if isinstance(raw, Diagnostic):
        return [], [raw]
    if budget is not None:
        budget.bytes += len(raw)
        if budget.bytes > MAX_TOTAL_BYTES:
            return _stop(budget, path, f"the files given add up to more than {MAX_TOTAL_BYTES} bytes; "
                         "poolc stops reading here (split the repository, or validate parts of it)")
    text, problem = decode(path, raw)
    if text is None:
        return [], [problem] if problem else []
    documents, problems = load_text(path, text, None if budget is None else MAX_DOCUMENTS - budget.documents,
                                    counts, cache)
    if budget is not None:
        budget.documents += len(documents)
        if budget.documents > MAX_DOCUMENTS:
            return _stop(budget, path, f"the files given hold more than {MAX_DOCUMENTS} poolc "
                         "documents; poolc stops reading here")
    return documents, problems


def _stop(budget: Budget, path: str, why: str) -> tuple[list[Document], list[Diagnostic]]:
    """The run's budget is spent at ``path``: nothing more is read, and Y007 there says why."""
    budget.exhausted = True
    return [], [error_at(path, d.Y007, why)]


def load_paths(paths: Iterable[str], sink: Callable[[Document], None] | None = None,
               cache: PositionCache | None = None) -> LoadResult:
    """Every poolc document of the files named and below the directories named. With
    ``sink``, each file's documents go to it as soon as the file is read and are not
    collected: the caller builds its models file by file, so a large repository's
    plain data never all exists at once."""
    files, problems = expand_paths(paths)
    documents: list[Document] = []
    budget = Budget()
    counts: dict[str, int] = {}
    cache = cache if cache is not None else PositionCache()
    for f in files:
        docs, diags = load_file(f, budget, counts, cache)
        if sink is None:
            documents.extend(docs)
        else:
            for doc in docs:
                sink(doc)
        problems.extend(diags)
        if budget.exhausted:
            break
    return LoadResult(files, documents, problems, counts)


def load_plain(path: str) -> tuple[Document | None, list[Diagnostic]]:
    """The first YAML document of a file that is not poolc's (a ZenML run configuration
    that a Pipeline's spec.source names), with every position kept and the same guards
    as our own files. None, with the reason, when it cannot be read."""
    raw = read_regular(path)
    if isinstance(raw, Diagnostic):
        return None, [raw]
    text, problem = decode(path, raw)
    if text is None:
        return None, [problem] if problem else []
    nesting = _nesting_problem(path, text)
    if nesting is not None:
        return None, [nesting]
    try:
        for node in compose_all(text):
            if node is None:
                continue
            builder = Builder(record=True)
            try:
                data = builder.build(node, (), 0)
            except Reject as reject:
                return None, [_at_node(path, reject.node, reject.rule, reject.message)]
            return Document(path, 0, data, node_span(node), builder.keys, builder.values), []
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return None, [error_at(path, d.Y002, f"YAML syntax error: {exc.problem or 'invalid YAML'}", line, col)]
    except (YAMLError, RecursionError, ValueError) as exc:
        return None, [error_at(path, d.Y002, f"YAML syntax error: {exc}".splitlines()[0])]
    return Document(path, 0, {}, (1, 1, 1, 1)), []
