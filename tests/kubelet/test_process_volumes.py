"""The process runtime's volumes with real processes: files at their mountPath in a mount
namespace per container (skipped where one cannot be made), FailedMount until a ConfigMap
exists, ConfigMap updates reaching the files through the kubelet's watches, clean-up."""
from __future__ import annotations

import asyncio
import os
import pathlib
from typing import Any, AsyncIterator

import pytest

from kubeplane.api import errors
from kubeplane.kubelet.kubelet import Kubelet
from kubeplane.kubelet.runtime import EXITED
from kubeplane.kubelet.runtime.process import ProcessRuntime
from kubeplane.kubelet.runtime.process.records import kill_recorded
from kubeplane.kubelet.volumemanager import mountns
from kubeplane.kubelet.volumemanager.manager import mounts_under
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import REAL_CLOCK

from process_testutil import PY, eventually, make_pod, read_all

CAN_MOUNT = os.geteuid() == 0 and mountns.supported()
needs_mounts = pytest.mark.skipif(not CAN_MOUNT, reason="mount namespaces cannot be created here (needs root "
                                                         "and unshare(CLONE_NEWNS))")


@pytest.fixture
async def rt(tmp_path: Any) -> AsyncIterator[ProcessRuntime]:
    events: list[tuple[str, str, str]] = []
    data: dict[tuple[str, str, str], dict[str, str]] = {}

    async def lookup(kind: str, ns: str, name: str) -> dict[str, str] | None:
        return data.get((kind, ns, name))

    r = ProcessRuntime(root_dir=tmp_path / "kubelet", lookup=lookup,
                       events=lambda ref, t, reason, msg: events.append((t, reason, msg)))
    r.recorded, r.data = events, data            # type: ignore[attr-defined]
    try:
        yield r
    finally:
        await r.stop_all()
        for uid in list(r._pods):
            r.remove_pod(uid)
    assert mounts_under(tmp_path) == []


def _on_host(path: str) -> bool:
    return os.path.lexists(path)


def _status(rt: ProcessRuntime, name: str) -> Any:
    st = rt.pod_status("uid-1")
    return st.latest(name) if st else None


async def _logs(rt: ProcessRuntime, name: str) -> str:
    from kubeplane.api.podlog import LogOptions
    return (await read_all(rt.container_logs("uid-1", "p", LogOptions(name)))).decode()


