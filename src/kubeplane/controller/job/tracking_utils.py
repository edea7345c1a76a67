"""Finalizer-removal expectations: the pods (by UID) whose job-tracking finalizer a Job's sync
removed and whose update the informer has not shown yet, so the next sync does not count
them twice.

Upstream: pkg/controller/job/tracking_utils.go (uidTrackingExpectations)
"""
from __future__ import annotations


class UIDTrackingExpectations:
    """_uids: job key -> pod UIDs expected to lose the finalizer. A key with no UIDs left is
    dropped, so the dict holds only Jobs waiting for something."""

    def __init__(self) -> None:
        self._uids: dict[str, set[str]] = {}

    def get_expected_uids(self, key: str) -> frozenset[str]:
        """Upstream: getExpectedUIDs (a copy)."""
        return frozenset(self._uids.get(key, ()))

    def expect_finalizers_removed(self, key: str, uids: list[str]) -> None:
        """Upstream: expectFinalizersRemoved"""
        self._uids.setdefault(key, set()).update(uids)

    def finalizer_removal_observed(self, key: str, uid: str) -> None:
        """Upstream: finalizerRemovalObserved"""
        uids = self._uids.get(key)
        if uids is not None:
            uids.discard(uid)
            if not uids:
                del self._uids[key]

    def delete_expectations(self, key: str) -> None:
        """Upstream: deleteExpectations"""
        self._uids.pop(key, None)
