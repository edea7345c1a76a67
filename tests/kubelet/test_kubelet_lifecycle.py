"""Pods on simulated nodes, end to end through a real in-process API server, on a FakeClock."""
from __future__ import annotations

from dataclasses import replace

import pytest
from kubernetes import client as k8s

from kubeplane.kubelet.runtime.sim.lifecycle import Delay, load_profile

from kubelet_testutil import advance

APP = {"name": "nginx", "image": "nginx"}


def pod(name: str, *, containers=None, init=None, restart: str | None = None, **spec) -> dict:
    s = {"containers": containers or [dict(APP)], **spec}
    if init:
        s["initContainers"] = init
    if restart:
        s["restartPolicy"] = restart
    return {"metadata": {"name": name}, "spec": s}


def conditions(p) -> list[tuple[str, str]]:
    return [(c.type, c.status) for c in p.status.conditions or ()]


async def test_pod_goes_pending_running_ready_with_upstream_fields(make_env) -> None:
    env = await make_env("default", zero=True)
    await env.create_pod(pod("web", init=[{"name": "setup", "image": "busybox"}]))
    await advance(env.clock, 1)
    p = await env.pod("web")
    assert p.status.phase == "Running"
    assert conditions(p) == [("PodReadyToStartContainers", "True"), ("Initialized", "True"), ("Ready", "True"),
                             ("ContainersReady", "True"), ("PodScheduled", "True")]
    assert p.status.host_ip == "172.18.0.2" and p.status.pod_ip == "10.244.0.2"
    assert p.status.start_time and p.status.qos_class == "BestEffort"
    (cs,) = p.status.container_statuses
    assert (cs.name, cs.ready, cs.started, cs.restart_count) == ("nginx", True, True, 0)
    assert cs.image == "docker.io/library/nginx:latest" and cs.image_id.startswith("docker.io/library/nginx@sha256:")
    assert cs.container_id.startswith("kubeplane-sim://") and len(cs.container_id) == len("kubeplane-sim://") + 64
    assert cs.state.running.started_at
    (ics,) = p.status.init_container_statuses
    assert ics.state.terminated.exit_code == 0 and ics.state.terminated.reason == "Completed" and ics.ready
    # the official client decodes our JSON (its models reject a missing required field)
    raw = await env.cs.transport.request("GET", "/api/v1/namespaces/default/pods/web")
    decoded = k8s.ApiClient().deserialize(raw.body.decode(), "V1Pod", "application/json")
    assert decoded.status.container_statuses[0].state.running is not None
    assert [c.type for c in decoded.status.conditions][2] == "Ready"
    assert [e[2] for e in env.events if e[0] == "spec.containers{nginx}"] == ["Pulled", "Created", "Started"]


async def test_a_sync_steps_through_what_completes_at_once_and_is_not_repeated(make_env) -> None:
    """With zero delays the sandbox is ready, the init container done and the app container
    running within the first sync (upstream's SyncPod also creates the sandbox and starts
    containers in one pass); the runtime changes that sync made itself don't sync again."""
    env = await make_env("default", zero=True)
    await env.create_pod(pod("web", init=[{"name": "setup", "image": "busybox"}]))
    await advance(env.clock, 1)
    p = await env.pod("web")
    assert p.status.phase == "Running" and conditions(p)[2] == ("Ready", "True")
    assert env.kubelet.pod_workers.syncs == 1
    assert env.kubelet.status_manager.writes == 1


async def test_pending_status_while_containers_are_created(make_env) -> None:
    slow = [replace(s, delay=Delay(5000)) if s.name == "container-pulled" else replace(s, delay=Delay())
            for s in load_profile("default")]
    env = await make_env(slow)
    await env.create_pod(pod("web"))
    await advance(env.clock, 1)
    p = await env.pod("web")
    assert p.status.phase == "Pending"
    assert conditions(p) == [("PodReadyToStartContainers", "True"), ("Initialized", "True"), ("Ready", "False"),
                             ("ContainersReady", "False"), ("PodScheduled", "True")]
    ready = p.status.conditions[2]
    assert (ready.reason, ready.message) == ("ContainersNotReady", "containers with unready status: [nginx]")
    cs = p.status.container_statuses[0]
    assert cs.state.waiting.reason == "ContainerCreating" and cs.image_id == "" and cs.ready is False
    await advance(env.clock, 5)
    assert (await env.pod("web")).status.phase == "Running"


