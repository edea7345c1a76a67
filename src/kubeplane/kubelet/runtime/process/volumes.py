"""The process runtime's side of volumes: when a pod's sandbox is ready, and how a container
process is launched into its mounts.

- run_pod_sandbox of a pod with volumes leaves the sandbox NotReady while set_up runs the
  VolumeManager (kubelet/volumemanager); a failure is a FailedMount Warning event on the pod
  (`MountVolume.SetUp failed for volume "x" : configmap "y" not found`), retried with
  upstream's back-off (500 ms doubling to 2m2s), the containers waiting in ContainerCreating.
- launch_hooks: each container with volumeMounts (or, in a pod with a network namespace of
  its own, a resolv.conf to see at /etc/resolv.conf) gets a shim hook (shim.Hooks) that runs
  mountns.enter in its process before exec: its own mount namespace with each mount at its
  mountPath. Where mount namespaces cannot be made (not root), the documented equivalent:
  symlinks pods/<uid>/rootfs/<container>/<mountPath> -> the volume, the directory given to the
  container as $KUBEPLANE_ROOT (said once in the log; README).
- exec_preexec: for exec (kubelet streaming), the preexec_fn that joins a running container's
  mounts.

Upstream: the kubelet's WaitForAttachAndMount in SyncPod (volumes before the sandbox), and
the OCI mounts the kubelet hands the runtime (makeMounts).
"""
from __future__ import annotations

import logging
import os
import pathlib
import shutil
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ....api.types import core_v1
from ...volumemanager.manager import MountError, SubPathError, VolumeManager, unmount_under
from ...volumemanager.source import LookupVolumeSource
from ...volumemanager import mountns
from .env import ConfigError

if TYPE_CHECKING:
    from .runtime import ProcessRuntime, _Container, _Pod

log = logging.getLogger(__name__)

MOUNTNS_FILE = str(pathlib.Path(mountns.__file__).resolve())
# Upstream's exponentialBackoff for a failing volume operation (nestedpendingoperations): 500 ms
# doubling to 2m2s.
INITIAL_RETRY = 0.5
MAX_RETRY = 122.0
# Upstream: SyncPod's WaitForAttachAndMount gives up after podAttachAndMountTimeout (2m3s), with
# the summary event, and the next sync waits again.
WAIT_FOR_ATTACH_AND_MOUNT_TIMEOUT = 123.0


def has_volumes(pod: core_v1.Pod) -> bool:
    return bool(pod.spec is not None and pod.spec.volumes)


