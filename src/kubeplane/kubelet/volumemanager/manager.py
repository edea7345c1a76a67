"""A pod's volumes as real files on the host, and each container's mounts of them.

    vm = VolumeManager(root, source=api_source, clock=clock, events=emit)
    await vm.setup(pod)                       # MountError: FailedMount, the pod waits and retries
    mounts = vm.container_mounts(pod, container, env)      # for mountns.enter (SubPathError)
    vm.teardown(uid)                          # unmounts what setup mounted; the runtime removes the dir

Where each volume's files are (the kubelet's layout, under the runtime's root):
- emptyDir, configMap, secret, downwardAPI, projected: pods/<uid>/volumes/<plugin>/<name>,
  plugin being upstream's escaped name (kubernetes.io~empty-dir, kubernetes.io~configmap, ...).
  An emptyDir with medium Memory, and every secret volume, is a tmpfs (sizeLimit as its size)
  when the runtime may mount (root); otherwise a plain directory, said once in the log.
- hostPath: the host's path itself, after upstream's type checks (DirectoryOrCreate makes it).
- persistentVolumeClaim: the bound PV's hostPath or local path; the paths the simulated
  local-path provisioner gives (/var/local-path-provisioner/...) are directories under the
  kubelet's root here (<root>/local-path-provisioner/...), made on first use, so no pod writes
  to the host's /var.
The directories of a pod are recorded in pods/<uid>/volumes.json, so that a restarted kubelet
mounts them into new container attempts before it has set the volumes up again.

Updates: configMap, secret, downwardAPI and projected volumes are written by the AtomicWriter.
Each ConfigMap and Secret a pod's volumes project is watched (source.APIVolumeSource: one watch
per object for all the pods using it); a change rewrites the volumes of those pods, so a
container reading `key` sees the new value within a watch event's delay (the kubelet: its sync
period plus the cache's TTL). A subPath mount is a bind mount of the file as it was when the
container started, so it does not change (as upstream). A projected service account token is
renewed at 80 % of its lifetime (projection.requires_refresh). A change of the pod's labels or
annotations rewrites its downwardAPI files (pod_changed, from the kubelet's pod watch).

Upstream: pkg/kubelet/volumemanager (WaitForAttachAndMount, the reconciler's
MountVolume/UnmountVolume), the emptydir, hostpath, configmap, secret, downwardapi and projected
plugins (pkg/volume/...), and kubelet_pods.go makeMounts (subPath, subPathExpr).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pathlib
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...api import quantity
from ...api.types import core_v1
from ...utils.clock import REAL_CLOCK, Clock
from . import mountns
from .atomic_writer import AtomicWriter
from .projection import Token, VolumeError, VolumeSource, collect, is_projected, referenced_objects, refresh_at

log = logging.getLogger(__name__)

PLUGIN_DIRS = {"empty_dir": "kubernetes.io~empty-dir", "config_map": "kubernetes.io~configmap",
               "secret": "kubernetes.io~secret", "downward_api": "kubernetes.io~downward-api",
               "projected": "kubernetes.io~projected"}
LOCAL_PATH_BASE = "/var/local-path-provisioner"   # controller/volume/localpath's BASE_PATH
EMPTY_DIR_MODE = 0o777                            # upstream's emptyDir perm

_OCTAL = re.compile(r"\\([0-7]{3})")          # mountinfo's escapes

EventSink = Callable[[core_v1.Pod, str, str, str], None]


class MountError(Exception):
    """A volume cannot be set up; str() is the FailedMount event's message."""

    def __init__(self, volume: str, message: str) -> None:
        super().__init__(f'MountVolume.SetUp failed for volume "{volume}" : {message}')
        self.volume = volume


class _Gone(Exception):
    """The pod was torn down while one of its volumes was being set up."""


class SubPathError(Exception):
    """A volumeMount's subPath cannot be prepared (CreateContainerConfigError)."""


