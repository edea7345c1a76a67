"""A kubelet restart on the sim runtime is invisible to pods: a new Kubelet (new runtime, as after
kill -9 of `kubeplane up`) takes every pod up from its recorded status, through the fake
clientset on a fake clock.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from conftest import _Broadcaster
from kubelet_testutil import advance, settle

from kubeplane.api import errors
from kubeplane.api.types import core_v1, from_dict, to_dict
from kubeplane.testing.fake import FakeClientset
from kubeplane.kubelet.kubelet import Kubelet
from kubeplane.kubelet.runtime import EXITED, RUNNING
from kubeplane.kubelet.runtime.sim import SimRuntime
from kubeplane.kubelet.runtime.sim.lifecycle import Delay, Stage, load_profile
from kubeplane.kubelet.runtime.sim.restore import restored_attempts, restored_sandbox
from kubeplane.utils.clock import FakeClock

NGINX = {"name": "nginx", "image": "nginx"}


@dataclass
class Restarts:
    """One fake API server and clock; kubelets started and killed on them one after another."""

    clock: FakeClock
    cs: FakeClientset
    profile: list[Stage]
    kubelet: Kubelet | None = None
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    async def start(self) -> Kubelet:
        self.events = []
        runtime = SimRuntime(profile=self.profile, clock=self.clock)
        self.kubelet = Kubelet(self.cs, node_names=["node-0", "node-1"], runtime=runtime, clock=self.clock,
                               broadcaster=_Broadcaster(self.events))
        self.task = asyncio.ensure_future(self.kubelet.run())
        await settle(300)
        return self.kubelet

    async def kill(self) -> None:
        """The process is gone: its tasks, timers and memory (nothing is written on the way out)."""
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    async def create(self, name: str, node: str = "node-0", **spec: Any) -> None:
        spec.setdefault("containers", [dict(NGINX)])
        await self.pods.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                "spec": {"nodeName": node, **spec}})

    @property
    def pods(self) -> Any:
        return self.cs.core_v1().pods("default")

    async def snapshot(self) -> dict[str, dict[str, Any]]:
        return {p.metadata.name: to_dict(p) for p in (await self.pods.list()).items}


def delays(profile: str, **by_stage: int) -> list[Stage]:
    """The profile with every delay 0 but the named stages' (milliseconds)."""
    return [replace(s, delay=Delay(by_stage.get(s.name.replace("-", "_"), 0))) for s in load_profile(profile)]


@pytest.fixture
async def restarts() -> AsyncIterator[Any]:
    made: list[Restarts] = []

    async def make(profile: list[Stage]) -> Restarts:
        clock = FakeClock()
        r = Restarts(clock, await FakeClientset.new(clock=clock), profile)
        made.append(r)
        return r
    yield make
    for r in made:
        if r.task is not None:
            await r.kill()


async def test_running_pods_keep_status_ids_ips_and_readiness_with_no_write_and_no_event(restarts: Any) -> None:
    r = await restarts(delays("default"))
    await r.start()
    probe = {"exec": {"command": ["true"]}, "periodSeconds": 5}
    await r.create("plain")
    await r.create("init", initContainers=[{"name": "setup", "image": "busybox"}])
    await r.create("probed", containers=[{**NGINX, "readinessProbe": probe, "startupProbe": probe}])
    await r.create("host", node="node-1", hostNetwork=True)
    await advance(r.clock, 3)
    before = await r.snapshot()
    assert all(p["status"]["phase"] == "Running" for p in before.values())
    assert all(c["status"] == "True" for p in before.values() for c in p["status"]["conditions"])
    await r.kill()
    r.clock.step(60)                                       # down for a minute
    kl = await r.start()
    await advance(r.clock, 30)                              # probes run, stages would fire, ...
    assert await r.snapshot() == before                     # same resourceVersions: nothing written
    assert kl.status_manager.writes == 0 and r.events == []
    # the IPs in use are known again: a new pod on node-0 gets one none of them has
    await r.create("new")
    await advance(r.clock, 1)
    new = (await r.pods.get("new")).status
    assert new.phase == "Running" and new.pod_ip not in {p["status"]["podIP"] for p in before.values()}
    assert [e[2] for e in r.events] == ["Pulled", "Created", "Started"]