@needs_mounts
async def test_containers_see_their_volumes_at_their_mount_paths(rt: ProcessRuntime, tmp_path: pathlib.Path) -> None:
    rt.data[("ConfigMap", "default", "cfg")] = {"greeting": "hello", "app.conf": "x=1"}   # type: ignore[attr-defined]
    host_dir = tmp_path / "host"
    writer = ("import pathlib, time\n"
              "pathlib.Path('/shared/from-writer').write_text('shared!')\n"
              "time.sleep(30)\n")
    reader = ("import os, pathlib, time\n"
              "while not os.path.exists('/shared/from-writer'): time.sleep(0.05)\n"
              "print('cfg', open('/etc/cfg/greeting').read())\n"
              "print('sub', open('/etc/app.conf').read())\n"
              "print('shared', open('/shared/from-writer').read())\n"
              "print('labels', open('/etc/info/labels').read())\n"
              "print('host', sorted(os.listdir('/host')))\n"
              "try:\n open('/etc/cfg/new', 'w')\nexcept OSError as e: print('ro', e.errno)\n"
              "print('cwd', os.getcwd())\n")
    pod = make_pod([
        {"name": "writer", "image": "python:3", "command": [PY, "-c", writer],
         "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]},
        {"name": "reader", "image": "python:3", "command": [PY, "-c", reader], "workingDir": "/shared",
         "volumeMounts": [{"name": "shared", "mountPath": "/shared"},
                          {"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True},
                          {"name": "cfg", "mountPath": "/etc/app.conf", "subPath": "app.conf"},
                          {"name": "info", "mountPath": "/etc/info"},
                          {"name": "host", "mountPath": "/host"}]}],
        volumes=[{"name": "shared", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "cfg"}},
                 {"name": "info", "downwardAPI": {"items": [{"path": "labels",
                                                             "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                 {"name": "host", "hostPath": {"path": str(host_dir), "type": "DirectoryOrCreate"}}])
    rt.run_pod_sandbox(pod)
    await eventually(lambda: rt.pod_status("uid-1").sandbox.state == "Ready", what="volumes set up")
    for c in pod.spec.containers:
        rt.start_container(pod, c, init=False, attempt=0)
    await eventually(lambda: (s := _status(rt, "reader")) is not None and s.state == EXITED, what="reader exits")
    assert _status(rt, "reader").exit_code == 0, await _logs(rt, "reader")
    out = await _logs(rt, "reader")
    assert "cfg hello" in out and "sub x=1" in out and "shared shared!" in out
    assert 'labels app="x"' in out and "host []" in out and "ro 30" in out and "cwd /shared" in out
    vol = tmp_path / "kubelet/pods/uid-1/volumes"
    assert (vol / "kubernetes.io~empty-dir/shared/from-writer").read_text() == "shared!"
    assert os.readlink(vol / "kubernetes.io~configmap/cfg/greeting") == "..data/greeting"
    assert host_dir.is_dir()
    assert not _on_host("/etc/cfg") and not _on_host("/shared")     # nothing on the host


@needs_mounts
async def test_missing_config_map_is_failed_mount_until_it_exists(rt: ProcessRuntime) -> None:
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "print(open('/cfg/k').read())"],
                     "volumeMounts": [{"name": "v", "mountPath": "/cfg"}]}],
                   volumes=[{"name": "v", "configMap": {"name": "late"}}, {"name": "opt", "secret": {
                       "secretName": "none", "optional": True}}])
    rt.run_pod_sandbox(pod)
    want = ("Warning", "FailedMount", 'MountVolume.SetUp failed for volume "v" : configmap "late" not found')
    await eventually(lambda: want in rt.recorded, what="FailedMount")       # type: ignore[attr-defined]
    assert rt.pod_status("uid-1").sandbox.state == "NotReady"
    rt.data[("ConfigMap", "default", "late")] = {"k": "now"}                 # type: ignore[attr-defined]
    await eventually(lambda: rt.pod_status("uid-1").sandbox.state == "Ready", timeout=5, what="retried")
    rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    await eventually(lambda: (s := _status(rt, "c")) is not None and s.state == EXITED, what="exit")
    assert (await _logs(rt, "c")).strip() == "now"


@needs_mounts
async def test_subpath_out_of_the_volume_is_a_config_error(rt: ProcessRuntime, tmp_path: pathlib.Path) -> None:
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "pass"],
                     "volumeMounts": [{"name": "v", "mountPath": "/x", "subPathExpr": "$(WHERE)"}],
                     "env": [{"name": "WHERE", "value": "escape"}]}],
                   volumes=[{"name": "v", "emptyDir": {}}])
    rt.run_pod_sandbox(pod)
    await eventually(lambda: rt.pod_status("uid-1").sandbox.state == "Ready", what="set up")
    (tmp_path / "kubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/v/escape").symlink_to("/")
    rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    st = await eventually(lambda: (s := _status(rt, "c")) is not None and s.reason and s, what="refused")
    assert st.reason == "CreateContainerConfigError"
    assert st.message == 'failed to prepare subPath for volumeMount "v" of container "c"'      # no host paths


