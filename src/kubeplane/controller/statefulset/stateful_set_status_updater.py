"""Writing a StatefulSet's status, retrying conflicts on the cached copy.

Upstream: pkg/controller/statefulset/stateful_set_status_updater.go
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...api import errors
from ...api.types import apps_v1

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.listers import StatefulSetLister

# Upstream: retry.DefaultRetry (5 steps).
_RETRIES = 5


class StatefulSetStatusUpdater:
    """Upstream: realStatefulSetStatusUpdater"""

    def __init__(self, client: Clientset, set_lister: StatefulSetLister) -> None:
        self.client = client
        self.set_lister = set_lister

    async def update_stateful_set_status(self, s: apps_v1.StatefulSet, status: apps_v1.StatefulSetStatus) -> None:
        """PUT /status with status on s (a private copy); on a conflict retry from the lister's copy.

        Upstream: UpdateStatefulSetStatus
        """
        sets = self.client.apps_v1().statefulsets(s.metadata.namespace or "")
        for attempt in range(_RETRIES):
            s.status = status
            try:
                await sets.update_status(s)
                return
            except errors.Conflict:
                if attempt == _RETRIES - 1:
                    raise
                try:
                    s = self.set_lister.statefulsets(s.metadata.namespace or "").get(s.metadata.name).deep_copy()
                except errors.StatusError as err:
                    raise RuntimeError(f"error getting StatefulSet {s.metadata.namespace}/{s.metadata.name} "
                                       f"to update status: {err}") from err
