"""Targets: pure functions from a configuration and its Plan to ``{relative path: text}``.

Modules are imported only when rendered, so ``poolc validate`` (which imports
``poolc.domain.catalog``) never loads the emitters.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config
    from ..domain.plan import Plan
    from ..requests import StepRequest
    from .context import TargetContext

TARGETS = {"kubernetes": "poolc.targets.kubernetes", "kueue": "poolc.targets.kueue",
           "sagemaker": "poolc.targets.sagemaker", "stops": "poolc.targets.stops"}


def render_target(name: str, ctx: TargetContext) -> dict[str, str]:
    return import_module(TARGETS[name]).render(ctx)


def render_all(config: Config, plan: Plan, requests: Iterable[StepRequest] | None = None,
               context: TargetContext | None = None) -> dict[str, str]:
    """Every target's files for ``plan``, by path (the targets' paths never overlap).
    ``context``: one already made for this plan, to reuse what it rendered."""
    from .context import TargetContext

    ctx = context if context is not None else TargetContext.of(config, plan, requests)
    files: dict[str, str] = {}
    for name in TARGETS:
        files.update(render_target(name, ctx))
    return dict(sorted(files.items()))
