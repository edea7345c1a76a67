"""Ephemeral containers on the sim runtime (fake clock): started once in a running pod, reported
in status.ephemeralContainerStatuses as upstream, never restarted (nor after a kubelet restart),
stopped with the pod."""
from __future__ import annotations

from typing import Any

from kubelet_testutil import advance
from test_kubelet_restart import delays, restarts  # noqa: F401  (restarts: the fixture)

DEBUGGER = {"name": "debugger", "image": "busybox", "targetContainerName": "nginx", "stdin": True, "tty": True}


async def add_debugger(pods: Any, name: str = "web") -> None:
    await pods.patch(name, {"spec": {"ephemeralContainers": [DEBUGGER]}}, "strategic",
                     subresource="ephemeralcontainers")


async def test_an_ephemeral_container_starts_in_a_running_pod_and_is_reported_apart(make_env: Any) -> None:
    env = await make_env("default", zero=True)
    await env.create_pod({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}})
    await advance(env.clock, 1)
    before = await env.pod("web")
    assert before.status.phase == "Running" and before.status.ephemeral_container_statuses is None
    await add_debugger(env.cs.core_v1().pods("default"))
    await advance(env.clock, 1)
    p = await env.pod("web")
    (st,) = p.status.ephemeral_container_statuses
    assert (st.name, st.ready, st.started, st.restart_count) == ("debugger", False, None, 0)
    assert st.state.running is not None and st.container_id.startswith("kubeplane-sim://")
    assert p.status.container_statuses == before.status.container_statuses
    assert [c.type for c in p.status.conditions if c.status == "True"] == \
        [c.type for c in before.status.conditions if c.status == "True"]
    assert [e[2] for e in env.events if e[0] == "spec.ephemeralContainers{debugger}"] == ["Pulled", "Created", "Started"]
    await env.cs.core_v1().pods("default").delete("web")
    await advance(env.clock, 35)
    assert [p.metadata.name for p in (await env.cs.core_v1().pods("default").list()).items] == []


async def test_an_ephemeral_container_is_not_started_again_after_a_kubelet_restart(restarts: Any) -> None:  # noqa: F811
    r = await restarts(delays("default"))
    await r.start()
    await r.create("web")
    await advance(r.clock, 1)
    await add_debugger(r.pods)
    await advance(r.clock, 1)
    first = (await r.pods.get("web")).status.ephemeral_container_statuses[0]
    assert first.state.running is not None
    await r.kill()
    await r.start()
    await advance(r.clock, 2)
    again = (await r.pods.get("web")).status.ephemeral_container_statuses[0]
    assert again.container_id == first.container_id and again.state.running is not None
    assert not [e for e in r.events if e[0] == "spec.ephemeralContainers{debugger}"]
    await r.kill()
