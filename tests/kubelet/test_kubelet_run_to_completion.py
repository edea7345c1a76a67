"""Run-to-completion pods on simulated nodes: containers of restartPolicy Never/OnFailure pods
run for their simulated duration and exit with the code their sim.kubeplane.io annotations
give (stages/README.md), and the kubelet reports what upstream's would (getPhase)."""
from __future__ import annotations

import pytest

from kubeplane.kubelet.runtime.sim.runtime import container_annotations

from kubelet_testutil import advance


def job_pod(name: str, restart: str, annotations: dict[str, str] | None = None, **spec) -> dict:
    meta: dict = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"restartPolicy": restart,
                                       "containers": spec.pop("containers", [{"name": "main", "image": "busybox"}]),
                                       **spec}}


async def test_never_pod_completes_after_the_default_second(make_env) -> None:
    env = await make_env("default")
    await env.create_pod(job_pod("done", "Never"))
    await advance(env.clock, 0.6, step=0.1)          # pulled, created, started (<= 0.3 s)
    assert (await env.pod("done")).status.phase == "Running"
    await advance(env.clock, 1.5, step=0.1)
    p = await env.pod("done")
    assert p.status.phase == "Succeeded"
    (cs,) = p.status.container_statuses
    t = cs.state.terminated
    assert (t.exit_code, t.reason, cs.ready, cs.restart_count) == (0, "Completed", False, 0)
    assert t.started_at and t.finished_at and t.finished_at >= t.started_at
    assert t.container_id == cs.container_id
    conds = {c.type: (c.status, c.reason) for c in p.status.conditions}
    assert conds["Ready"] == ("False", "PodCompleted") and conds["ContainersReady"] == ("False", "PodCompleted")
    assert conds["PodReadyToStartContainers"][0] == "False"          # the sandbox is torn down


async def test_exit_code_annotation_fails_a_never_pod(make_env) -> None:
    env = await make_env("default")
    await env.create_pod(job_pod("bad", "Never", {"sim.kubeplane.io/exit-code": "42",
                                                  "sim.kubeplane.io/run-duration": "3s"}))
    await advance(env.clock, 2.5, step=0.1)
    assert (await env.pod("bad")).status.phase == "Running"
    await advance(env.clock, 1.5)
    p = await env.pod("bad")
    assert p.status.phase == "Failed"
    t = p.status.container_statuses[0].state.terminated
    assert (t.exit_code, t.reason) == (42, "Error")


async def test_per_container_annotation_wins_over_the_pods(make_env) -> None:
    env = await make_env("default")
    containers = [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]
    await env.create_pod(job_pod("two", "Never", {"sim.kubeplane.io/exit-code": "1",
                                                  "sim.kubeplane.io/exit-code.b": "0"}, containers=containers))
    await advance(env.clock, 3)
    p = await env.pod("two")
    codes = {cs.name: cs.state.terminated.exit_code for cs in p.status.container_statuses}
    assert codes == {"a": 1, "b": 0} and p.status.phase == "Failed"


async def test_on_failure_restarts_with_the_kubelets_back_off(make_env) -> None:
    env = await make_env("default")
    await env.create_pod(job_pod("retry", "OnFailure", {"sim.kubeplane.io/exit-code": "2",
                                                        "sim.kubeplane.io/run-duration": "1s"}))
    await advance(env.clock, 3, step=0.1)
    cs = (await env.pod("retry")).status.container_statuses[0]
    # exits at ~1 s, restarted at once; exits again at ~2 s: back-off 10 s
    assert cs.restart_count == 1 and cs.state.waiting.reason == "CrashLoopBackOff"
    assert cs.last_state.terminated.exit_code == 2
    assert (await env.pod("retry")).status.phase == "Running"
    await advance(env.clock, 11, step=0.1)
    assert (await env.pod("retry")).status.container_statuses[0].restart_count == 2


async def test_on_failure_pod_that_exits_0_succeeds(make_env) -> None:
    env = await make_env("default")
    await env.create_pod(job_pod("ok", "OnFailure", {"sim.kubeplane.io/run-duration": "500ms"}))
    await advance(env.clock, 1.5)
    assert (await env.pod("ok")).status.phase == "Succeeded"