async def test_memory_empty_dir_is_a_tmpfs_unmounted_with_the_pod(rt: ProcessRuntime, tmp_path: pathlib.Path) -> None:
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "pass"]}],
                   volumes=[{"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}])
    rt.run_pod_sandbox(pod)
    await eventually(lambda: rt.pod_status("uid-1").sandbox.state == "Ready", what="set up")
    d = tmp_path / "kubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/m"
    assert d.is_dir() and d.is_mount() == CAN_MOUNT
    rt.remove_pod("uid-1")
    assert not d.exists() and mounts_under(tmp_path) == []


# --- with a kubelet: the API's objects, events and updates -----------------------------------

@pytest.fixture
async def kenv(tmp_path: Any) -> AsyncIterator[tuple[FakeClientset, Kubelet]]:
    cs = await FakeClientset.new(clock=REAL_CLOCK)
    kl = Kubelet(cs, node_names=["node-0"], runtime=ProcessRuntime(root_dir=tmp_path, shutdown_grace=1),
                 clock=REAL_CLOCK)
    task = asyncio.ensure_future(kl.run())
    try:
        await eventually(lambda: "node-0" in kl.nodes, what="node registered")
        yield cs, kl
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        kill_recorded(tmp_path)


@needs_mounts
async def test_config_map_updates_reach_the_mounted_files_but_not_subpaths(kenv: Any) -> None:
    cs, kl = kenv
    cms = cs.core_v1().configmaps("default")
    await cms.create({"metadata": {"name": "cfg"}, "data": {"v": "one"}})
    loop = ("import time\n"
            "for _ in range(400):\n"
            "    print(open('/cfg/v').read(), open('/sub').read(), flush=True); time.sleep(0.05)\n")
    await cs.core_v1().pods("default").create({"metadata": {"name": "p"}, "spec": {
        "nodeName": "node-0", "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": "python:3", "command": [PY, "-c", loop],
                        "volumeMounts": [{"name": "v", "mountPath": "/cfg"},
                                         {"name": "v", "mountPath": "/sub", "subPath": "v"}]}],
        "volumes": [{"name": "v", "configMap": {"name": "cfg"}}]}})

    async def log_text() -> str:
        from kubeplane.api.podlog import LogOptions
        p = await cs.core_v1().pods("default").get("p")
        try:
            return (await read_all(kl.container_logs("default", "p", p.metadata.uid, LogOptions("c")))).decode()
        except (errors.BadRequest, errors.NotFound):
            return ""

    await eventually(lambda: _has(log_text(), "one one"), timeout=10, what="first value")
    cm = await cms.get("cfg")
    cm.data = {"v": "two"}
    await cms.update(cm)
    await eventually(lambda: _has(log_text(), "two one"), timeout=10, what="the update, not in the subPath")
    uid = (await cs.core_v1().pods("default").get("p")).metadata.uid
    await cs.core_v1().pods("default").delete("p")
    pod_dir = pathlib.Path(kl.runtime.root) / "pods" / uid
    await eventually(lambda: not pod_dir.exists(), timeout=10, what="pod directory removed")
    assert kl.runtime.volume_source._watches == {}              # the watch went with the pod


async def _has(text: Any, needle: str) -> bool:
    return needle in await text


@needs_mounts
async def test_a_restarted_runtime_unmounts_the_volumes_of_pods_gone_meanwhile(tmp_path: pathlib.Path) -> None:
    """kill -9 of the kubelet: nothing is unmounted; the next runtime on the root finds the pod
    (list_pods), and its removal (the pod was deleted meanwhile) unmounts its tmpfs volumes."""
    first = ProcessRuntime(root_dir=tmp_path)
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "pass"]}],
                   volumes=[{"name": "s", "secret": {"secretName": "x", "optional": True}}])
    first.run_pod_sandbox(pod)
    await eventually(lambda: first.pod_status("uid-1").sandbox.state == "Ready", what="set up")
    assert len(mounts_under(tmp_path)) == 1              # a secret volume is a tmpfs
    first._detach()                                      # as after a kill -9: nothing torn down
    second = ProcessRuntime(root_dir=tmp_path)
    try:
        assert second.list_pods() == ["uid-1"]
        second.remove_pod("uid-1")
        assert mounts_under(tmp_path) == [] and not (tmp_path / "pods/uid-1").exists()
    finally:
        second.close()


async def test_a_restarted_runtime_keeps_a_stopped_sandbox_stopped(tmp_path: pathlib.Path) -> None:
    """pod.json records the stop: the next runtime sets up no volumes of that sandbox again."""
    first = ProcessRuntime(root_dir=tmp_path)
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "pass"]}],
                   volumes=[{"name": "e", "emptyDir": {}}])
    first.run_pod_sandbox(pod)
    await eventually(lambda: first.pod_status("uid-1").sandbox.state == "Ready", what="set up")
    first.stop_pod_sandbox("uid-1")
    assert not (tmp_path / "pods/uid-1/volumes").exists()
    first._detach()
    second = ProcessRuntime(root_dir=tmp_path)
    try:
        assert second.restore_pod(pod)
        p = second._pods["uid-1"]
        assert (p.stopped, p.sandbox_ready, p.ip, p.netns) == (True, False, "", "")
        for _ in range(20):
            await asyncio.sleep(0)
        assert not (tmp_path / "pods/uid-1/volumes").exists()
    finally:
        second.close()