@dataclass
class _PodVolumes:
    pod: core_v1.Pod
    node: str
    dirs: dict[str, str] = field(default_factory=dict)         # volume name -> its files on the host
    tokens: dict[str, dict[str, Token]] = field(default_factory=dict)   # volume -> path -> token
    watches: list[Any] = field(default_factory=list)
    timer: asyncio.Task[None] | None = None
    refreshing: asyncio.Task[None] | None = None
    again: bool = False                                         # changed while refreshing


class VolumeManager:
    """The volumes of every pod of a process runtime (see the module docstring)."""

    def __init__(self, root: pathlib.Path, *, source_for: Callable[[str], VolumeSource],
                 watch: Callable[..., Any] | None = None, clock: Clock = REAL_CLOCK,
                 events: EventSink | None = None, can_mount: bool | None = None) -> None:
        self.root = root
        self.source_for = source_for          # node name -> its VolumeSource
        self.watch = watch                    # APIVolumeSource.watch, or None: no updates
        self.clock = clock
        self.events = events
        self._can_mount = can_mount
        self._pods: dict[str, _PodVolumes] = {}
        self._told: set[str] = set()

    @property
    def can_mount(self) -> bool:
        """Whether mounts (tmpfs here, mount namespaces for containers) are possible: root, and
        a kernel that allows them here."""
        if self._can_mount is None:
            self._can_mount = os.geteuid() == 0 and mountns.supported()
            if not self._can_mount:
                log.warning("The process runtime cannot create mount namespaces (not root, or not allowed): "
                            "containers see their volumes through symlinks under $KUBEPLANE_ROOT "
                            "(pods/<uid>/rootfs/<container>), not at their mountPath; see README")
        return self._can_mount

    def pod_dir(self, uid: str) -> pathlib.Path:
        return self.root / "pods" / uid

    # --- setting up ---------------------------------------------------------------------------

    async def setup(self, pod: core_v1.Pod) -> None:
        """Make every volume of the pod exist (idempotent: a second call rewrites payloads)."""
        uid = pod.metadata.uid or ""
        pv = self._pods.get(uid)
        if pv is None:
            pv = self._pods[uid] = _PodVolumes(pod, (pod.spec.node_name if pod.spec else "") or "")
        pv.pod = pod
        for v in (pod.spec.volumes if pod.spec else None) or ():
            if self._pods.get(uid) is not pv:
                return                           # torn down meanwhile: write nothing more
            try:
                pv.dirs[v.name or ""] = await self._setup_volume(pv, v)
            except _Gone:
                return
            except Exception as err:             # API errors (forbidden, ...) too: upstream's text
                raise MountError(v.name or "", str(err)) from None
        if self._pods.get(uid) is pv:
            _write_json(self.pod_dir(uid) / "volumes.json", pv.dirs)
            self._arm(pv)

    def unmounted(self, pod: core_v1.Pod) -> list[str]:
        """The pod's volumes not (yet) set up."""
        pv = self._pods.get(pod.metadata.uid or "")
        done = pv.dirs if pv is not None else {}
        return [v.name or "" for v in (pod.spec.volumes if pod.spec else None) or () if (v.name or "") not in done]

    async def _setup_volume(self, pv: _PodVolumes, v: core_v1.Volume) -> str:
        uid = pv.pod.metadata.uid or ""
        if v.host_path is not None:
            return check_host_path(v.host_path.path or "", v.host_path.type or "")
        if v.persistent_volume_claim is not None:
            path = await self._claim_path(pv, v.persistent_volume_claim.claim_name or "")
            return check_host_path(path, "DirectoryOrCreate")
        plugin = next((d for k, d in PLUGIN_DIRS.items() if getattr(v, k) is not None), None)
        if plugin is None:
            if "unsupported" not in self._told:
                self._told.add("unsupported")
                log.warning("Volume type not supported by the process runtime: an empty directory stands in",
                            extra={"volume": v.name, "podUID": uid})
            plugin = PLUGIN_DIRS["empty_dir"]
        d = self.pod_dir(uid) / "volumes" / plugin / (v.name or "")
        fresh = not d.exists()
        d.mkdir(parents=True, exist_ok=True, mode=0o750)
        if v.empty_dir is not None or plugin == PLUGIN_DIRS["empty_dir"]:
            memory = v.empty_dir is not None and v.empty_dir.medium == "Memory"
            if memory:
                self._tmpfs(d, v.empty_dir.size_limit if v.empty_dir else None)
            if fresh or memory:
                d.chmod(EMPTY_DIR_MODE)
            return str(d)
        if v.secret is not None:
            self._tmpfs(d, None)                 # secrets never touch a disk (upstream: a Memory emptyDir)
        tokens = pv.tokens.setdefault(v.name or "", {})
        payload = await collect(pv.pod, v, self.source_for(pv.node), tokens, self.clock.now())
        if self._pods.get(uid) is not pv:
            raise _Gone
        AtomicWriter(d, f"{uid}/{v.name}").write(payload)
        return str(d)

    async def _claim_path(self, pv: _PodVolumes, claim: str) -> str:
        src = self.source_for(pv.node)
        claim_path = getattr(src, "claim_path", None)
        if claim_path is None:
            raise LookupError(f"error processing PVC {pv.pod.metadata.namespace}/{claim}: no API access")
        path: str = await claim_path(pv.pod.metadata.namespace or "", claim)
        if self._pods.get(pv.pod.metadata.uid or "") is not pv:
            raise _Gone
        if path == LOCAL_PATH_BASE or path.startswith(LOCAL_PATH_BASE + "/"):
            path = str(self.root / "local-path-provisioner") + path[len(LOCAL_PATH_BASE):]
        return path

    def _tmpfs(self, d: pathlib.Path, size_limit: Any) -> None:
        if os.path.ismount(d) or not self.can_mount:
            return
        opts = "mode=0777"
        if size_limit not in (None, "", 0):
            opts += f",size={quantity.parse(size_limit).int_value()}"
        try:
            mountns.mount("tmpfs", str(d), "tmpfs", mountns.MS_NOSUID | mountns.MS_NODEV, opts)
        except OSError as err:
            log.warning("tmpfs for a volume failed: a plain directory stands in", extra={"path": str(d), "err": str(err)})

    # --- updates ----------------------------------------------------------------------------

    def _arm(self, pv: _PodVolumes) -> None:
        """Watch what the pod's volumes project, and time the next token renewal."""
        if self.watch is not None and not pv.watches:
            ns = pv.pod.metadata.namespace or "default"
            refs = {ref for v in (pv.pod.spec.volumes or ()) if is_projected(v) for ref in referenced_objects(v)}
            uid = pv.pod.metadata.uid or ""
            for kind, name in sorted(refs):
                pv.watches.append(self.watch(pv.node, kind, ns, name, lambda u=uid: self._changed(u)))
        due = [refresh_at(t) for toks in pv.tokens.values() for t in toks.values()]
        if pv.timer is not None:
            pv.timer.cancel()
            pv.timer = None
        if due:
            pv.timer = asyncio.ensure_future(self._renew_at(pv.pod.metadata.uid or "", min(due)))

    async def _renew_at(self, uid: str, when: float) -> None:
        await self.clock.sleep(max(0.0, when - self.clock.now()))
        pv = self._pods.get(uid)
        if pv is not None:
            pv.timer = None
            self._changed(uid)

    def pod_changed(self, pod: core_v1.Pod) -> None:
        """The pod's metadata changed: rewrite its volumes if any projects the downward API."""
        pv = self._pods.get(pod.metadata.uid or "")
        if pv is None:
            return
        pv.pod = pod
        if any(v.downward_api is not None or (v.projected is not None and any(
                s.downward_api is not None for s in v.projected.sources or ())) for v in pod.spec.volumes or ()):
            self._changed(pod.metadata.uid or "")

    def _changed(self, uid: str) -> None:
        """Something a pod's volumes project changed: rewrite them, one rewrite at a time (a
        change during one makes another follow it)."""
        pv = self._pods.get(uid)
        if pv is None:
            return
        if pv.refreshing is not None and not pv.refreshing.done():
            pv.again = True
            return
        pv.refreshing = asyncio.ensure_future(self._refresh_until_current(uid))

    async def _refresh_until_current(self, uid: str) -> None:
        while (pv := self._pods.get(uid)) is not None:
            pv.again = False
            await self.refresh(uid)
            if not pv.again:
                return

    async def refresh(self, uid: str) -> None:
        """Rewrite the pod's configMap, secret, downwardAPI and projected volumes (FailedMount
        on error, the files left as they were). Upstream: the reconciler's remount."""
        pv = self._pods.get(uid)
        if pv is None:
            return
        for v in pv.pod.spec.volumes or ():
            if not is_projected(v) or (v.name or "") not in pv.dirs:
                continue
            try:
                tokens = pv.tokens.setdefault(v.name or "", {})
                payload = await collect(pv.pod, v, self.source_for(pv.node), tokens, self.clock.now())
                if uid in self._pods:
                    AtomicWriter(pv.dirs[v.name or ""], f"{uid}/{v.name}").write(payload)
            except Exception as err:
                self._event(pv.pod, "Warning", "FailedMount", str(MountError(v.name or "", str(err))))
        if uid in self._pods:
            self._arm(pv)

    def _event(self, pod: core_v1.Pod, type_: str, reason: str, message: str) -> None:
        if self.events is not None:
            self.events(pod, type_, reason, message)

    # --- a container's mounts ---------------------------------------------------------------

    def container_mounts(self, pod: core_v1.Pod, c: core_v1.Container, env: dict[str, str]) -> list[dict[str, Any]]:
        """Each volumeMount as {"source", "target", "readOnly", "file"} for mountns.enter.

        subPath (or subPathExpr expanded with the container's environment) selects a path in
        the volume, created as a directory when missing, resolved on the host and refused when
        it leaves the volume (a symlink pointing out). Upstream: makeMounts (kubelet_pods.go)
        """
        from ..runtime.process.env import expand      # (the runtime imports this module)
        uid = pod.metadata.uid or ""
        pv = self._pods.get(uid)
        dirs = pv.dirs if pv is not None and pv.dirs else _read_json(self.pod_dir(uid) / "volumes.json")
        out = []
        for vm in c.volume_mounts or ():
            base = dirs.get(vm.name or "")
            if base is None:
                raise SubPathError(f'cannot find volume "{vm.name}" to mount into container "{c.name}"')
            sub = vm.sub_path or (expand(vm.sub_path_expr, env) if vm.sub_path_expr else "")
            source = subpath_source(base, sub, vm.name or "", c.name or "") if sub else base
            out.append({"source": source, "target": vm.mount_path or "", "readOnly": bool(vm.read_only),
                        "file": not os.path.isdir(source)})
        return out

    def symlink_root(self, pod: core_v1.Pod, c: core_v1.Container, mounts: list[dict[str, Any]]) -> str:
        """Without mount namespaces: pods/<uid>/rootfs/<container>/<mountPath> symlinks to each
        mount's source, the directory returned (the container gets it as $KUBEPLANE_ROOT)."""
        top = self.pod_dir(pod.metadata.uid or "") / "rootfs" / (c.name or "")
        for m in mounts:
            link = top / m["target"].lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
            link.symlink_to(m["source"])
        return str(top)

    # --- tearing down -----------------------------------------------------------------------

    def forget(self, uid: str) -> None:
        """Stop following the pod's objects and timers (its files stay)."""
        pv = self._pods.pop(uid, None)
        if pv is None:
            return
        for w in pv.watches:
            w.stop()
        for t in (pv.timer, pv.refreshing):
            if t is not None:
                t.cancel()

    def teardown(self, uid: str) -> None:
        """Forget the pod and unmount everything mounted under its directory (deepest first),
        from the host's mount table, so it works as well after a kill -9 of the kubelet."""
        self.forget(uid)
        unmount_under(self.pod_dir(uid))

    def close(self) -> None:
        for uid in list(self._pods):
            self.forget(uid)