async def test_a_pod_mid_start_goes_on_and_starts_once(restarts: Any) -> None:
    r = await restarts(delays("default", container_pulled=5000))
    await r.start()
    await r.create("slow")
    await advance(r.clock, 1)
    p = await r.pods.get("slow")
    assert p.status.phase == "Pending" and p.status.pod_ip            # sandbox up, pulling
    ip = p.status.pod_ip
    await r.kill()
    kl = await r.start()
    await advance(r.clock, 6)
    p = await r.pods.get("slow")
    assert p.status.phase == "Running" and p.status.pod_ip == ip      # same sandbox, same IP
    assert [e[2] for e in r.events] == ["Pulled", "Created", "Started"]
    assert kl.status_manager.writes == 1


async def test_restart_counts_and_last_state_carry_on_in_a_crash_loop(restarts: Any) -> None:
    r = await restarts(delays("crash-loop", container_crashes=2000))
    await r.start()
    await r.create("crashy")
    await advance(r.clock, 5)              # crashed at 2 (restarted at once) and 4: back-off until 14
    cs = (await r.pods.get("crashy")).status.container_statuses[0]
    assert (cs.restart_count, cs.state.waiting.reason) == (1, "CrashLoopBackOff")
    crashed = cs.last_state.terminated
    await r.kill()
    await r.start()
    await advance(r.clock, 1)              # the back-off lived in memory: restarted at once
    cs = (await r.pods.get("crashy")).status.container_statuses[0]
    assert cs.restart_count == 2 and cs.state.running is not None
    assert cs.last_state.terminated == crashed                        # the crash before the restart
    assert [e[2] for e in r.events] == ["Pulled", "Created", "Started"]


async def test_a_pod_deleted_while_the_kubelet_was_down_finishes_terminating(restarts: Any) -> None:
    r = await restarts(delays("default"))
    await r.start()
    await r.create("doomed")
    await advance(r.clock, 1)
    await r.kill()
    await r.pods.delete("doomed")                                    # graceful: deletionTimestamp
    assert (await r.pods.get("doomed")).metadata.deletion_timestamp
    await r.start()
    await advance(r.clock, 2)
    with pytest.raises(errors.NotFound):
        await r.pods.get("doomed")
    assert r.events == []


async def test_a_finished_pod_keeps_its_phase_and_ip(restarts: Any) -> None:
    r = await restarts(delays("crash-loop", container_crashes=1000))
    await r.start()
    await r.create("job", restartPolicy="Never")
    await advance(r.clock, 3)
    before = await r.snapshot()
    assert before["job"]["status"]["phase"] == "Failed" and before["job"]["status"]["podIP"]
    await r.kill()
    kl = await r.start()
    await advance(r.clock, 10)
    assert await r.snapshot() == before and kl.status_manager.writes == 0 and r.events == []


def status_pod(container_status: dict[str, Any], **status: Any) -> core_v1.Pod:
    return from_dict({"metadata": {"name": "p", "uid": "u"},
                      "spec": {"nodeName": "n", "containers": [dict(NGINX)]},
                      "status": {"containerStatuses": [{"name": "nginx", "image": "nginx", **container_status}],
                                 **status}}, core_v1.Pod)


ID = "kubeplane-sim://"
TERMINATED = {"terminated": {"exitCode": 1, "reason": "Error", "containerID": ID + "a1",
                             "startedAt": "2020-01-01T00:00:00Z", "finishedAt": "2020-01-01T00:00:02Z"}}


