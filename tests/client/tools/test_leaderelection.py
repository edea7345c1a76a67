"""Leader election against a real in-process API server, on a fake clock.

Mirrors client-go leaderelection_test.go: acquiring a free lease, waiting on a held one,
taking over an expired one (leaseTransitions + 1), giving up after renewDeadline, and
releasing on cancel.
"""
from __future__ import annotations

import asyncio
import random
from typing import Any

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.tools.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
)
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.client.transport import RawResponse
from kubeplane.storage import new_storage
from kubeplane.utils.clock import FakeClock, parse_rfc3339, rfc3339_micro

START = 1_600_000_000.0
NS, NAME = "kube-system", "kube-controller-manager"


class _ZeroRandom(random.Random):
    """No jitter: a candidate retries exactly every retry_period."""

    def random(self) -> float:
        return 0.0


class FlakyTransport:
    """Answers lease requests with 500 while `fail_leases` is set."""

    def __init__(self, inner: InProcessTransport) -> None:
        self.inner = inner
        self.fail_leases = False
        self.lease_requests = 0

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | None = None, content_type: str = "application/json") -> RawResponse:
        if "/leases" in path:
            self.lease_requests += 1
            if self.fail_leases:
                return RawResponse(500, orjson.dumps(errors.InternalError("etcdserver: request timed out").status()))
        return await self.inner.request(method, path, query, body, content_type)

    def stream(self, path: str, query: dict[str, str]) -> Any:
        return self.inner.stream(path, query)

    async def close(self) -> None:
        await self.inner.close()