def subpath_source(base: str, sub: str, volume: str, container: str) -> str:
    """The host path a subPath mount binds: base/sub resolved, created as a directory if
    missing, refused if it resolves outside the volume. Upstream: makeMounts + the subpath
    package's safe checks (doSafeMakeDir, and "subpath ... not within volume path")."""
    refused = f'failed to prepare subPath for volumeMount "{volume}" of container "{container}"'
    if os.path.isabs(sub) or ".." in sub.split("/"):
        raise SubPathError(refused)
    path = os.path.join(base, sub)
    real, real_base = os.path.realpath(path), os.path.realpath(base)
    if real != real_base and not real.startswith(real_base.rstrip("/") + "/"):
        # The details stay in the log: they would tell the pod's author about the host's files.
        log.error("subpath not within volume path", extra={"subpath": path, "volumePath": base})
        raise SubPathError(refused)
    if not os.path.lexists(real):
        try:
            os.makedirs(real, mode=0o755, exist_ok=True)
        except OSError as err:
            log.error("Failed to create subPath directory", extra={"subpath": path, "err": str(err)})
            raise SubPathError(f'failed to create subPath directory for volumeMount "{volume}" of container '
                               f'"{container}"') from None
    return real


def check_host_path(path: str, type_: str) -> str:
    """Upstream's hostPath type checks (hostpath.checkType); DirectoryOrCreate and
    FileOrCreate make what is missing (0755 directories, an empty 0644 file)."""
    if not os.path.isabs(path):
        raise VolumeError(f"invalid HostPath `{path}`: must be an absolute path")
    exists = os.path.exists(path)
    if type_ == "DirectoryOrCreate" and not exists:
        os.makedirs(path, mode=0o755, exist_ok=True)
        return path
    if type_ == "FileOrCreate" and not exists:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
        return path
    checks = {"DirectoryOrCreate": (stat.S_ISDIR, "is not a directory"), "Directory": (stat.S_ISDIR, "is not a directory"),
              "FileOrCreate": (stat.S_ISREG, "is not a file"), "File": (stat.S_ISREG, "is not a file"),
              "Socket": (stat.S_ISSOCK, "is not a socket file"), "CharDevice": (stat.S_ISCHR, "is not a character device"),
              "BlockDevice": (stat.S_ISBLK, "is not a block device")}
    if type_ == "":
        return path                               # no check (upstream's default)
    if type_ not in checks:
        raise VolumeError(f"{type_} is an invalid volume type")
    test, what = checks[type_]
    try:
        ok = test(os.stat(path).st_mode)
    except OSError:
        ok = False
    if not ok:
        raise VolumeError(f"hostPath type check failed: {path} {what}")
    return path


def mounts_under(top: pathlib.Path) -> list[str]:
    """Mount points of this mount namespace at or under top, deepest first (/proc/self/mountinfo)."""
    prefix = str(top).rstrip("/") + "/"
    found = []
    try:
        lines = pathlib.Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            point = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[4])      # \040 for a space
            if point.startswith(prefix) or point == str(top):
                found.append(point)
    return sorted(set(found), key=lambda p: p.count("/"), reverse=True)


def unmount_under(top: pathlib.Path) -> None:
    for point in mounts_under(top):
        try:
            mountns.umount(point)
        except OSError as err:
            log.warning("Unmounting a volume failed", extra={"path": point, "err": str(err)})


def _write_json(path: pathlib.Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


def _read_json(path: pathlib.Path) -> dict[str, str]:
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}