@pytest.mark.parametrize(("container_status", "expected"), [
    pytest.param({"restartCount": 0, "containerID": ID + "b2", "ready": True,
                  "state": {"running": {"startedAt": "2020-01-01T00:00:03Z"}}},
                 [("b2", 0, RUNNING, "Success")], id="running-ready"),
    pytest.param({"restartCount": 0, "containerID": ID + "b2", "ready": False,
                  "state": {"running": {"startedAt": "2020-01-01T00:00:03Z"}}},
                 [("b2", 0, RUNNING, None)], id="running-unready-left-to-the-stages"),
    pytest.param({"restartCount": 3, "containerID": ID + "b2", "state": {"running": {}}, "lastState": TERMINATED},
                 [("a1", 2, EXITED, None), ("b2", 3, RUNNING, None)], id="running-after-a-crash"),
    pytest.param({"restartCount": 3, "containerID": ID + "a1", "lastState": TERMINATED,
                  "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                 [("a1", 3, EXITED, None)], id="crash-loop-back-off-last-state-is-the-latest"),
    pytest.param({"restartCount": 3, "lastState": TERMINATED, "state": {"waiting": {"reason": "ContainerCreating"}}},
                 [("a1", 2, EXITED, None)], id="being-recreated-last-state-is-the-previous"),
    pytest.param({"restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}, [], id="never-started"),
    pytest.param({"restartCount": 0, "containerID": "kubeplane-process://c3", "state": {"running": {}}}, [],
                 id="another-runtimes-container"),
])
def test_restored_attempts_table(container_status: dict[str, Any], expected: list[Any]) -> None:
    got = [(a.oid, a.attempt, a.status["state"], a.status.get("readiness"))
           for a in restored_attempts(status_pod(container_status), ID)]
    assert got == expected


def test_restored_sandbox() -> None:
    ready = [{"type": "PodReadyToStartContainers", "status": "True"}]
    waiting = {"state": {"waiting": {"reason": "ContainerCreating"}}}
    assert restored_sandbox(status_pod(waiting, podIP="10.0.0.5", conditions=ready), ID) == (True, "10.0.0.5")
    assert restored_sandbox(status_pod(waiting), ID) is None                      # never got one
    torn_down = [{"type": "PodReadyToStartContainers", "status": "False"}]
    done = {"state": TERMINATED, "containerID": ID + "a1"}
    assert restored_sandbox(status_pod(done, podIP="10.0.0.5", conditions=torn_down), ID) == (False, "10.0.0.5")


async def test_a_restored_readiness_result_holds_until_the_probes_say_otherwise() -> None:
    from kubeplane.kubelet.prober.worker import READINESS, STARTUP, ProbeSpec, Worker
    clock = FakeClock()
    results: list[bool] = []
    probes: list[str] = []

    def probe(cid: str) -> str:
        probes.append(cid)
        return "Failure"
    spec = ProbeSpec(initial_delay=0, period=1, success_threshold=1, failure_threshold=3)
    ready = Worker("c1", spec, clock.now(), clock=clock, probe=probe, on_result=lambda cid, ok: results.append(ok),
                   probe_type=READINESS, initial=True)
    assert ready.ready is True
    ready.start()
    await advance(clock, 1.5)
    assert results == [] and ready.ready is True and len(probes) == 2        # below the threshold
    await advance(clock, 1)
    assert results == [False] and ready.ready is False
    ready.stop()
    started = Worker("c2", spec, clock.now(), clock=clock, probe=probe, on_result=lambda cid, ok: results.append(ok),
                     probe_type=STARTUP, initial=True)
    started.start()
    await advance(clock, 5)
    assert "c2" not in probes and started.task is not None and started.task.done()   # started once: done


async def test_a_restarted_kubelet_keeps_its_nodes_transition_times(restarts: Any) -> None:
    r = await restarts(delays("default"))
    await r.start()
    ready_since = {n.metadata.name: [(c.type, c.last_transition_time) for c in n.status.conditions]
                   for n in (await r.cs.core_v1().nodes().list()).items}
    await r.kill()
    r.clock.step(30)
    await r.start()
    nodes = (await r.cs.core_v1().nodes().list()).items
    assert {n.metadata.name: [(c.type, c.last_transition_time) for c in n.status.conditions]
            for n in nodes} == ready_since
    ready = next(c for c in nodes[0].status.conditions if c.type == "Ready")
    assert ready.last_heartbeat_time != ready.last_transition_time          # but a fresh heartbeat


async def test_started_is_recorded_only_once_the_status_shows_it(restarts: Any) -> None:
    """The status is what a restart resumes from: a Started event recorded before the status
    showing the container running would be recorded again by the next kubelet."""
    r = await restarts(delays("default"))
    kl = await r.start()

    class Stuck:                                 # the process dies before it writes the status
        def core_v1(self) -> Any:
            return self

        def pods(self, namespace: str) -> Any:
            return self

        async def patch(self, *args: Any, **kwargs: Any) -> None:
            await asyncio.Event().wait()
    kl.status_manager.clientset = Stuck()        # type: ignore[assignment]
    await r.create("web")
    await advance(r.clock, 1)
    assert "Started" not in [e[2] for e in r.events]                  # held back
    assert (await r.pods.get("web")).status.container_statuses is None
    await r.kill()
    await r.start()
    await advance(r.clock, 1)
    assert (await r.pods.get("web")).status.container_statuses[0].state.running is not None
    assert [e[2] for e in r.events] == ["Pulled", "Created", "Started"]