async def test_init_container_exit_code_fails_the_pod(make_env) -> None:
    env = await make_env("default")
    await env.create_pod(job_pod("init", "Never", {"sim.kubeplane.io/exit-code.setup": "7"},
                                 initContainers=[{"name": "setup", "image": "busybox"}]))
    await advance(env.clock, 2)
    p = await env.pod("init")
    assert p.status.phase == "Failed"
    assert p.status.init_container_statuses[0].state.terminated.exit_code == 7
    assert p.status.container_statuses[0].state.waiting.reason == "PodInitializing"


async def test_always_pods_keep_running(make_env) -> None:
    env = await make_env("default")
    await env.create_pod(job_pod("web", "Always", {"sim.kubeplane.io/exit-code": "1"}))
    await advance(env.clock, 30)
    p = await env.pod("web")
    assert p.status.phase == "Running" and p.status.container_statuses[0].restart_count == 0


@pytest.mark.parametrize("annotations,name,init,want", [
    pytest.param({}, "main", False, {}, id="none"),
    pytest.param({"a": "b"}, "main", False, {"a": "b"}, id="foreign-only"),
    pytest.param({"sim.kubeplane.io/exit-code": "3"}, "main", False, {"sim.kubeplane.io/exit-code": "3"}, id="pod"),
    pytest.param({"sim.kubeplane.io/exit-code": "3"}, "setup", True, {}, id="pod-wide-skips-init"),
    pytest.param({"sim.kubeplane.io/exit-code": "3", "sim.kubeplane.io/exit-code.main": "4",
                  "sim.kubeplane.io/exit-code.other": "5"}, "main", False, {"sim.kubeplane.io/exit-code": "4"},
                 id="own-wins"),
    pytest.param({"sim.kubeplane.io/exit-code": "0"}, "main", False, {}, id="zero-is-default"),
    pytest.param({"sim.kubeplane.io/exit-code": "010"}, "main", False, {"sim.kubeplane.io/exit-code": "10"},
                 id="leading-zero-not-octal"),
    pytest.param({"sim.kubeplane.io/exit-code": "-1"}, "main", False, {}, id="negative-ignored"),
    pytest.param({"sim.kubeplane.io/exit-code": "256"}, "main", False, {}, id="too-big-ignored"),
    pytest.param({"sim.kubeplane.io/exit-code": "１"}, "main", False, {}, id="non-ascii-digit-ignored"),
    pytest.param({"sim.kubeplane.io/exit-code": "3", "sim.kubeplane.io/exit-code-indexes": "1,4-6",
                  "batch.kubernetes.io/job-completion-index": "5"}, "main", False,
                 {"sim.kubeplane.io/exit-code": "3", "sim.kubeplane.io/exit-code-indexes": "1,4-6",
                  "batch.kubernetes.io/job-completion-index": "5"}, id="listed-index-fails"),
    pytest.param({"sim.kubeplane.io/exit-code": "3", "sim.kubeplane.io/exit-code-indexes": "1,4-6",
                  "batch.kubernetes.io/job-completion-index": "2"}, "main", False,
                 {"sim.kubeplane.io/exit-code-indexes": "1,4-6", "batch.kubernetes.io/job-completion-index": "2"},
                 id="unlisted-index-succeeds"),
    pytest.param({"sim.kubeplane.io/exit-code": "3", "sim.kubeplane.io/exit-code-indexes": "1"}, "main", False,
                 {"sim.kubeplane.io/exit-code-indexes": "1"}, id="no-index-succeeds"),
    pytest.param({"sim.kubeplane.io/run-duration": "soon"}, "main", False, {}, id="bad-duration-ignored"),
    pytest.param({"sim.kubeplane.io/exit-code": "3", "sim.kubeplane.io/exit-code-indexes": "1-" + "9" * 5000,
                  "batch.kubernetes.io/job-completion-index": "9" * 5000}, "main", False,
                 {"sim.kubeplane.io/exit-code-indexes": "1-" + "9" * 5000,
                  "batch.kubernetes.io/job-completion-index": "9" * 5000}, id="huge-numbers-are-no-index"),
    pytest.param({"sim.kubeplane.io/run-duration": "9" * 400 + "h"}, "main", False,
                 {"sim.kubeplane.io/run-duration": "8760h"}, id="huge-duration-is-a-year"),
    pytest.param({"sim.kubeplane.io/run-duration.setup": "2s"}, "setup", True,
                 {"sim.kubeplane.io/run-duration": "2s"}, id="init-own-duration"),
])
def test_container_annotations(annotations, name, init, want) -> None:
    assert container_annotations(annotations, name, init) == want
