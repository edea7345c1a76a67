"""The generations of the EndpointSlices this controller wrote, so that a sync can tell when its
informer has not caught up with its own writes (and must wait rather than create duplicates).

Upstream: k8s.io/endpointslice endpointslice_tracker.go
"""
from __future__ import annotations

from ...api.types import ObjectName, discovery_v1
from .utils import LABEL_SERVICE_NAME

DELETION_EXPECTED = -1        # upstream: deletionExpected


def _service_key(s: discovery_v1.EndpointSlice) -> ObjectName | None:
    name = (s.metadata.labels or {}).get(LABEL_SERVICE_NAME)
    return ObjectName(s.metadata.namespace or "", name) if name else None


class EndpointSliceTracker:
    """Service -> slice UID -> the generation last written (or DELETION_EXPECTED).
    Upstream: EndpointSliceTracker"""

    def __init__(self) -> None:
        self.generations_by_service: dict[ObjectName, dict[str, int]] = {}

    def has(self, s: discovery_v1.EndpointSlice) -> bool:
        key = _service_key(s)
        return key is not None and (s.metadata.uid or "") in self.generations_by_service.get(key, {})

    def should_sync(self, s: discovery_v1.EndpointSlice) -> bool:
        """A slice changed by someone else (a generation we did not write). Upstream: ShouldSync"""
        key = _service_key(s)
        if key is None:
            return True
        g = self.generations_by_service.get(key, {}).get(s.metadata.uid or "")
        return g is None or g == DELETION_EXPECTED or (s.metadata.generation or 0) > g

    def stale_slices(self, service_key: ObjectName, slices: list[discovery_v1.EndpointSlice]) -> bool:
        """The informer lags our writes: a slice older than written, one we deleted still there,
        or one we wrote not there yet. Upstream: StaleSlices"""
        gfs = self.generations_by_service.get(service_key)
        if gfs is None:
            return False
        provided = set()
        for s in slices:
            provided.add(s.metadata.uid or "")
            g = gfs.get(s.metadata.uid or "")
            if g is not None and (g == DELETION_EXPECTED or g > (s.metadata.generation or 0)):
                return True
        return any(g != DELETION_EXPECTED and uid not in provided for uid, g in gfs.items())

    def update(self, s: discovery_v1.EndpointSlice) -> None:
        """Upstream: Update"""
        key = _service_key(s)
        if key is not None:
            self.generations_by_service.setdefault(key, {})[s.metadata.uid or ""] = s.metadata.generation or 0

    def delete_service(self, namespace: str, name: str) -> None:
        """Upstream: DeleteService"""
        self.generations_by_service.pop(ObjectName(namespace, name), None)

    def expect_deletion(self, s: discovery_v1.EndpointSlice) -> None:
        """Upstream: ExpectDeletion"""
        key = _service_key(s)
        if key is not None:
            self.generations_by_service.setdefault(key, {})[s.metadata.uid or ""] = DELETION_EXPECTED

    def handle_deletion(self, s: discovery_v1.EndpointSlice) -> bool:
        """Forget a deleted slice; True if the deletion was not ours (resync). Upstream: HandleDeletion"""
        key = _service_key(s)
        if key is None:
            return True
        gfs = self.generations_by_service.get(key, {})
        g = gfs.pop(s.metadata.uid or "", None)
        if not gfs:
            self.generations_by_service.pop(key, None)
        return g != DELETION_EXPECTED
