"""The kubelet's shortcuts give the same answers as the plain computations they replace:
status templates parsed without YAML, compiled templates, stage candidates narrowed by
state, plain paths read without the step engine, copy-on-write stage application, and
pod updates that skip the sync (our own status write coming back)."""
from __future__ import annotations

import copy
import pathlib

import msgspec
import pytest
import yaml

from kubeplane.api.types import core_v1, from_dict
from kubeplane.kubelet.kubelet import needs_sync
from kubeplane.kubelet.runtime.sim.expression import ExpressionError, Query, _run_steps
from kubeplane.kubelet.runtime.sim.lifecycle import (
    Lifecycle, apply_stage, load_profile, parse_status, profiles,
)
from kubeplane.kubelet.runtime.sim.renderer import Renderer

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
