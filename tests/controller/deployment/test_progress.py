"""progress.go: syncRolloutStatus conditions and requeueStuckDeployment, on a fake clock.

Cases follow upstream's progress_test.go (TestSyncRolloutStatus, TestRequeueStuckDeployment).
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import apps_v1
from kubeplane.controller.deployment import progress
from kubeplane.controller.deployment.util import deployment_util as du
from kubeplane.utils.clock import rfc3339

from deployment_testutil import NOW, Fixture, deployment_dict, new_fixture, rs

BEFORE = NOW - 100


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


def _cond(t: str, status: str, reason: str, at: float = BEFORE, msg: str = "") -> apps_v1.DeploymentCondition:
    return apps_v1.DeploymentCondition(type=t, status=status, reason=reason, message=msg,
                                       last_update_time=rfc3339(at), last_transition_time=rfc3339(at))


def _rs_with(name: str, replicas: int, available: int) -> apps_v1.ReplicaSet:
    r = rs(name, replicas, None, NOW)
    r.status = apps_v1.ReplicaSetStatus(replicas=replicas, ready_replicas=available, available_replicas=available)
    return r


async def _run(f: Fixture, *, replicas: int, pds: int | None, status: tuple[int, int, int, int],
               conditions: list[apps_v1.DeploymentCondition], new: apps_v1.ReplicaSet | None,
               olds: list[apps_v1.ReplicaSet]) -> tuple[apps_v1.DeploymentCondition | None, bool]:
    """Run sync_rollout_status; the resulting Progressing condition and whether status was written."""
    [d] = await f.fake.seed(deployment_dict("foo", replicas, progressDeadlineSeconds=pds or 600))
    d.spec.progress_deadline_seconds = pds
    d.status = apps_v1.DeploymentStatus(observed_generation=d.metadata.generation, replicas=status[0] or None,
                                        updated_replicas=status[1] or None, ready_replicas=status[2] or None,
                                        available_replicas=status[3] or None, conditions=conditions or None,
                                        unavailable_replicas=max(replicas - status[3], 0) or None,
                                        terminating_replicas=0)
    await progress.sync_rollout_status(f.dc, [*olds, new], new, d)
    writes = f.writes("update", "deployments", "status")
    st = types.from_dict(writes[0]["status"], apps_v1.DeploymentStatus) if writes else d.status
    return du.get_deployment_condition(st, "Progressing"), bool(writes)


def _times(c: apps_v1.DeploymentCondition | None) -> tuple[Any, ...]:
    assert c is not None
    return c.status, c.reason, c.last_update_time, c.last_transition_time


async def test_no_deadline_removes_progressing(f: Fixture) -> None:
    cond, written = await _run(f, replicas=1, pds=None, status=(1, 1, 1, 1),
                               conditions=[_cond("Progressing", "True", du.REPLICA_SET_UPDATED_REASON)],
                               new=_rs_with("foo-new", 1, 1), olds=[])
    assert cond is None and written


async def test_completed_single_rs_is_not_reestimated(f: Fixture) -> None:
    """A resync of a completed rollout keeps the condition and its times."""
    complete = _cond("Progressing", "True", du.NEW_RS_AVAILABLE_REASON)
    cond, _ = await _run(f, replicas=1, pds=600, status=(1, 1, 1, 1), conditions=[complete],
                         new=_rs_with("foo-new", 1, 1), olds=[])
    assert _times(cond) == ("True", du.NEW_RS_AVAILABLE_REASON, rfc3339(BEFORE), rfc3339(BEFORE))


async def test_progress_refreshes_last_update_time_only(f: Fixture) -> None:
    cond, _ = await _run(f, replicas=2, pds=600, status=(3, 1, 2, 2),
                         conditions=[_cond("Progressing", "True", du.REPLICA_SET_UPDATED_REASON)],
                         new=_rs_with("foo-new", 2, 1), olds=[_rs_with("foo-old", 1, 1)])     # updated 1 -> 2
    assert _times(cond) == ("True", du.REPLICA_SET_UPDATED_REASON, rfc3339(NOW), rfc3339(BEFORE))
    assert cond.message == 'ReplicaSet "foo-new" is progressing.'


async def test_progress_after_timeout_gets_new_times(f: Fixture) -> None:
    cond, _ = await _run(f, replicas=2, pds=600, status=(3, 1, 2, 2),
                         conditions=[_cond("Progressing", "False", du.TIMED_OUT_REASON)],
                         new=_rs_with("foo-new", 2, 1), olds=[_rs_with("foo-old", 1, 1)])
    assert _times(cond) == ("True", du.REPLICA_SET_UPDATED_REASON, rfc3339(NOW), rfc3339(NOW))


async def test_progress_without_condition_creates_it(f: Fixture) -> None:
    cond, _ = await _run(f, replicas=2, pds=600, status=(3, 1, 2, 2), conditions=[],
                         new=_rs_with("foo-new", 2, 1), olds=[_rs_with("foo-old", 1, 1)])
    assert _times(cond) == ("True", du.REPLICA_SET_UPDATED_REASON, rfc3339(NOW), rfc3339(NOW))


async def test_complete_keeps_transition_time_of_true(f: Fixture) -> None:
    cond, _ = await _run(f, replicas=2, pds=600, status=(3, 1, 2, 2),
                         conditions=[_cond("Progressing", "True", du.REPLICA_SET_UPDATED_REASON)],
                         new=_rs_with("foo-new", 2, 2), olds=[])
    assert _times(cond) == ("True", du.NEW_RS_AVAILABLE_REASON, rfc3339(NOW), rfc3339(BEFORE))
    assert cond.message == 'ReplicaSet "foo-new" has successfully progressed.'


async def test_complete_after_timeout_gets_new_times(f: Fixture) -> None:
    cond, _ = await _run(f, replicas=2, pds=600, status=(3, 1, 2, 2),
                         conditions=[_cond("Progressing", "False", du.TIMED_OUT_REASON)],
                         new=_rs_with("foo-new", 2, 2), olds=[])
    assert _times(cond) == ("True", du.NEW_RS_AVAILABLE_REASON, rfc3339(NOW), rfc3339(NOW))


async def test_complete_with_zero_replicas_and_no_new_rs(f: Fixture) -> None:
    cond, _ = await _run(f, replicas=0, pds=600, status=(0, 0, 0, 0), conditions=[], new=None, olds=[])
    assert cond is not None and cond.reason == du.NEW_RS_AVAILABLE_REASON
    assert cond.message == 'Deployment "foo" has successfully progressed.'


async def test_stuck_past_deadline_times_out(f: Fixture) -> None:
    cond, _ = await _run(f, replicas=2, pds=60, status=(2, 1, 1, 1),
                         conditions=[_cond("Progressing", "True", du.REPLICA_SET_UPDATED_REASON, at=NOW - 61)],
                         new=_rs_with("foo-new", 1, 0), olds=[_rs_with("foo-old", 1, 1)])
    assert _times(cond) == ("False", du.TIMED_OUT_REASON, rfc3339(NOW), rfc3339(NOW))
    assert cond.message == 'ReplicaSet "foo-new" has timed out progressing.'


async def test_already_timed_out_is_unchanged(f: Fixture) -> None:
    cond, _ = await _run(f, replicas=2, pds=60, status=(2, 1, 1, 1),
                         conditions=[_cond("Progressing", "False", du.TIMED_OUT_REASON, at=NOW - 600)],
                         new=_rs_with("foo-new", 1, 0), olds=[_rs_with("foo-old", 1, 1)])
    assert _times(cond) == ("False", du.TIMED_OUT_REASON, rfc3339(NOW - 600), rfc3339(NOW - 600))


async def test_replica_failure_is_copied_and_removed(f: Fixture) -> None:
    """ReplicaFailure of the new RS wins; times are its lastTransitionTime; removed when gone."""
    new, old = _rs_with("foo-new", 2, 0), _rs_with("foo-old", 1, 1)
    fail = apps_v1.ReplicaSetCondition(type="ReplicaFailure", status="True", reason="FailedCreate",
                                       message="quota", last_transition_time=rfc3339(BEFORE))
    old.status.conditions = [apps_v1.ReplicaSetCondition(type="ReplicaFailure", status="True", reason="FailedDelete",
                                                         message="old", last_transition_time=rfc3339(BEFORE))]
    new.status.conditions = [fail]
    [d] = await f.fake.seed(deployment_dict("foo", 2))
    await progress.sync_rollout_status(f.dc, [old, new], new, d)
    st = types.from_dict(f.writes("update", "deployments", "status")[0]["status"], apps_v1.DeploymentStatus)
    c = du.get_deployment_condition(st, "ReplicaFailure")
    assert (c.reason, c.message, c.last_update_time, c.last_transition_time) == \
        ("FailedCreate", "quota", rfc3339(BEFORE), rfc3339(BEFORE))
    new.status.conditions = None
    f.fake.clear_actions()
    await progress.sync_rollout_status(f.dc, [old, new], new, await f.get_deployment())
    st = types.from_dict(f.writes("update", "deployments", "status")[0]["status"], apps_v1.DeploymentStatus)
    assert du.get_deployment_condition(st, "ReplicaFailure").reason == "FailedDelete"   # then the old one's


# --- requeueStuckDeployment --------------------------------------------------------------------------

LAST_UPDATE = 1_463_770_140.0          # 2016-05-20T18:49:00Z


@pytest.mark.parametrize("pds,cond,status,now,expected", [
    pytest.param(None, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 1), LAST_UPDATE + 30, -1, id="nil deadline"),
    pytest.param(du.MAX_INT32, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 1), LAST_UPDATE + 30, -1, id="infinite"),
    pytest.param(60, None, (3, 1), LAST_UPDATE + 30, -1, id="no progressing condition"),
    pytest.param(60, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 3), LAST_UPDATE + 30, -1, id="complete"),
    pytest.param(60, (du.TIMED_OUT_REASON, "False"), (3, 1), LAST_UPDATE + 30, -1, id="already failed"),
    pytest.param(60, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 1), LAST_UPDATE + 30, 30, id="stuck - 30s"),
    pytest.param(60, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 1), LAST_UPDATE + 59, 1, id="stuck - 1s"),
    # Upstream uses 1 ns; float epoch seconds resolve about 0.2 us, so 1 us stands in.
    pytest.param(60, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 1), LAST_UPDATE + 59.000001, 0,
                 id="less than a second => now"),
    pytest.param(60, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 1), LAST_UPDATE + 60, 0, id="now"),
    pytest.param(60, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 1), LAST_UPDATE + 61, 0, id="1s after deadline"),
    pytest.param(60, (du.REPLICA_SET_UPDATED_REASON, "True"), (3, 1), LAST_UPDATE + 120, 0, id="60s after deadline"),
])
async def test_requeue_stuck_deployment(f: Fixture, pds: int | None, cond: tuple[str, str] | None,
                                        status: tuple[int, int], now: float, expected: float) -> None:
    """Upstream: TestRequeueStuckDeployment (deadline 60 s, last update 18:49:00)."""
    f.clock.set_time(now)
    d = apps_v1.Deployment(metadata=types.from_dict({"name": "foo", "namespace": "default", "generation": 1},
                                                    type(rs("x", 0, None, 0).metadata)),
                           spec=apps_v1.DeploymentSpec(replicas=3, progress_deadline_seconds=pds))
    conditions = [_cond("Progressing", cond[1], cond[0], at=LAST_UPDATE)] if cond else None
    d.status = apps_v1.DeploymentStatus(conditions=conditions)
    new_status = apps_v1.DeploymentStatus(replicas=status[0], updated_replicas=status[1], available_replicas=status[1],
                                          observed_generation=1)
    got = progress.requeue_stuck_deployment(f.dc, d, new_status)
    assert got == pytest.approx(expected, abs=1e-5)
    key = f.dc.key_of(d)
    if expected == -1:
        assert f.dc.queue.len() == 0 and f.dc.queue._num_waiting() == 0
    elif expected == 0:
        assert f.dc.queue.num_requeues(key) == 1               # rate-limited: 5 ms later
        f.clock.step(0.005)
        assert f.dc.queue.len() == 1
    else:
        f.clock.step(expected + 1 - 0.01)                      # one extra second against skew (#39785)
        assert f.dc.queue.len() == 0
        f.clock.step(0.02)
        assert f.dc.queue.len() == 1


async def test_unchanged_status_requeues_for_the_deadline(f: Fixture) -> None:
    """No write when nothing changed, but a requeue at lastUpdateTime + deadline + 1 s."""
    progressing = _cond("Progressing", "True", du.REPLICA_SET_UPDATED_REASON, at=NOW - 100)
    unavailable = _cond("Available", "False", du.MINIMUM_REPLICAS_UNAVAILABLE)
    cond, written = await _run(f, replicas=2, pds=600, status=(2, 1, 1, 1), conditions=[progressing, unavailable],
                               new=_rs_with("foo-new", 1, 0), olds=[_rs_with("foo-old", 1, 1)])
    assert not written and f.fake.verbs() == []
    f.clock.step(500)
    assert f.dc.queue.len() == 0
    f.clock.step(1.5)
    assert f.dc.queue.len() == 1
