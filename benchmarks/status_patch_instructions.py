"""The kubelet's status path of one pod, client and server side: what a pod of density.py's
rolling update costs the status manager (upstream's order of writes):

    pending status, running status         the new pod starting (2 pods/status patches)
    (the ReplicaSet controller's graceful delete: not counted)
    terminating status (observedGeneration), terminal status, final DELETE (grace 0)

Each write goes through the real StatusManager (set_pod_status + sync_pod: merge_diff, the
client's patch/_decode) and the in-process transport to an API server set up as `kubeplane up`
sets it up (Node,RBAC, every default admission plugin, the node's own identity), memory storage.

    python benchmarks/status_patch_instructions.py              # µs per pod (CPU, min of 5)
    python benchmarks/status_patch_instructions.py --callgrind  # instructions per pod (valgrind)
    python benchmarks/status_patch_instructions.py --callgrind --src /work/wt/pre11
        (--src: the checkout whose sources are measured; the harness is this file)
    --only patch|delete: count only the status patches, or only the final deletes.
"""
from __future__ import annotations

import argparse
import asyncio
import copy
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

NODE = "n1"
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:05Z"


def _statuses(cid: str) -> list[dict[str, Any]]:
    """pending, running, terminating (as running: observedGeneration comes from the pod), terminal"""
    def cond(t: str, ok: bool, **kw: Any) -> dict[str, Any]:
        return {"type": t, "status": "True" if ok else "False", **kw}
    base = {"hostIP": "172.18.0.2", "hostIPs": [{"ip": "172.18.0.2"}], "podIP": "10.244.0.2",
            "podIPs": [{"ip": "10.244.0.2"}], "qosClass": "BestEffort"}
    unready = {"reason": "ContainersNotReady", "message": "containers with unready status: [c]"}
    pending = {**base, "phase": "Pending", "conditions": [
        cond("PodReadyToStartContainers", True), cond("Initialized", True), cond("Ready", False, **unready),
        cond("ContainersReady", False, **unready), cond("PodScheduled", True)],
        "containerStatuses": [{"name": "c", "image": "nginx", "imageID": "", "ready": False, "restartCount": 0,
                               "started": False, "state": {"waiting": {"reason": "ContainerCreating"}},
                               "lastState": {}}]}
    running_cs = {"name": "c", "image": "docker.io/library/nginx:latest",
                  "imageID": "docker.io/library/nginx@sha256:" + "5b" * 32, "ready": True, "restartCount": 0,
                  "started": True, "state": {"running": {"startedAt": T1}}, "containerID": cid,
                  "resources": {}, "lastState": {}}
    running = {**base, "phase": "Running", "conditions": [
        cond("PodReadyToStartContainers", True), cond("Initialized", True), cond("Ready", True),
        cond("ContainersReady", True), cond("PodScheduled", True)], "containerStatuses": [running_cs]}
    terminal = {**base, "phase": "Succeeded", "conditions": [
        cond("PodReadyToStartContainers", False), cond("Initialized", True),
        cond("Ready", False, reason="PodCompleted"), cond("ContainersReady", False, reason="PodCompleted"),
        cond("PodScheduled", True)],
        "containerStatuses": [{**running_cs, "ready": False, "started": False, "state": {"terminated": {
            "exitCode": 0, "containerID": cid, "reason": "Completed", "startedAt": T1, "finishedAt": T2}}}]}
    return [pending, running, running, terminal]


def _observed(pod: Any, status: dict[str, Any]) -> dict[str, Any]:
    """status as generate_api_pod_status makes it for pod: a copy, with observedGeneration
    where the kubelet reports it (the pod has a generation)."""
    status = copy.deepcopy(status)
    if getattr(pod.metadata, "generation", None):
        status["observedGeneration"] = pod.metadata.generation
    return status


