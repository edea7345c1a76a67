"""The lock a leader election runs on, and the record it stores.

Upstream: client-go tools/leaderelection/resourcelock/interface.go
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

LEADER_ELECTION_RECORD_ANNOTATION_KEY = "control-plane.alpha.kubernetes.io/leader"
LEASES_RESOURCE_LOCK = "leases"


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The election state stored in the lock (a Lease's spec).

    Times are epoch seconds (None when unset). Candidates never compare them with their
    own clock: a change of the record only tells them the holder is alive.
    Upstream: LeaderElectionRecord, resourcelock/interface.go
    """

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: float | None = None
    renew_time: float | None = None
    leader_transitions: int = 0
    strategy: str = ""
    preferred_holder: str = ""

    def raw(self) -> bytes:
        """The record as upstream's json.Marshal of it compares: times at whole seconds.

        Candidates detect a renewal by this value changing, so (as upstream) two renewals
        within one second look like one.
        """
        def sec(t: float | None) -> int | None:
            return None if t is None else int(t // 1)
        return repr((self.holder_identity, self.lease_duration_seconds, sec(self.acquire_time),
                     sec(self.renew_time), self.leader_transitions, self.strategy,
                     self.preferred_holder)).encode()


class EventRecorderLike(Protocol):
    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None: ...


class Interface(Protocol):
    """A lock a LeaderElector can hold. Upstream: resourcelock.Interface"""

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        """The current record and its raw form; raises errors.NotFound if there is no lock."""

    async def create(self, ler: LeaderElectionRecord) -> None:
        """Create the lock holding ler; raises errors.AlreadyExists if another did first."""

    async def update(self, ler: LeaderElectionRecord) -> None:
        """Replace the record, conditional on the lock not having changed since the last
        get/create/update (errors.Conflict otherwise)."""

    def record_event(self, s: str) -> None:
        """Emit a Normal LeaderElection event "<identity> <s>" about the lock, if recording."""

    def identity(self) -> str:
        """This candidate's identity."""

    def describe(self) -> str:
        """"<namespace>/<name>", for logs."""