class Candidate:
    """One LeaderElector running in a task, with its callbacks recorded."""

    def __init__(self, cs: Clientset, clock: FakeClock, identity: str, **config: Any) -> None:
        self.clock = clock
        self.started = 0
        self.stopped_at: list[float] = []
        self.new_leaders: list[str] = []
        self.stop_event: asyncio.Event | None = None
        self.leading_cancelled = False
        self.recorder = FakeRecorder()
        cfg = LeaderElectionConfig(NS, NAME, identity, callbacks=LeaderCallbacks(
            on_started_leading=self._lead, on_stopped_leading=self._stopped,
            on_new_leader=self.new_leaders.append), event_recorder=self.recorder, **config)
        self.le = LeaderElector(cs, cfg, clock=clock, rng=_ZeroRandom())
        self.task = asyncio.ensure_future(self.le.run())

    async def _lead(self, stop: asyncio.Event) -> None:
        self.started += 1
        self.stop_event = stop
        try:
            await asyncio.Event().wait()      # "run controllers" until cancelled
        except asyncio.CancelledError:
            self.leading_cancelled = True
            raise

    def _stopped(self) -> None:
        self.stopped_at.append(self.clock.now())

    async def cancel(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def env(clock: FakeClock):
    api = APIServer(new_storage("memory"), clock=clock)
    await api.bootstrap()
    transport = FlakyTransport(InProcessTransport(api))
    cs = Clientset(transport)
    candidates: list[Candidate] = []

    def start(identity: str, **config: Any) -> Candidate:
        c = Candidate(cs, clock, identity, **config)
        candidates.append(c)
        return c

    yield cs, transport, start
    for c in candidates:
        await c.cancel()


async def settle(n: int = 30) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def advance(clock: FakeClock, seconds: float, until: Any = None, step: float = 0.5) -> bool:
    """Move the clock in steps, letting tasks run after each; stop early once until() holds."""
    for _ in range(int(round(seconds / step))):
        if until is not None and until():
            return True
        clock.step(step)
        await settle()
    return until() if until is not None else True


async def lease(cs: Clientset) -> Any:
    return (await cs.coordination_v1().leases(NS).get(NAME)).spec


async def test_leader_acquires_free_lease_and_renews(env, clock):
    cs, _, start = env
    a = start("a")
    await settle()
    assert a.le.is_leader() and a.le.get_leader() == "a"
    assert a.started == 1 and a.new_leaders == ["a"]
    spec = await lease(cs)
    assert (spec.holder_identity, spec.lease_duration_seconds, spec.lease_transitions) == ("a", 15, 0)
    assert spec.acquire_time == spec.renew_time == rfc3339_micro(START) == "2020-09-13T12:26:40.000000Z"
    await advance(clock, 2)
    spec = await lease(cs)
    assert spec.acquire_time == rfc3339_micro(START)          # renewal keeps acquireTime
    assert spec.renew_time == rfc3339_micro(START + 2)
    assert a.recorder.events == ["Normal LeaderElection a became leader"]


async def test_second_candidate_waits_while_lease_is_renewed(env, clock):
    cs, _, start = env
    a = start("a")
    await settle()
    b = start("b")
    await advance(clock, 60)
    assert a.le.is_leader() and not b.le.is_leader()
    assert b.le.get_leader() == "a" and b.new_leaders == ["a"]
    assert b.started == 0
    spec = await lease(cs)
    assert (spec.holder_identity, spec.lease_transitions) == ("a", 0)
    assert spec.renew_time == rfc3339_micro(START + 60)


async def test_takeover_after_leader_stops_renewing(env, clock):
    cs, _, start = env
    a = start("a")
    await settle()
    b = start("b")
    await advance(clock, 10)
    await a.cancel()                          # no release: the lease just stops being renewed
    assert a.stopped_at == [START + 10] and a.leading_cancelled and a.stop_event.is_set()
    last_renew = parse_rfc3339((await lease(cs)).renew_time)
    assert await advance(clock, 30, until=b.le.is_leader)
    took_over = clock.now()
    # B counts lease_duration from when it saw the last renewal (at most one retry later)
    assert last_renew + 15 <= took_over <= last_renew + 15 + 2 + 0.5
    spec = await lease(cs)
    assert (spec.holder_identity, spec.lease_transitions) == ("b", 1)
    assert spec.acquire_time == spec.renew_time == rfc3339_micro(took_over)
    assert b.started == 1 and b.new_leaders == ["a", "b"]


async def test_renew_failure_past_renew_deadline_stops_leading(env, clock):
    cs, transport, start = env
    a = start("a")
    await settle()                            # acquired and renewed at +0
    transport.fail_leases = True
    before = transport.lease_requests
    assert await advance(clock, 20, until=lambda: bool(a.stopped_at))
    # renewal tries at +2, +4, +6, +8, +10 all fail; the 10 s deadline from +2 ends it at +12
    assert a.stopped_at == [START + 12]
    assert a.task.done() and a.leading_cancelled and a.stop_event.is_set()
    assert transport.lease_requests - before == 5 * 2      # each try: optimistic PUT, then GET
    assert a.recorder.events == ["Normal LeaderElection a became leader",
                                 "Normal LeaderElection a stopped leading"]
    transport.fail_leases = False
    spec = await lease(cs)
    assert (spec.holder_identity, spec.renew_time) == ("a", rfc3339_micro(START))


async def test_release_on_cancel_lets_the_next_candidate_in_at_once(env, clock):
    cs, _, start = env
    a = start("a", release_on_cancel=True)
    await settle()
    b = start("b")
    await advance(clock, 4)
    await a.cancel()
    spec = await lease(cs)
    assert (spec.holder_identity, spec.lease_duration_seconds) == ("", 1)
    assert await advance(clock, 5, until=b.le.is_leader)
    assert clock.now() <= START + 4 + 2 + 0.5       # B's next try, not 15 s later
    spec = await lease(cs)
    assert (spec.holder_identity, spec.lease_transitions) == ("b", 1)


async def test_two_candidates_racing_for_a_free_lease_elect_one(env, clock):
    cs, _, start = env
    a, b = start("a"), start("b")
    await advance(clock, 10)
    assert [a.le.is_leader(), b.le.is_leader()].count(True) == 1
    assert a.started + b.started == 1
    assert (await lease(cs)).lease_transitions == 0


async def test_lease_lock_update_is_conditional_on_resource_version(env, clock):
    cs, _, _ = env
    l1 = LeaseLock(NS, "lock", cs, "a")
    l2 = LeaseLock(NS, "lock", cs, "b")
    with pytest.raises(errors.NotFound):
        await l1.get()
    await l1.create(LeaderElectionRecord(holder_identity="a", lease_duration_seconds=15, renew_time=START))
    rec, raw = await l2.get()
    assert rec.holder_identity == "a" and rec.renew_time == START
    await l1.update(LeaderElectionRecord(holder_identity="a", lease_duration_seconds=15, renew_time=START + 2))
    with pytest.raises(errors.Conflict):
        await l2.update(LeaderElectionRecord(holder_identity="b", lease_duration_seconds=15))
    rec2, raw2 = await l2.get()
    assert raw2 != raw and rec2.renew_time == START + 2


def test_record_raw_form_ignores_sub_second_changes():
    r1 = LeaderElectionRecord(holder_identity="a", renew_time=START + 0.25)
    r2 = LeaderElectionRecord(holder_identity="a", renew_time=START + 0.75)
    r3 = LeaderElectionRecord(holder_identity="a", renew_time=START + 1.0)
    assert r1.raw() == r2.raw() != r3.raw()


@pytest.mark.parametrize(("durations", "msg"), [
    ((10.0, 10.0, 2.0), "leaseDuration must be greater than renewDeadline"),
    ((15.0, 2.4, 2.0), "renewDeadline must be greater than retryPeriod"),
])
def test_config_validation(durations, msg):
    ld, rd, rp = durations
    cfg = LeaderElectionConfig(NS, NAME, "a", lease_duration=ld, renew_deadline=rd, retry_period=rp,
                               callbacks=LeaderCallbacks(on_started_leading=lambda stop: asyncio.sleep(0),
                                                         on_stopped_leading=lambda: None))
    with pytest.raises(ValueError, match=msg):
        LeaderElector(None, cfg)


async def test_master_status_metric_follows_leadership(env, clock):
    """leader_election_master_status{name=<lease>}: 1 once acquired, 0 once a renewal fails
    (upstream: leaderOn in acquire, leaderOff in renew); renewals through GET + PUT count on
    leader_election_slowpath_total."""
    from prometheus_client import REGISTRY
    cs, transport, start = env
    a = start("a")
    await settle()
    assert REGISTRY.get_sample_value("leader_election_master_status", {"name": NAME}) == 1
    transport.fail_leases = True
    slow = REGISTRY.get_sample_value("leader_election_slowpath_total", {"name": NAME}) or 0
    assert await advance(clock, 20, until=lambda: bool(a.stopped_at))
    assert REGISTRY.get_sample_value("leader_election_master_status", {"name": NAME}) == 0
    assert (REGISTRY.get_sample_value("leader_election_slowpath_total", {"name": NAME}) or 0) == slow  # GETs failed
