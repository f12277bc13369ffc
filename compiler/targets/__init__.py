"""Targets: pure functions from a TargetContext to ``{relative path: text}``.

Modules are imported only when rendered, so ``poolc validate`` (which imports
``compiler.domain.catalog``) never loads the emitters.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import TargetContext

TARGETS = {"kubernetes": "compiler.targets.kubernetes", "kueue": "compiler.targets.kueue",
           "sagemaker": "compiler.targets.sagemaker"}


def render_target(name: str, ctx: TargetContext) -> dict[str, str]:
    return import_module(TARGETS[name]).render(ctx)


def render_all(ctx: TargetContext) -> dict[str, str]:
    """Every target's files, by path (the targets' paths never overlap)."""
    files: dict[str, str] = {}
    for name in TARGETS:
        files.update(render_target(name, ctx))
    return dict(sorted(files.items()))