async def test_graceful_deletion_stops_containers_then_deletes_with_uid_precondition(make_env) -> None:
    env = await make_env("default", zero=True)
    created = await env.create_pod(pod("web"))
    await advance(env.clock, 1)
    env.cs.clear_actions()
    await env.cs.core_v1().pods("default").delete("web", grace_period_seconds=30)
    await advance(env.clock, 1)
    with pytest.raises(Exception, match="not found"):
        await env.pod("web")
    acts = [a for a in env.cs.actions if a.verb in ("patch", "delete")]
    # The deletion bumped the pod's generation (upstream's BeforeDelete): the kubelet reports
    # it observed (status.observedGeneration), then the final status.
    assert acts[1].verb == "patch" and acts[1].body["status"] == {"observedGeneration": 2}
    final_status = next(a for a in acts if a.verb == "patch" and "containerStatuses" in a.body["status"])
    cs = final_status.body["status"]["containerStatuses"][0]
    assert cs["state"]["terminated"]["exitCode"] == 0 and cs["ready"] is False
    assert final_status.body["status"]["phase"] == "Succeeded"
    final = acts[-1]
    assert final.verb == "delete" and final.body["gracePeriodSeconds"] == 0
    assert final.body["preconditions"] == {"uid": created.metadata.uid}


async def test_container_that_ignores_sigterm_is_killed_at_the_grace_period(make_env) -> None:
    stages = [s for s in load_profile("default") if s.name != "container-stop"]
    env = await make_env(stages, zero=True)
    await env.create_pod(pod("web"))
    await advance(env.clock, 1)
    await env.cs.core_v1().pods("default").delete("web", grace_period_seconds=10)
    await advance(env.clock, 9.5)
    p = await env.pod("web")
    assert p.metadata.deletion_timestamp and p.status.container_statuses[0].state.running is not None
    env.cs.clear_actions()
    await advance(env.clock, 1)
    with pytest.raises(Exception, match="not found"):
        await env.pod("web")
    status = next(a for a in env.cs.actions if a.verb == "patch").body["status"]
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    assert status["phase"] == "Failed"


async def test_crash_loop_back_off_doubles_from_10s(make_env) -> None:
    # container-crashes after exactly 2 s; everything else instantaneous
    stages = [replace(s, delay=Delay(2000) if s.name == "container-crashes" else Delay())
              for s in load_profile("crash-loop")]
    env = await make_env(stages)
    await env.create_pod(pod("web"))
    starts: list[tuple[float, int]] = []
    seen = -1
    for _ in range(int(80 / 0.5)):
        await advance(env.clock, 0.5)
        st = env.runtime.pod_status(env.kubelet.pods and next(iter(env.kubelet.pods)))
        latest = st.latest("nginx") if st else None
        if latest and latest.attempt != seen:
            seen = latest.attempt
            starts.append((env.clock.monotonic(), latest.attempt))
    # attempt 0 at ~0, crash at 2 -> restart at once; crash at 4 -> wait 10 -> 14; crash 16 -> 20 -> 36;
    # crash 38 -> 40 -> 78
    assert [a for _, a in starts] == [0, 1, 2, 3, 4]
    assert [round(t) for t, _ in starts] == [0, 2, 14, 36, 78]
    p = await env.pod("web")
    assert p.status.phase == "Running"
    waiting = [e for e in env.events if e[2] == "BackOff"]
    assert waiting and "Back-off restarting failed container nginx in pod web_default(" in waiting[0][3]


async def test_crash_loop_status_shows_back_off_and_last_state(make_env) -> None:
    stages = [replace(s, delay=Delay(2000) if s.name == "container-crashes" else Delay())
              for s in load_profile("crash-loop")]
    env = await make_env(stages)
    await env.create_pod(pod("web"))
    await advance(env.clock, 5)         # second crash at 4 s: in back-off until 14 s
    cs = (await env.pod("web")).status.container_statuses[0]
    assert cs.state.waiting.reason == "CrashLoopBackOff"
    assert cs.state.waiting.message.startswith("back-off 10s restarting failed container=nginx pod=web_default(")
    assert cs.last_state.terminated.exit_code == 1 and cs.restart_count == 1 and cs.ready is False


async def test_restart_policy_never_fails_the_pod_and_stops_the_sandbox(make_env) -> None:
    stages = [replace(s, delay=Delay(2000) if s.name == "container-crashes" else Delay())
              for s in load_profile("crash-loop")]
    env = await make_env(stages)
    await env.create_pod(pod("job", restart="Never"))
    await advance(env.clock, 20)
    p = await env.pod("job")
    assert p.status.phase == "Failed"
    assert p.status.container_statuses[0].state.terminated.exit_code == 1
    assert p.status.container_statuses[0].restart_count == 0
    assert conditions(p)[0] == ("PodReadyToStartContainers", "False")