async def test_downward_api_files_follow_label_changes(kenv: Any) -> None:
    cs, kl = kenv
    pods = cs.core_v1().pods("default")
    await pods.create({"metadata": {"name": "d", "labels": {"tier": "one"}}, "spec": {
        "nodeName": "node-0", "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": "python:3", "command": [PY, "-c", "import time; time.sleep(60)"]}],
        "volumes": [{"name": "info", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}})
    uid = (await pods.get("d")).metadata.uid
    f = pathlib.Path(kl.runtime.root) / "pods" / uid / "volumes/kubernetes.io~downward-api/info/labels"
    await eventually(lambda: f.exists() and f.read_text() == 'tier="one"', timeout=10, what="first labels")
    p = await pods.get("d")
    p.metadata.labels = {"tier": "two"}
    await pods.update(p)
    await eventually(lambda: f.read_text() == 'tier="two"', timeout=10, what="the new labels")
    await pods.delete("d")


async def test_without_mount_namespaces_volumes_are_symlinks_under_kubeplane_root(rt: ProcessRuntime) -> None:
    """The documented equivalent where mount namespaces cannot be made (forced off here)."""
    rt.pod_volumes.manager._can_mount = False
    rt.data[("ConfigMap", "default", "cfg")] = {"k": "v1"}                   # type: ignore[attr-defined]
    code = "import os; print(open(os.environ['KUBEPLANE_ROOT'] + '/etc/cfg/k').read())"
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", code],
                     "volumeMounts": [{"name": "v", "mountPath": "/etc/cfg"}]}],
                   volumes=[{"name": "v", "configMap": {"name": "cfg"}}])
    rt.run_pod_sandbox(pod)
    await eventually(lambda: rt.pod_status("uid-1").sandbox.state == "Ready", what="set up")
    rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    await eventually(lambda: (s := _status(rt, "c")) is not None and s.state == EXITED, what="exit")
    assert (await _logs(rt, "c")).strip() == "v1"


async def test_object_watches_fire_on_changes_and_on_a_change_missed_between_read_and_watch() -> None:
    from kubeplane.kubelet.volumemanager.source import APIVolumeSource
    cs = await FakeClientset.new(clock=REAL_CLOCK)
    cms = cs.core_v1().configmaps("default")
    await cms.create({"metadata": {"name": "a"}, "data": {"k": "1"}})
    await cms.create({"metadata": {"name": "b"}, "data": {"k": "1"}})
    src = APIVolumeSource(lambda node: cs, REAL_CLOCK)
    node = src.for_node("n")
    assert (await node.configmap("default", "a")).data == {"k": "1"}
    assert (await node.configmap("default", "b")).data == {"k": "1"}
    assert await node.configmap("default", "absent") is None
    cm = await cms.get("b")
    cm.data = {"k": "2"}
    await cms.update(cm)                         # b changes after its read, before its watch
    fired: list[str] = []
    handles = [src.watch("n", "ConfigMap", "default", n, lambda n=n: fired.append(n)) for n in ("a", "b", "absent")]
    await eventually(lambda: fired == ["b"], what="the missed change of b")
    cm = await cms.get("a")
    cm.data = {"k": "2"}
    await cms.update(cm)
    await cms.create({"metadata": {"name": "absent"}, "data": {}})
    await eventually(lambda: sorted(fired) == ["a", "absent", "b"], what="a's update and absent's creation")
    await cms.create({"metadata": {"name": "frozen"}, "data": {"k": "1"}, "immutable": True})
    await node.configmap("default", "frozen")
    handles.append(src.watch("n", "ConfigMap", "default", "frozen", lambda: fired.append("frozen")))
    await eventually(lambda: src._watches[("n", "ConfigMap", "default", "frozen")].task is None,
                     what="the immutable object's watch to end")
    for h in handles:
        h.stop()
    assert src._watches == {} and src.read_versions == {}


