"""Writing a StatefulSet's status, retrying conflicts on the cached copy.

Upstream: pkg/controller/statefulset/stateful_set_status_updater.go
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...api import errors
from ...api.types import apps_v1
from ...utils.clock import REAL_CLOCK, Clock

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.listers import StatefulSetLister

# Upstream: retry.DefaultRetry (5 steps, 10 ms apart): the pause lets the informer deliver the
# newer object a conflict says exists.
_RETRIES = 5
_RETRY_INTERVAL = 0.01


class StatefulSetStatusUpdater:
    """Upstream: realStatefulSetStatusUpdater"""

    def __init__(self, client: Clientset, set_lister: StatefulSetLister, clock: Clock = REAL_CLOCK) -> None:
        self.client = client
        self.set_lister = set_lister
        self.clock = clock

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
                await self.clock.sleep(_RETRY_INTERVAL)
                try:
                    s = self.set_lister.statefulsets(s.metadata.namespace or "").get(s.metadata.name).deep_copy()
                except errors.StatusError as err:
                    raise RuntimeError(f"error getting StatefulSet {s.metadata.namespace}/{s.metadata.name} "
                                       f"to update status: {err}") from err
