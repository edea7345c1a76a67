"""DefaultBinder: POST pods/<name>/binding. Upstream: plugins/defaultbinder/default_binder.go"""
from __future__ import annotations

from typing import Any

from ....api.types.core_v1 import Pod
from ..interface import CycleState, Status


class DefaultBinder:
    NAME = "DefaultBinder"

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Create the Binding; API errors propagate as Error statuses. Upstream: Bind"""
        meta = pod.metadata
        try:
            await self.handle.client_set().core_v1().pods(meta.namespace).bind(meta.name, node_name,
                                                                                uid=meta.uid or "")
        except Exception as err:       # noqa: BLE001 - the binding cycle decides what to do
            return Status.as_status(err)
        return None
