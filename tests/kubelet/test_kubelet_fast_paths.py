"""The kubelet's shortcuts give the same answers as the plain computations they replace:
status templates parsed without YAML, compiled templates, stage candidates narrowed by
state, plain paths read without the step engine, copy-on-write stage application, pod
updates that skip the sync (our own status write coming back), runtime changes that skip it
(nothing a sync reads changed), the API status computed from the typed pod, the runtime's
helper table and loop timers on the real clock."""
from __future__ import annotations

import asyncio
import copy
import pathlib
import random
import re
from dataclasses import replace
from typing import Any

import msgspec
import orjson
import pytest
import yaml

from kubeplane.api.types import core_v1, from_dict, to_dict
from kubeplane.kubelet import kubelet_pods as kp
from kubeplane.kubelet.kubelet import needs_sync, same_for_sync
from kubeplane.kubelet.runtime import (
    CREATED, CREATING, EXITED, RUNNING, WAITING, ContainerStatus, PodStatus, SandboxStatus,
)
from kubeplane.kubelet.status import generate
from kubeplane.kubelet.status.status_manager import StatusManager
from kubeplane.utils.clock import REAL_CLOCK, FakeClock, rfc3339
from kubeplane.kubelet.runtime.sim.expression import ExpressionError, Query, _run_steps
from kubeplane.kubelet.runtime.sim import SimRuntime
from kubeplane.kubelet.runtime.sim.lifecycle import (
    Delay, Lifecycle, apply_stage, load_profile, parse_status, profiles,
)
from kubeplane.kubelet.runtime.sim.renderer import Renderer
from kubeplane.kubelet.runtime.sim.runtime import TimerQueue, _Entry, image_ref

from kubelet_testutil import advance

TESTDATA = pathlib.Path(__file__).parent / "testdata"


@pytest.mark.parametrize("text", [
    'state: Ready\npodIP: "10.244.3.7"\n',
    'state: Running\nstartedAt: "2024-05-01T10:00:00Z"\nreadiness: Success\n',
    "state: Exited\nexitCode: 0\nreason: Completed\n",
    "a: true\nb: 1.5\nc: 2024-01-01\nd: null\ne: ~\nf: 0x1F\ng: on\n",    # YAML 1.1 scalars
    "true: 1\n",                                     # a key YAML reads as a bool
    'message: ""\n',
    'x: "a\\"b"\n',                                  # an escape: the YAML parser decides
    'x: "caf\\u00e9"\n',
    "a: b # comment\n",
    " a: b\n",
    "a:\n  b: c\n",
    "a: [1, 2]\n",
    "a: 1\na: 2\n",                                  # a repeated key: the last wins
    "",
    "\n\n",
])
def test_parse_status_reads_what_yaml_reads(text: str) -> None:
    want = yaml.safe_load(text) or {}
    assert parse_status(text) == want
    assert parse_status(text) == want                # again, from the cache


def test_renderer_compiled_template_evaluates_per_object_and_in_order() -> None:
    calls: list[str] = []
    r = Renderer({"PodIP": lambda: calls.append("PodIP") or "10.244.0.2"})
    tpl = 'ip: {{ PodIP | Quote }}\nimage: {{ .spec.image }}'
    assert r.render(tpl, {"spec": {"image": "nginx"}}) == 'ip: "10.244.0.2"\nimage: nginx'
    assert r.render(tpl, {"spec": {"image": "redis"}}, {"PodIP": lambda: "10.244.0.3"}) == \
        'ip: "10.244.0.3"\nimage: redis'
    # holes are evaluated left to right: the helper before a bad hole still runs, as when
    # each hole was parsed as it was reached
    for bad in ("{{ PodIP }}{{ Nope }}", '{{ PodIP }}{{ Quote("a" "b" }}', "{{ PodIP }}{{ .a[x] }}"):
        calls.clear()
        with pytest.raises(ExpressionError):
            r.render(bad, {})
        assert calls == ["PodIP"]
        with pytest.raises(ExpressionError):          # and again from the compiled form
            r.render(bad, {})


