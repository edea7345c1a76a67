"""Claiming ControllerRevisions by ControllerRef (the DaemonSet controller's controlledHistories).

Lives beside the history rather than in controller_ref_manager.py so the revision-owning
controllers share one copy. Upstream: ControllerRevisionControllerRefManager
(pkg/controller/controller_ref_manager.go)
"""
from __future__ import annotations

from typing import Any, Sequence

from ...api import errors, labels
from ...api.types import apps_v1
from ..controller_ref_manager import BaseControllerRefManager, CanAdoptFunc
from ..controller_utils import GroupVersionKind, new_aggregate
from .controller_history import Interface


class ControllerRevisionControllerRefManager(BaseControllerRefManager):
    """Adopts orphan revisions matching the selector, releases ours that stopped matching."""

    def __init__(self, history: Interface, controller: Any, selector: labels.Selector | None,
                 controller_kind: GroupVersionKind, can_adopt: CanAdoptFunc | None) -> None:
        super().__init__(controller, selector, can_adopt)
        self.history = history
        self.controller_kind = controller_kind

    async def claim_controller_revisions(
            self, histories: Sequence[apps_v1.ControllerRevision]) -> list[apps_v1.ControllerRevision]:
        """The revisions that are ours after adopting/releasing. Upstream: ClaimControllerRevisions"""
        claimed: list[apps_v1.ControllerRevision] = []
        errs: list[Exception] = []
        for h in histories:
            try:
                if await self.claim_object(h, self.matches_selector, self.adopt_controller_revision,
                                           self.release_controller_revision):
                    claimed.append(h)
            except Exception as err:
                errs.append(err)
        if (agg := new_aggregate(errs)) is not None:
            raise agg
        return claimed

    async def adopt_controller_revision(self, history: apps_v1.ControllerRevision) -> None:
        """Upstream: AdoptControllerRevision"""
        try:
            await self.can_adopt()
        except Exception as err:
            meta = history.metadata
            raise RuntimeError(f"can't adopt ControllerRevision {meta.namespace}/{meta.name} ({meta.uid}): {err}"
                               ) from err
        await self.history.adopt_controller_revision(self.controller, self.controller_kind, history)

    async def release_controller_revision(self, history: apps_v1.ControllerRevision) -> None:
        """Upstream: ReleaseControllerRevision — NotFound and Invalid are ignored."""
        try:
            await self.history.release_controller_revision(self.controller, history)
        except (errors.NotFound, errors.Invalid):
            return