async def _setup() -> tuple[Any, Any, Any]:
    from instructions import _server

    from kubeplane.apiserver.inprocess import InProcessTransport
    from kubeplane.client.clientset import Clientset
    from kubeplane.kubelet.status.status_manager import StatusManager
    api, _, _ = await _server("Node,RBAC", "x509")
    try:
        from kubeplane.apiserver.authentication.user import UserInfo
        admin_user: Any = UserInfo("kubernetes-admin", "", ("system:masters", "system:authenticated"))
        node_user: Any = UserInfo(f"system:node:{NODE}", "", ("system:nodes", "system:authenticated"))
    except ImportError:                 # a checkout before issue 12: users are names, nothing authorized
        admin_user, node_user = "admin", "kubelet"
    admin = Clientset(InProcessTransport(api, admin_user))
    await admin.core_v1().serviceaccounts("default").create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    await admin.core_v1().nodes().create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    kubelet = Clientset(InProcessTransport(api, node_user, "kubelet"))
    pods: dict[str, Any] = {}
    try:
        sm = StatusManager(kubelet, get_pod=pods.get, clientset_for=lambda node: kubelet)
    except TypeError:                       # before the status manager wrote as each node
        sm = StatusManager(kubelet, get_pod=pods.get)
    return admin, sm, pods


async def _batch(admin: Any, sm: Any, pods: dict[str, Any], first: int, n: int, switch: Any, only: str) -> int:
    """n pods through the status path, phase by phase (switch(True/False) around the counted
    phases: few switches, each costs a process spawn). Returns the status writes per pod (3
    before the kubelet reported observedGeneration, else 4)."""
    pc = admin.core_v1().pods("default")
    writes = sm.writes
    mine = []
    for k in range(first, first + n):
        pod = await pc.create({"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": f"p{k}", "labels": {"app": "web"}},
                               "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "nginx"}]}})
        pods[pod.metadata.uid] = pod
        mine.append((k, pod.metadata.uid, _statuses(f"kubeplane-sim://{k:064x}")))

    async def write(i: int, count: bool) -> None:
        todo = [(uid, _observed(pods[uid], sts[i])) for _, uid, sts in mine]
        switch(count)
        for uid, st in todo:
            sm.set_pod_status(pods[uid], st)
            await sm.sync_pod(uid)
        switch(False)
    await write(0, only != "delete")             # pending
    await write(1, only != "delete")             # running
    for k, uid, _ in mine:                       # graceful: the ReplicaSet controller's
        await pc.delete(f"p{k}")
        pods[uid] = await pc.get(f"p{k}")
    await write(2, only != "delete")             # terminating
    await write(3, only != "delete")             # terminal
    for _, uid, _ in mine:
        sm.mark_pod_deletable(pods[uid])
    switch(only != "patch")                      # the final deletes (nothing left to write)
    for _, uid, _ in mine:
        await sm.sync_pod(uid)
    switch(False)
    for _, uid, _ in mine:
        assert sm.get_pod_status(uid) is None, "the pod was not deleted"
        del pods[uid]
    return (sm.writes - writes) // n


async def _run(n: int, counted: bool, only: str) -> float:
    import gc
    admin, sm, pods = await _setup()
    gc.set_threshold(50000, 50, 100)
    state = {"on": False}

    def switch(on: bool) -> None:
        if counted and on != state["on"]:
            from instructions import _switch
            _switch(os.getpid(), on)
        state["on"] = on

    writes = await _batch(admin, sm, pods, 0, 50, lambda on: None, only)      # warm-up
    best = float("inf")
    for rep in range(1 if counted else 5):
        t = time.process_time()
        await _batch(admin, sm, pods, 1000 + rep * n, n, switch, only)
        best = min(best, time.process_time() - t)
    print(f"{writes} status writes per pod", file=sys.stderr)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--src", default=str(HERE.parent))
    ap.add_argument("--only", choices=["", "patch", "delete"], default="")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        asyncio.run(_run(a.n, True, a.only))
        return
    if not a.callgrind:
        best = asyncio.run(_run(a.n, False, a.only))
        print(f"{best / a.n * 1e6:.0f} µs CPU per pod (whole cycle incl. uncounted create/delete/get)")
        return
    from instructions import _callgrind, _total
    with tempfile.TemporaryDirectory(prefix="status-instr-") as tmp:
        data = pathlib.Path(tmp)
        env = dict(os.environ, PYTHONPATH=f"{a.src}/src")
        subprocess.run([*_callgrind(data / "cg.out"), sys.executable, __file__, "--child", "-n", str(a.n),
                        "--only", a.only], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = _total(data)
    print(f"{a.src}: {total / a.n:,.0f} instructions per pod ({a.only or 'patches + final delete'})")


if __name__ == "__main__":
    main()