def _golden_objects() -> list[dict]:
    objs = [yaml.safe_load(p.read_text())["object"] for p in sorted(TESTDATA.glob("*.input.yaml"))]
    out = []
    for obj in objs:
        for state in ("Pending", "Ready", "Creating", "Pulled", "Created", "Running", "Exited", "Waiting", "Other"):
            o = copy.deepcopy(obj)
            o.setdefault("status", {})["state"] = state
            out.append(o)
        out.append({k: v for k, v in obj.items() if k != "status"})          # no state at all
        out.append({**obj, "apiVersion": "other/v1"})
    return out


@pytest.mark.parametrize("profile", profiles())
def test_lifecycle_candidates_match_a_full_scan(profile: str) -> None:
    lc = Lifecycle(load_profile(profile))
    for obj in _golden_objects():
        full = [s for s in lc.stages if s.matches(obj)]
        assert lc.match(obj) == full
        if not lc._weighted:
            assert lc.select(obj) == (full[0] if full else None)


@pytest.mark.parametrize("path", [".status.state", ".metadata.deletionTimestamp", ".spec.init", ".", ".a.b.c",
                                  '.metadata["name"]'])
def test_plain_path_fast_path_equals_the_step_engine(path: str) -> None:
    q = Query.parse(path)
    assert q.fields is not None
    for obj in _golden_objects() + [{"status": "scalar"}, {"metadata": None}]:
        (stage,) = q.stages
        assert q.execute(obj) == list(_run_steps(stage, obj))


def test_apply_stage_leaves_its_input_alone_and_copies_what_it_changes() -> None:
    stages = {s.name: s for s in load_profile("default")}
    obj = yaml.safe_load((TESTDATA / "default-container-starts.input.yaml").read_text())["object"]
    obj["metadata"]["finalizers"] = ["a"]
    before = copy.deepcopy(obj)
    out = apply_stage(stages["container-pulled"], obj, Renderer({"ImageID": lambda image: "sha"}))
    assert obj == before
    assert out.obj is not None and out.obj["status"]["state"] == "Pulled" and out.obj["status"] is not obj["status"]
    assert out.obj["spec"] == obj["spec"]


def _pod(**status: object) -> core_v1.Pod:
    return from_dict({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "5",
                                   "labels": {"app": "web"}},
                      "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "nginx"}],
                               "readinessGates": [{"conditionType": "example.com/gate"}]},
                      "status": {"qosClass": "BestEffort", **status}}, core_v1.Pod)


READY = [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]


def _with(pod: core_v1.Pod, *, rv: str = "6", meta: dict | None = None, spec: dict | None = None,
          status: dict | None = None) -> core_v1.Pod:
    p = msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, resource_version=rv, **(meta or {})))
    if spec:
        p = msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, **spec))
    if status is not None:
        p = msgspec.structs.replace(p, status=from_dict({"qosClass": "BestEffort", **status}, core_v1.PodStatus))
    return p


@pytest.mark.parametrize("change,reported_ip,want", [
    pytest.param({"status": {"phase": "Running", "conditions": READY, "podIP": "10.0.0.2"}}, "10.0.0.2", False,
                 id="own-status-write-echo"),
    pytest.param({"status": {"phase": "Running", "podIP": "10.0.0.9"}}, "10.0.0.2", True, id="someone-elses-pod-ip"),
    pytest.param({"status": {"conditions": [{"type": "example.com/gate", "status": "True"}]}}, None, True,
                 id="readiness-gate-condition"),
    pytest.param({"status": {"qosClass": "Guaranteed"}}, None, True, id="qos-class"),
    pytest.param({"meta": {"labels": {"app": "db"}}}, None, True, id="labels"),
    pytest.param({"meta": {"deletion_timestamp": "2024-05-01T10:00:00Z", "deletion_grace_period_seconds": 30}}, None,
                 True, id="deletion"),
    pytest.param({"spec": {"active_deadline_seconds": 5}}, None, True, id="spec"),
    pytest.param({}, None, False, id="resource-version-only"),
])
def test_needs_sync(change: dict, reported_ip: str | None, want: bool) -> None:
    old = _pod()
    assert needs_sync(old, _with(old, **change), reported_ip) is want