@needs_mounts
async def test_exec_preexec_runs_a_command_inside_a_running_containers_mounts(rt: ProcessRuntime) -> None:
    """What kubelet streaming (exec) uses: the command sees the container's mounts and cwd."""
    import subprocess
    rt.data[("ConfigMap", "default", "cfg")] = {"k": "inside"}               # type: ignore[attr-defined]
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "import time; time.sleep(60)"],
                     "workingDir": "/etc/cfg", "volumeMounts": [{"name": "v", "mountPath": "/etc/cfg"}]},
                    {"name": "bare", "image": "python:3", "command": [PY, "-c", "import time; time.sleep(60)"]}],
                   volumes=[{"name": "v", "configMap": {"name": "cfg"}}])
    rt.run_pod_sandbox(pod)
    await eventually(lambda: rt.pod_status("uid-1").sandbox.state == "Ready", what="set up")
    cid = rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    bare = rt.start_container(pod, pod.spec.containers[1], init=False, attempt=0)
    await eventually(lambda: all((s := _status(rt, n)) is not None and s.state == "Running" for n in ("c", "bare")),
                     what="running")
    preexec = rt.exec_preexec(cid)
    assert preexec is not None
    out = await asyncio.to_thread(subprocess.run, ["sh", "-c", "pwd; cat k"], preexec_fn=preexec,
                                  capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["/etc/cfg", "inside"]
    assert rt.exec_preexec(bare) is None                 # no mounts of its own: the host's view


async def test_failing_mounts_retry_with_back_off_and_summarise_after_the_timeout(tmp_path: pathlib.Path) -> None:
    from kubeplane.utils.clock import FakeClock
    clock = FakeClock()
    events: list[str] = []
    r = ProcessRuntime(root_dir=tmp_path, clock=clock, events=lambda ref, t, reason, msg: events.append(msg))
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "pass"]}],
                   volumes=[{"name": "ok", "emptyDir": {}}, {"name": "v", "configMap": {"name": "absent"}}])
    try:
        r.run_pod_sandbox(pod)
        one = 'MountVolume.SetUp failed for volume "v" : configmap "absent" not found'
        for _ in range(50):
            await asyncio.sleep(0)
        assert events == [one]
        waited = 0.0
        for delay in (0.5, 1, 2, 4, 8, 16, 32, 64, 122):       # upstream's back-off, capped at 2m2s
            for _ in range(50):
                await asyncio.sleep(0)
            clock.step(delay)
            waited += delay
            for _ in range(50):
                await asyncio.sleep(0)
        assert events.count(one) == 10
        summary = ("Unable to attach or mount volumes: unmounted volumes=[v], unattached volumes=[], "
                   "failed to process volumes=[]: context deadline exceeded")
        assert events.count(summary) == 1 and waited >= 123
        assert r.pod_status("uid-1").sandbox.state == "NotReady"
    finally:
        r.remove_pod("uid-1")
        r.close()


@needs_mounts
async def test_a_mount_that_fails_in_the_container_is_a_start_error(rt: ProcessRuntime, tmp_path: pathlib.Path) -> None:
    """The shim's hook fails (a hostPath without a type check that does not exist): the
    attempt ends as StartError with runc's wording around the mount's error."""
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-c", "pass"],
                     "volumeMounts": [{"name": "h", "mountPath": "/h"}]}],
                   volumes=[{"name": "h", "hostPath": {"path": str(tmp_path / "absent")}}])
    rt.run_pod_sandbox(pod)
    await eventually(lambda: rt.pod_status("uid-1").sandbox.state == "Ready", what="set up")
    rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    st = await eventually(lambda: (s := _status(rt, "c")) is not None and s.state == EXITED and s, what="exit")
    assert st.reason == "StartError" and st.exit_code == 128
    assert st.message.startswith("failed to create containerd task: failed to create shim task: OCI runtime create "
                                 "failed: runc create failed: unable to start container process: error during "
                                 f"container init: [Errno 2] mount {tmp_path / 'absent'} on ")


async def test_a_finished_pods_volumes_go_and_its_logs_stay(kenv: Any) -> None:
    """restartPolicy Never, exited: the kubelet stops the sandbox, which unmounts and removes
    the volumes (the watches end); the pod object and its logs remain."""
    cs, kl = kenv
    pods = cs.core_v1().pods("default")
    await cs.core_v1().configmaps("default").create({"metadata": {"name": "c1"}, "data": {"k": "v"}})
    await pods.create({"metadata": {"name": "done"}, "spec": {
        "nodeName": "node-0", "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "python:3", "command": [PY, "-c", "print('bye')"]}],
        "volumes": [{"name": "m", "emptyDir": {"medium": "Memory"}}, {"name": "v", "configMap": {"name": "c1"}}]}})
    p = await eventually(lambda: _phase(pods, "done", "Succeeded"), timeout=10, what="the pod to finish")
    pod_dir = pathlib.Path(kl.runtime.root) / "pods" / p.metadata.uid
    await eventually(lambda: not (pod_dir / "volumes").exists(), timeout=10, what="volumes removed")
    assert mounts_under(pod_dir) == [] and kl.runtime.volume_source._watches == {}
    assert (pod_dir / "logs").is_dir()
    await pods.delete("done")


async def _phase(pods: Any, name: str, phase: str) -> Any:
    p = await pods.get(name)
    return p if p.status is not None and p.status.phase == phase else None