async def test_image_pull_failure_backs_off(make_env) -> None:
    delays = {"image-pull-fails": Delay(500), "image-pull-backoff": Delay(1000)}
    stages = [replace(s, delay=delays.get(s.name, Delay())) for s in load_profile("image-pull-failure")]
    env = await make_env(stages)
    await env.create_pod(pod("web"))
    await advance(env.clock, 1)
    cs = (await env.pod("web")).status.container_statuses[0]
    assert cs.state.waiting.reason == "ErrImagePull"
    await advance(env.clock, 1)
    cs = (await env.pod("web")).status.container_statuses[0]
    assert cs.state.waiting.reason == "ImagePullBackOff"
    assert cs.state.waiting.message == 'Back-off pulling image "nginx"'
    assert (await env.pod("web")).status.phase == "Pending"
    fails = [e for e in env.events if e[2] == "Failed"]
    await advance(env.clock, 10)        # retried once at ~10.5 s (failed again at ~11 s)
    assert len([e for e in env.events if e[2] == "Failed"]) == len(fails) + 1


@pytest.mark.parametrize("initial,period,success,want_ready_at", [
    pytest.param(0, 10, 1, 0, id="no-delay"),
    pytest.param(5, 10, 1, 5, id="initial-delay"),
    pytest.param(5, 10, 2, 15, id="success-threshold-2"),
    pytest.param(3, 4, 3, 11, id="three-probes-4s-apart"),
])
async def test_readiness_probe_numbers(make_env, initial, period, success, want_ready_at) -> None:
    env = await make_env("default", zero=True)
    probe = {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": initial, "periodSeconds": period,
             "successThreshold": success}
    await env.create_pod(pod("web", containers=[{**APP, "readinessProbe": probe}]))
    ready_at = None
    for _ in range(40):
        p = await env.pod("web")
        if p.status.container_statuses and p.status.container_statuses[0].ready:
            ready_at = env.clock.monotonic()
            break
        await advance(env.clock, 0.5)
    assert ready_at is not None and abs(ready_at - want_ready_at) <= 0.5


async def test_failing_readiness_keeps_pod_running_but_not_ready(make_env) -> None:
    env = await make_env("failing-readiness", zero=True)
    probe = {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 1, "failureThreshold": 1}
    await env.create_pod(pod("web", containers=[{**APP, "readinessProbe": probe}]))
    await advance(env.clock, 5)
    p = await env.pod("web")
    assert p.status.phase == "Running"
    assert dict(conditions(p))["Ready"] == "False" and p.status.container_statuses[0].started is True


async def test_pods_on_other_nodes_are_ignored(make_env) -> None:
    env = await make_env("default", zero=True, nodes=2)
    await env.create_pod(pod("mine", nodeName="node-1"))
    await env.create_pod(pod("theirs", nodeName="elsewhere"))
    await advance(env.clock, 1)
    assert (await env.pod("mine")).status.phase == "Running"
    assert (await env.pod("mine")).status.host_ip == "172.18.0.3"
    assert (await env.pod("theirs")).status.phase == "Pending"
    assert not (await env.pod("theirs")).status.container_statuses


async def test_container_resources_reported_and_an_in_place_resize_applied(make_env) -> None:
    """Upstream's kubelet reports each container's allocatedResources (its requests) and
    resources; a pods/resize shows there at the next sync, with observedGeneration."""
    import orjson

    from kubeplane.apiserver.request import Request

    env = await make_env("default", zero=True)
    res = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
    await env.create_pod(pod("r", containers=[{**APP, "resources": res}]))
    await advance(env.clock, 1)
    (cs,) = (await env.pod("r")).status.container_statuses
    assert cs.allocated_resources == res["requests"]
    assert (cs.resources.requests, cs.resources.limits) == (res["requests"], res["limits"])
    body = {"spec": {"containers": [{"name": "nginx", "resources": {"requests": {"cpu": "150m"}}}]}}
    resp = await env.cs.api.route_trusted(Request.build(
        "PATCH", "/api/v1/namespaces/default/pods/r/resize", "",
        {"content-type": "application/strategic-merge-patch+json"}, orjson.dumps(body)))
    assert resp.status == 200, resp.body
    await advance(env.clock, 1)
    p = await env.pod("r")
    (cs,) = p.status.container_statuses
    assert cs.allocated_resources == {"cpu": "150m", "memory": "64Mi"}
    assert cs.resources.requests == {"cpu": "150m", "memory": "64Mi"}
    assert p.metadata.generation == 2 and p.status.observed_generation == 2
    assert cs.state.running is not None and cs.restart_count == 0      # resized in place
