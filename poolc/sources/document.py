"""A Pipeline document whose steps came from a source: diagnostics about a value
point at the file and line where that value was written (a ``.py`` decorator, a run
configuration), everything else at the poolc document as usual."""

from __future__ import annotations

from collections.abc import Iterable

from .. import diagnostics as d
from ..diagnostics import Diagnostic
from ..load import Document, Path_
from .found import Place


class SourcedDocument(Document):
    """The Pipeline's own document, plus the places of what its source gave,
    by document path (``("spec", "steps", "train", "settings", "resources", "gpu_count")``)."""

    __slots__ = ("places", "key_places")

    def __init__(self, base: Document, places: dict[Path_, Place], key_places: dict[Path_, Place]) -> None:
        super().__init__(base.file, base.index, base.data, base.start, base.keys, base.values)
        self.places, self.key_places = places, key_places

    def place_of(self, path: Iterable[str | int]) -> Place | None:
        """Where the value at ``path`` was written in a source file; None when it was
        written in the poolc document (or nowhere: a default)."""
        path = tuple(path)
        if path in self.keys or path in self.values:
            return None
        while path:
            if path in self.places:
                return self.places[path]
            if path in self.keys or path in self.values:
                return None
            path = path[:-1]
        return None

    def diagnostic(self, rule: d.Rule, message: str, path: Iterable[str | int] = (),
                   *, key: bool = False, severity: d.Severity | None = None,
                   request: str | None = None) -> Diagnostic:
        path = tuple(path)
        place = self.place_of(path)
        if place is not None and key and path in self.key_places:
            place = self.key_places[path]
        if place is None:
            return super().diagnostic(rule, message, path, key=key, severity=severity, request=request)
        line, col, end_line, end_col = place.span
        return Diagnostic(place.file, line, col, end_line, end_col, rule.id, severity or rule.severity,
                          message, request)