async def test_readiness_gate_set_by_someone_else_makes_the_pod_ready(make_env) -> None:
    env = await make_env("default", zero=True)
    await env.create_pod({"metadata": {"name": "gated"},
                          "spec": {"readinessGates": [{"conditionType": "example.com/gate"}],
                                   "containers": [{"name": "c", "image": "nginx"}]}})
    await advance(env.clock, 1)
    ready = lambda p: next(c for c in p.status.conditions if c.type == "Ready")  # noqa: E731
    p = await env.pod("gated")
    assert (ready(p).status, ready(p).reason) == ("False", "ReadinessGatesNotReady")
    writes = env.kubelet.status_manager.writes
    await env.cs.core_v1().pods("default").patch(
        "gated", {"status": {"conditions": [{"type": "example.com/gate", "status": "True"}]}},
        "strategic", subresource="status")
    await advance(env.clock, 1)
    p = await env.pod("gated")
    assert ready(p).status == "True"
    assert env.kubelet.status_manager.writes == writes + 1
    assert [c.type for c in p.status.conditions].count("example.com/gate") == 1


def test_forget_pod_drops_every_back_off_record_of_the_pod() -> None:
    from kubeplane.kubelet.backoff import Backoff
    from kubeplane.kubelet.kuberuntime_manager import BackoffState
    from kubeplane.utils.clock import FakeClock
    clock = FakeClock(0.0)
    bo = BackoffState(Backoff(10, 300, clock=clock), Backoff(10, 300, clock=clock))
    for uid in ("u1", "u2"):
        assert bo.first_time(bo.pull_failures_seen, uid, "c1") and not bo.first_time(bo.pull_failures_seen, uid, "c1")
        assert bo.first_time(bo.back_off_reported, uid, "c1")
        bo.crash.next(f"web_default_{uid}_c", 0.0)
        bo.image.next(f"{uid}_nginx", 0.0)
        bo.last_pull_error[f"{uid}/c"] = ("ImagePullBackOff", "x")
    bo.forget_pod("u1")
    assert list(bo.pull_failures_seen) == list(bo.back_off_reported) == ["u2"]
    assert list(bo.crash.entries) == ["web_default_u2_c"] and list(bo.image.entries) == ["u2_nginx"]
    assert list(bo.last_pull_error) == ["u2/c"]


# --- the kubelet's PLEG filter: runtime changes a sync would not see are not synced ------------

def _scrub(value: object, names: dict[str, str]) -> object:
    """Replace pod uids (by pod name) and 64-hex object ids, which differ from run to run."""
    text = orjson.dumps(value).decode()
    for uid, name in names.items():
        text = text.replace(uid, f"<{name}>")
    return orjson.loads(re.sub(r"[0-9a-f]{64}", "<id>", text))