class PodVolumes:
    """The runtime's VolumeManager (made on first use: the root may be a temporary one)."""

    def __init__(self, rt: ProcessRuntime) -> None:
        self.rt = rt
        self._manager: VolumeManager | None = None

    @property
    def manager(self) -> VolumeManager:
        if self._manager is None:
            src = self.rt.volume_source
            self._manager = VolumeManager(self.rt.root, source_for=self._source_for,
                                          watch=src.watch if src is not None else None,
                                          clock=self.rt.clock, events=self._event)
        return self._manager

    def _source_for(self, node: str) -> Any:
        if self.rt.volume_source is not None:
            return self.rt.volume_source.for_node(node)
        lookup = self.rt.node_lookup(node) if self.rt.node_lookup is not None else self.rt.lookup
        return LookupVolumeSource(lookup or _no_lookup)

    async def set_up(self, p: _Pod) -> None:
        """Set the pod's volumes up, retrying with back-off until they are (or the pod goes).
        Every WAIT_FOR_ATTACH_AND_MOUNT_TIMEOUT of failing, the kubelet's summary event too."""
        delay = INITIAL_RETRY
        give_up_at = self.rt.clock.now() + WAIT_FOR_ATTACH_AND_MOUNT_TIMEOUT
        while self.rt._pods.get(p.uid) is p and not p.stopped:
            try:
                await self.manager.setup(p.pod)
            except MountError as err:
                self._event(p.pod, "Warning", "FailedMount", str(err))
                if self.rt.clock.now() >= give_up_at:
                    unmounted = " ".join(sorted(self.manager.unmounted(p.pod)))
                    self._event(p.pod, "Warning", "FailedMount",
                                f"Unable to attach or mount volumes: unmounted volumes=[{unmounted}], unattached "
                                "volumes=[], failed to process volumes=[]: context deadline exceeded")
                    give_up_at = self.rt.clock.now() + WAIT_FOR_ATTACH_AND_MOUNT_TIMEOUT
                await self.rt.clock.sleep(delay)
                delay = min(delay * 2, MAX_RETRY)
                continue
            self.rt.sandbox_volumes_ready(p)
            return

    def pod_metadata_changed(self, pod: core_v1.Pod) -> None:
        if self._manager is not None:
            self._manager.pod_changed(pod)

    def launch_hooks(self, p: _Pod, c: _Container,
                     runtime_mounts: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
        """The shim's steps that put the container into its mounts: its volumeMounts, and
        runtime_mounts (the pod's /etc/resolv.conf) except where a volumeMount has the same
        target, as containerd leaves out its /etc files the kubelet's mounts cover. None when
        there is nothing to mount; without mount namespaces, the volumes' symlinks only."""
        try:
            mounts = self.manager.container_mounts(p.pod, c.spec, c.env) if c.spec.volume_mounts else []
        except SubPathError as err:
            raise ConfigError(str(err)) from None
        if mounts and not self.manager.can_mount:
            c.env["KUBEPLANE_ROOT"] = self.manager.symlink_root(p.pod, c.spec, mounts)
            return []
        taken = {m["target"].rstrip("/") for m in mounts}
        mounts += [m for m in runtime_mounts if m["target"] not in taken]
        if not mounts or not self.manager.can_mount:
            return []
        root = p.dir / "rootfs" / (c.spec.name or "")
        root.mkdir(parents=True, exist_ok=True, mode=0o755)
        return [{"module": MOUNTNS_FILE, "func": "enter", "args": {"root": str(root), "mounts": mounts}}]

    @staticmethod
    def in_mount(hooks: list[dict[str, Any]], path: str) -> bool:
        """Whether path lies in one of the mounts the hooks make (it exists in the container only)."""
        for h in hooks:
            if h["module"] != MOUNTNS_FILE:          # the network namespace's hook mounts nothing
                continue
            for m in h["args"].get("mounts") or ():
                t = m["target"].rstrip("/")
                if path == t or path.startswith(t + "/"):
                    return True
        return False

    def exec_preexec(self, pid: int, cwd: str) -> Callable[[], None] | None:
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt"):
                return None
        except OSError:
            return None
        return lambda: mountns.join(pid, cwd)

    def tear_down(self, uid: str, *, remove: bool = False) -> None:
        """Unmount the pod's volumes (and remove their directories: remove)."""
        if self._manager is not None:
            self._manager.teardown(uid)
        else:
            unmount_under(self.rt.root / "pods" / uid)
        if remove:
            shutil.rmtree(self.rt.root / "pods" / uid / "volumes", ignore_errors=True)

    def close(self, *, unmount: bool) -> None:
        """Stop following objects; unmount every volume too when the pods go with the root."""
        if self._manager is not None:
            self._manager.close()
        if unmount and self.rt._root is not None:
            unmount_under(self.rt._root / "pods")

    def _event(self, pod: core_v1.Pod, type_: str, reason: str, message: str) -> None:
        events = self.rt.events
        if events is None:
            return
        m = pod.metadata
        ref = core_v1.ObjectReference(kind="Pod", api_version="v1", name=m.name, namespace=m.namespace, uid=m.uid)
        try:
            events(ref, type_, reason, message)
        except Exception:
            log.exception("process runtime: event sink failed")


async def _no_lookup(kind: str, namespace: str, name: str) -> dict[str, str] | None:
    return None