SCENARIO_PODS = [
    {"metadata": {"name": "plain"}, "spec": {"containers": [
        {"name": "c", "image": "nginx", "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2}}]}},
    {"metadata": {"name": "init"}, "spec": {"restartPolicy": "OnFailure",
                                            "initContainers": [{"name": "setup", "image": "busybox"}],
                                            "containers": [{"name": "a", "image": "nginx"},
                                                           {"name": "b", "image": "redis"}]}},
    {"metadata": {"name": "never"}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "nginx"}]}},
]


async def _run_scenario(make_env, monkeypatch, profile: str, *, filtered: bool) -> tuple[list, list, list, int]:
    """Three pods through 30 s of the profile, one deleted: the statuses seen each second,
    the events, every status write (when, which pod, what) and the number of syncs."""
    writes: list = []
    sync_pod = StatusManager.sync_pod

    async def recording_sync_pod(sm: StatusManager, uid: str) -> None:
        before = sm.written.get(uid)
        await sync_pod(sm, uid)
        if sm.written.get(uid) is not before:
            writes.append((sm.clock.now(), uid, sm.written.get(uid)))
    monkeypatch.setattr(StatusManager, "sync_pod", recording_sync_pod)
    env = await make_env(profile)
    sm = env.kubelet.status_manager
    env.runtime.rng = env.runtime.lifecycle.rng = random.Random(7)    # the same delays in both runs
    kl = env.kubelet
    if not filtered:         # the plain PLEG: every change not made by the running sync
        env.runtime.set_event_handler(lambda uid: uid == kl._syncing or kl.pod_workers.enqueue(uid))
    names = {}
    for spec in SCENARIO_PODS:
        p = await env.create_pod(copy.deepcopy(spec))
        names[p.metadata.uid] = p.metadata.name
    seen = []
    for second in range(36):
        if second == 30:
            await env.cs.core_v1().pods("default").delete("plain")
        await advance(env.clock, 1)
        pods = (await env.cs.core_v1().pods("default").list()).items
        seen.append(sorted((p.metadata.name, to_dict(p.status)) for p in pods))
    assert len(writes) == sm.writes
    return _scrub(seen, names), _scrub(env.events, names), _scrub(writes, names), kl.pod_workers.syncs


@pytest.mark.parametrize("profile", profiles())
async def test_pleg_filter_changes_nothing_but_the_number_of_syncs(make_env, monkeypatch, profile: str) -> None:
    plain = await _run_scenario(make_env, monkeypatch, profile, filtered=False)
    fast = await _run_scenario(make_env, monkeypatch, profile, filtered=True)
    assert fast[:3] == plain[:3]
    assert fast[3] <= plain[3]


def _cs(state: str, **kw: object) -> ContainerStatus:
    return ContainerStatus(**{"id": "sim://1", "name": "c", "attempt": 0, "init": False, "state": state,
                              "image": "nginx", **kw})


@pytest.mark.parametrize("a,b,same", [
    pytest.param(_cs(CREATING), _cs(CREATED, image_ref="sha"), True, id="creating-created"),
    pytest.param(_cs(CREATED), _cs(CREATED, reason="x"), True, id="created-details"),
    pytest.param(_cs(CREATING), _cs(CREATING, attempt=1), False, id="attempt"),
    pytest.param(_cs(CREATING), _cs(CREATING, id="sim://2"), False, id="id"),
    pytest.param(_cs(CREATED), _cs(RUNNING), False, id="created-running"),
    pytest.param(_cs(RUNNING, started_at=1.0), _cs(RUNNING, started_at=1.0), True, id="equal-running"),
    pytest.param(_cs(RUNNING, started_at=1.0), _cs(RUNNING, started_at=1.0, image_ref="x"), False, id="running-image"),
    pytest.param(_cs(EXITED, exit_code=0), _cs(EXITED, exit_code=1), False, id="exit-code"),
    pytest.param(_cs(WAITING, reason="ErrImagePull"), _cs(WAITING, reason="ImagePullBackOff"), False, id="waiting"),
])
def test_same_for_sync_containers(a: ContainerStatus, b: ContainerStatus, same: bool) -> None:
    sb = SandboxStatus("s", "Ready", "10.0.0.2")
    assert same_for_sync(PodStatus("u", sb, [a]), PodStatus("u", sb, [b])) is same
    assert same_for_sync(PodStatus("u", sb, [b]), PodStatus("u", sb, [a])) is same


def test_same_for_sync_sandbox_and_attempts() -> None:
    c = _cs(RUNNING)
    ready = SandboxStatus("s", "Ready", "10.0.0.2")
    assert same_for_sync(PodStatus("u", ready, [c]), PodStatus("u", SandboxStatus("s", "Ready", "10.0.0.2"), [c]))
    assert not same_for_sync(PodStatus("u", ready, [c]), PodStatus("u", SandboxStatus("s", "NotReady", "10.0.0.2"), [c]))
    assert not same_for_sync(PodStatus("u", None, []), PodStatus("u", ready, []))
    assert not same_for_sync(PodStatus("u", ready, [c]), PodStatus("u", ready, [c, _cs(CREATING, id="sim://2")]))


# --- the API status from the typed pod, against the plain computation over its whole dict ------

def _plain_generate_api_pod_status(pod: core_v1.Pod, rt: PodStatus, *, node_ip: str, is_ready, waiting,
                                   terminal: bool, is_started) -> dict:
    """generate_api_pod_status as it was: over to_dict(spec) and to_dict(status), Ready
    computing ContainersReady itself."""
    spec = to_dict(pod.spec) if pod.spec else {}
    old = to_dict(pod.status) if pod.status else {}
    has_init = bool(pod.spec.init_containers)
    init = kp.convert_to_api_container_statuses(pod.spec.init_containers or [], rt, has_init, is_ready, waiting,
                                                terminal, init=True) if has_init else []
    app = kp.convert_to_api_container_statuses(pod.spec.containers or [], rt, has_init, is_ready, waiting, terminal,
                                               is_started=is_started)
    phase = kp.get_phase(spec, init, app, terminal)
    s: dict = {"phase": phase}
    if pod.status and pod.status.qos_class:
        s["qosClass"] = pod.status.qos_class
    conds = [c for c in old.get("conditions") or () if c.get("type") not in generate.KUBELET_CONDITIONS]
    sandbox_ready = not terminal and rt.sandbox is not None and rt.sandbox.state == "Ready" and bool(rt.sandbox.ip)
    conds.append(generate.generate_pod_ready_to_start_containers_condition(sandbox_ready))
    conds.append(generate.generate_pod_initialized_condition(spec, init, phase))
    conds.append(generate.generate_pod_ready_condition(spec, conds, app, phase))
    conds.append(generate.generate_containers_ready_condition(spec, app, phase))
    conds.append({"type": generate.POD_SCHEDULED, "status": "True"})
    s["conditions"] = conds
    if node_ip:
        s["hostIP"], s["hostIPs"] = node_ip, [{"ip": node_ip}]
    ip = (rt.sandbox.ip if rt.sandbox is not None else "") or old.get("podIP") or ""
    if ip:
        s["podIP"], s["podIPs"] = ip, [{"ip": ip}]
    if has_init:
        s["initContainerStatuses"] = init
    s["containerStatuses"] = app
    return s


def _status_pods() -> list[core_v1.Pod]:
    specs = [
        {"containers": [{"name": "a", "image": "nginx"}]},
        {"restartPolicy": "Never", "containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]},
        {"restartPolicy": "OnFailure", "initContainers": [{"name": "i", "image": "busybox"}],
         "containers": [{"name": "a", "image": "nginx"}]},
        {"initContainers": [], "readinessGates": [{"conditionType": "example.com/g"}, {"conditionType": "x/h"}],
         "containers": [{"name": "a", "image": "nginx"}]},
    ]
    statuses = [None, {}, {"qosClass": "Burstable", "podIP": "10.0.0.9", "conditions": [
        {"type": "example.com/g", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
        {"type": "Ready", "status": "False"}, {"type": "DisruptionTarget", "status": "True", "reason": "x"}]}]
    out = []
    for spec in specs:
        for status in statuses:
            d = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": spec}
            if status is not None:
                d["status"] = status
            out.append(from_dict(d, core_v1.Pod))
    return out


def _runtime_statuses() -> list[PodStatus]:
    sb = SandboxStatus("s", "Ready", "10.0.0.2")
    ran = dict(started_at=1.7e9, image_ref="sha")
    attempts = {
        "none": [],
        "creating": [_cs(CREATING, name="a"), _cs(CREATING, name="i", init=True)],
        "pull-failed": [_cs(WAITING, name="a", reason="ErrImagePull", message="no")],
        "running": [_cs(EXITED, name="i", init=True, exit_code=0, finished_at=1.7e9, **ran),
                    _cs(RUNNING, name="a", **ran), _cs(RUNNING, name="b", id="sim://2", **ran)],
        "restarted": [_cs(EXITED, name="a", exit_code=1, reason="Error", finished_at=1.7e9, **ran),
                      _cs(RUNNING, name="a", id="sim://2", attempt=1, **ran),
                      _cs(EXITED, name="b", id="sim://3", exit_code=0, finished_at=1.7e9, **ran)],
        "failed-init": [_cs(EXITED, name="i", init=True, exit_code=2, finished_at=1.7e9, **ran)],
    }
    out = [PodStatus("u", None, [])]
    for sandbox in (sb, SandboxStatus("s", "NotReady", ""), SandboxStatus("s", "Ready", "")):
        out += [PodStatus("u", sandbox, cs) for cs in attempts.values()]
    return out


def test_generate_api_pod_status_equals_the_plain_computation() -> None:
    waits = [{}, {"a": ("CrashLoopBackOff", "back-off 10s")}]
    n = 0
    for pod in _status_pods():
        for rt in _runtime_statuses():
            for waiting in waits:
                for terminal in (False, True):
                    for ready in (True, False):
                        kw = dict(node_ip="172.18.0.2", is_ready=lambda c, s, r=ready: r, waiting=waiting,
                                  terminal=terminal, is_started=lambda c, s, r=ready: r)
                        assert kp.generate_api_pod_status(pod, rt, **kw) == _plain_generate_api_pod_status(pod, rt, **kw)
                        n += 1
    assert n == 12 * 19 * 2 * 2 * 2


# --- the sim runtime: its helper table, and loop timers on the real clock ---------------------

def _sim_pod(uid: str = "u1") -> core_v1.Pod:
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "uid": uid},
                      "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "nginx"}]}}, core_v1.Pod)


async def test_runtime_helpers_answer_as_closures_made_per_stage_did() -> None:
    clock = FakeClock()
    rt = SimRuntime(profile=[], clock=clock)
    rt.add_node("n", "172.18.0.2", "10.244.0.0/24")
    pod = _sim_pod()
    oid = rt.run_pod_sandbox(pod)
    h = rt._helpers(oid)
    want = {"Now": ((), rfc3339(clock.now())), "NodeName": ((), "n"), "NodeIP": ((), "172.18.0.2"),
            "NodeIPWith": (("x",), "172.18.0.2"), "PodIP": ((), "10.244.0.2"), "PodIPWith": (("x",), "10.244.0.2"),
            "ImageID": (("nginx",), image_ref("nginx")), "ContainerID": ((), f"kubeplane-sim://{oid}")}
    assert sorted(h) == sorted(want) and len(h) == len(want)
    for name, (args, value) in want.items():
        assert name in h and h.get(name)(*args) == value and h[name](*args) == value
    assert "Quote" not in h and h.get("Quote") is None            # the renderer's own helpers stay its own
    assert Renderer().render("{{ PodIP | Quote }} {{ NodeName }}", {}, h) == '"10.244.0.2" n'
    rt.remove_pod("u1")                                          # an object whose pod is gone
    assert (h.get("NodeName")(), h.get("NodeIP")(), h.get("PodIP")()) == ("", "", "")


async def _run_container(clock, stages) -> tuple[list, tuple, set]:
    """Sandbox, one container started, then stopped: events, final state, kinds of timers used."""
    events: list = []
    rt = SimRuntime(profile=stages, clock=clock, events=lambda ref, t, r, m: events.append((ref.field_path, r, m)))
    changed = asyncio.Event()
    rt.set_event_handler(lambda uid: changed.set())
    rt.add_node("n", "172.18.0.2", "10.244.0.0/24")
    pod = _sim_pod()
    rt.run_pod_sandbox(pod)
    cid = rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    kinds = set()

    async def until(state: str) -> None:
        while rt.pod_status("u1").containers[-1].state != state:
            kinds.update(type(t) for t in rt._timers.values())
            if rt._timer_queue._armed is not None:                  # the one loop timer of the queue
                kinds.add(("armed", type(rt._timer_queue._armed)))
            changed.clear()
            if isinstance(clock, FakeClock):
                await advance(clock, 0.001, step=0.001)
            else:
                await asyncio.wait_for(changed.wait(), 10)
    await until(RUNNING)
    rt.stop_container(cid, 0.001)
    await until(EXITED)
    c = rt.pod_status("u1").containers[-1]
    rt.close()
    return events, (c.state, c.exit_code, c.reason, c.attempt), kinds


async def test_loop_timers_on_the_real_clock_step_as_fake_clock_timers_do() -> None:
    stages = [replace(s, delay=Delay(1)) if s.delay.bounds({}, 0)[1] > 0 else s for s in load_profile("default")]
    fake = await _run_container(FakeClock(), stages)
    real = await _run_container(REAL_CLOCK, stages)
    assert real[:2] == fake[:2]
    assert [e[1] for e in real[0]] == ["Pulled", "Created", "Started"] and real[1] == (EXITED, 0, "Completed", 0)
    # No task per timer: the runtime's timers are TimerQueue entries (a delay of 0: the clock's
    # call soon), on one Clock.after_func timer (the fake clock parks a future, the loop a TimerHandle)
    assert fake[2] <= {_Entry, asyncio.Handle, ("armed", asyncio.Future), ("armed", asyncio.Handle)}
    assert real[2] <= {_Entry, asyncio.TimerHandle, ("armed", asyncio.TimerHandle)}
    assert ("armed", asyncio.TimerHandle) in real[2] and _Entry in real[2]


async def test_sim_objects_share_the_pods_labels_and_annotations_and_never_change_them() -> None:
    clock = FakeClock()
    rt = SimRuntime(profile="default", clock=clock)
    rt.add_node("n", "172.18.0.2", "10.244.0.0/24")
    pod = _sim_pod()
    pod.metadata.labels = {"app": "web"}
    pod.metadata.annotations = {"sim.kubeplane.io/exit-code.c": "3", "note": "x"}
    before = copy.deepcopy(to_dict(pod.metadata))
    sandbox = rt.run_pod_sandbox(pod)
    cid = rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    assert rt._objs[sandbox]["metadata"]["labels"] is pod.metadata.labels      # not a copy
    assert rt._objs[sandbox]["metadata"]["annotations"] is pod.metadata.annotations
    own = rt._objs[cid.split("://")[1]]["metadata"]["annotations"]       # the container's: a new map
    assert own == {"note": "x", "sim.kubeplane.io/exit-code": "3"} and own is not pod.metadata.annotations
    while rt.pod_status("u1").containers[-1].state != RUNNING:
        await advance(clock, 0.5, step=0.5)
    rt.stop_container(cid, 1.0)
    while rt.pod_status("u1").containers[-1].state != EXITED:
        await advance(clock, 0.5, step=0.5)
    assert to_dict(pod.metadata) == before
    rt.close()


async def test_the_kubelets_own_status_writes_come_back_with_the_cached_spec(make_env) -> None:
    """needs_sync compares the old and new spec of every update; the kubelet asks its pod
    informer to compare them once and hand an equal spec over, so its own status writes coming
    back through the watch carry the very spec object it had."""
    from kubeplane.client.tools.cache import ResourceEventHandlerFuncs
    env = await make_env("default", zero=True)
    updates: list[tuple[Any, Any]] = []
    env.kubelet.pod_informer.informer().add_event_handler(
        ResourceEventHandlerFuncs(update_func=lambda old, new: updates.append((old, new))))
    await env.create_pod({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    await advance(env.clock, 1)
    assert env.kubelet.status_manager.writes > 0 and (await env.pod("web")).status.phase == "Running"
    assert updates and all(new.spec is old.spec for old, new in updates)     # status writes only


async def test_timer_queue_runs_as_separate_clock_timers_would() -> None:
    """TimerQueue: each callback at its deadline, in deadline order (ties: as armed), none
    after cancel(), zero delays at the next loop turn, what a callback arms at a later turn;
    one clock timer at a time, re-armed only for an earlier deadline."""
    clock = FakeClock()
    q = TimerQueue(clock)
    ran: list[tuple[str, float]] = []

    def note(name: str) -> None:
        ran.append((name, clock.monotonic()))
    q.after(0.5, note, "b")
    q.after(0.2, note, "a")
    q.after(0.5, note, "b2")
    q.after(1.0, note, "d").cancel()
    q.after(3.0, lambda: (note("e"), q.after(0.1, note, "f"), q.after(0, note, "z")))
    q.after(0, note, "now")
    assert q._armed_at == clock.monotonic() + 0.2
    await advance(clock, 0)
    assert ran == [("now", 0.0)]
    await advance(clock, 0.2)
    assert ran[1:] == [("a", 0.2)] and q._armed_at == 0.5
    await advance(clock, 1.0, step=0.1)
    assert [n for n, _ in ran] == ["now", "a", "b", "b2"]
    await advance(clock, 3.0, step=0.05)
    assert [n for n, _ in ran] == ["now", "a", "b", "b2", "e", "z", "f"]
    assert all(abs(t - want) < 1e-9 for (_, t), want in zip(ran[1:], [0.2, 0.5, 0.5]))
    q.close()


async def test_sim_pod_status_is_kept_until_the_pod_changes() -> None:
    """pod_status hands out the same PodStatus while nothing changed, and one equal to a fresh
    computation after every change: sandbox, container start, each stage, stop, kill, sandbox
    stop, a failed attempt replaced, removal."""
    clock = FakeClock()
    rt = SimRuntime(profile="default", clock=clock)
    rt.add_node("n", "172.18.0.2", "10.244.0.0/24")
    pod = _sim_pod()
    seen = []

    def check() -> None:
        st = rt.pod_status("u1")
        if st is None:
            assert "u1" not in rt._pods
            return
        assert rt.pod_status("u1") is st and st == rt._pod_status(rt._pods["u1"])
        seen.append(st)
    rt.set_event_handler(lambda uid: check())
    rt.run_pod_sandbox(pod)
    check()
    cid = rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    check()
    while rt.pod_status("u1").containers[-1].state != RUNNING:
        await advance(clock, 0.05, step=0.05)
        check()
    cid2 = rt.start_container(pod, pod.spec.containers[0], init=False, attempt=1)
    check()
    rt.stop_container(cid2, 5.0)
    check()
    rt.stop_container(cid, 5.0)
    check()
    await advance(clock, 1.0, step=0.1)
    check()
    assert rt.pod_status("u1").containers[-1].state == EXITED
    rt.stop_pod_sandbox("u1")
    check()
    from kubeplane.kubelet.runtime import SANDBOX_NOT_READY
    assert rt.pod_status("u1").sandbox.state == SANDBOX_NOT_READY
    rt.remove_pod("u1")
    assert rt.pod_status("u1") is None
    assert len({id(s) for s in seen}) > 4          # a new status after the changes
    rt.close()
