"""Volumes as files: the atomic writer (upstream's tables), payloads of configMap, secret,
downwardAPI and projected volumes, hostPath checks and subPath resolution. Pure file-system
work in tmp_path; no mounts (test_process_volumes.py has those)."""
from __future__ import annotations

import asyncio
import base64
import os
import pathlib
import shutil
from typing import Any

import pytest

from kubeplane.api.types import core_v1, from_dict
from kubeplane.kubelet.volumemanager.atomic_writer import (
    DATA_DIR_NAME, MAX_FILE_NAME_LENGTH, MAX_PATH_LENGTH, AtomicWriter, FileProjection, validate_path,
)
from kubeplane.kubelet.volumemanager.manager import SubPathError, check_host_path, subpath_source
from kubeplane.kubelet.volumemanager.projection import (
    Token, VolumeError, collect, format_map, refresh_at, requires_refresh, resource_value,
)

# --- AtomicWriter -----------------------------------------------------------------------------

MAX_FILE = "a" * MAX_FILE_NAME_LENGTH
MAX_PATH = "/".join(["a" * 254] * 17)[:MAX_PATH_LENGTH]


@pytest.mark.parametrize(("path", "valid"), [
    ("i/am/well/behaved.txt", True),                        # Upstream: TestValidatePath
    ("keepyourheaddownandfollowtherules.txt", True),
    (MAX_PATH, True),
    (MAX_FILE, True),
    ("/dev/null", False),                                   # absolute failure
    ("..sneaky.txt", False),                                # reserved path
    ("hello/there/../../../../../../etc/passwd", False),    # contains doubledot 1
    ("hello/../etc/somethingbad", False),                   # contains doubledot 2
    ("", False),                                            # empty
    (MAX_PATH + "a", False),                                # too long
    (MAX_FILE + "a", False),                                # element too long
    ("..", False),
    ("..data/x", False),
])
def test_validate_path(path: str, valid: bool) -> None:
    if valid:
        validate_path(path)
    else:
        with pytest.raises(ValueError, match="invalid path"):
            validate_path(path)


def _payload(**files: str) -> dict[str, FileProjection]:
    return {k.replace("__", "/"): FileProjection(v.encode(), 0o644) for k, v in files.items()}


def _tree(d: pathlib.Path) -> dict[str, str]:
    """What a reader of the volume sees: every file reached through the user-visible names."""
    out = {}
    for top in os.listdir(d):
        if top.startswith(".."):
            continue
        p = d / top
        if p.is_dir():
            for f in p.rglob("*"):
                if f.is_file():
                    out[str(f.relative_to(d))] = f.read_text()
        else:
            out[top] = p.read_text()
    return out


def test_write_once_makes_the_data_link_and_user_visible_symlinks(tmp_path: pathlib.Path) -> None:
    w = AtomicWriter(tmp_path)
    assert w.write({"foo": FileProjection(b"foo", 0o644), "bar/zab.txt": FileProjection(b"zab", 0o600)})
    ts = os.readlink(tmp_path / DATA_DIR_NAME)
    assert ts.startswith("..") and (tmp_path / ts).is_dir()
    assert os.readlink(tmp_path / "foo") == "..data/foo"
    assert os.readlink(tmp_path / "bar") == "..data/bar"
    assert _tree(tmp_path) == {"foo": "foo", "bar/zab.txt": "zab"}
    assert (tmp_path / "bar/zab.txt").stat().st_mode & 0o777 == 0o600


# Upstream: TestUpdate's cases (first payload, next payload, what a reader sees after both).
UPDATES: list[tuple[str, dict[str, str], dict[str, str]]] = [
    ("update", {"foo": "foo", "bar": "bar"}, {"foo": "foo2", "bar": "bar2"}),
    ("no update", {"foo": "foo", "bar": "bar"}, {"foo": "foo", "bar": "bar"}),
    ("no update 2", {"foo__bar.txt": "foo", "bar__zab.txt": "bar"}, {"foo__bar.txt": "foo", "bar__zab.txt": "bar"}),
    ("add 1", {"foo__bar.txt": "foo"}, {"foo__bar.txt": "foo", "bar__zab.txt": "bar"}),
    ("add 2", {"foo__bar.txt": "foo"}, {"foo__bar.txt": "foo", "bar__zib__zab.txt": "bar"}),
    ("add 3", {"foo__bar.txt": "foo"}, {"foo__bar.txt": "foo", "foo__baz.txt": "bar"}),
    ("delete 1", {"foo__bar.txt": "foo", "bar__zab.txt": "bar"}, {"foo__bar.txt": "foo"}),
    ("delete 2", {"foo__bar__baz.txt": "foo", "bar__zab.txt": "bar"}, {"bar__zab.txt": "bar"}),
    ("delete 3", {"foo__bar__baz.txt": "foo", "foo__bar__zab.txt": "bar"}, {"foo__bar__baz.txt": "foo"}),
    ("delete 4", {"foo__bar__baz__qux.txt": "foo", "foo__bar__baz__zab.txt": "bar"}, {"foo__bar__baz__zab.txt": "bar"}),
    ("delete all", {"foo__bar__baz__qux.txt": "foo", "foo__bar__baz__zab.txt": "bar"}, {}),
    ("add and delete 1", {"foo__bar.txt": "foo"}, {"bar__baz.txt": "baz"}),
]


@pytest.mark.parametrize(("first", "second"), [(a, b) for _, a, b in UPDATES], ids=[n for n, _, _ in UPDATES])
def test_update(tmp_path: pathlib.Path, first: dict[str, str], second: dict[str, str]) -> None:
    w = AtomicWriter(tmp_path)
    w.write(_payload(**first))
    old_ts = os.readlink(tmp_path / DATA_DIR_NAME)
    wrote = w.write(_payload(**second))
    want = {k.replace("__", "/"): v for k, v in second.items()}
    assert _tree(tmp_path) == want
    changed = any(first.get(k) != v for k, v in second.items()) or bool(set(first) - set(second))
    assert wrote == changed
    new_ts = os.readlink(tmp_path / DATA_DIR_NAME)
    assert (new_ts != old_ts) == changed
    if changed:
        assert not (tmp_path / old_ts).exists()          # the old timestamped directory is gone
    tops = {k.split("/")[0] for k in want}
    assert {n for n in os.listdir(tmp_path) if not n.startswith("..")} == tops


def test_paths_to_remove(tmp_path: pathlib.Path) -> None:
    """Upstream: TestPathsToRemove — only what the new payload (and its directories) drops."""
    w = AtomicWriter(tmp_path)
    w.write(_payload(foo__bar__baz__qux="a", foo__bar__zab="b", top="c"))
    old = tmp_path / os.readlink(tmp_path / DATA_DIR_NAME)
    assert w.paths_to_remove(_payload(foo__bar__zab="b"), old) == {"foo/bar/baz", "foo/bar/baz/qux", "top"}
    assert w.paths_to_remove(_payload(foo__bar__baz__qux="a", foo__bar__zab="b", top="c"), old) == set()


def test_a_reader_holding_the_old_data_link_sees_a_whole_payload(tmp_path: pathlib.Path) -> None:
    w = AtomicWriter(tmp_path)
    w.write(_payload(a="1", b="1"))
    fd = os.open(tmp_path / DATA_DIR_NAME, os.O_RDONLY | os.O_DIRECTORY)   # what an opened dir pins
    try:
        w.write(_payload(a="2", b="2"))
        assert (tmp_path / "a").read_text() == (tmp_path / "b").read_text() == "2"
    finally:
        os.close(fd)


# --- payloads --------------------------------------------------------------------------------

class FakeSource:
    def __init__(self) -> None:
        self.configmaps: dict[str, core_v1.ConfigMap] = {
            "cfg": core_v1.ConfigMap(data={"a": "1", "b": "2"}, binary_data={"bin": base64.b64encode(b"\0\1").decode()}),
            "kube-root-ca.crt": core_v1.ConfigMap(data={"ca.crt": "CERT"})}
        self.secrets = {"sec": core_v1.Secret(data={"password": base64.b64encode(b"s3cret").decode()})}
        self.tokens = 0

    async def configmap(self, ns: str, name: str) -> core_v1.ConfigMap | None:
        return self.configmaps.get(name)

    async def secret(self, ns: str, name: str) -> core_v1.Secret | None:
        return self.secrets.get(name)

    async def token(self, pod: core_v1.Pod, audience: str, exp: int) -> Token:
        self.tokens += 1
        return Token(f"tok-{self.tokens}-{audience}", 1000.0 + exp, exp)


POD = from_dict({"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"b": "2", "a": 'q"x'},
                              "annotations": {"k": "v"}},
                 "spec": {"serviceAccountName": "sa", "containers": [
                     {"name": "c", "resources": {"limits": {"cpu": "250m", "memory": "64Mi"},
                                                 "requests": {"cpu": "100m"}}}]}}, core_v1.Pod)


def _vol(**src: Any) -> core_v1.Volume:
    return from_dict({"name": "v", **src}, core_v1.Volume)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.parametrize(("volume", "want"), [
    ({"configMap": {"name": "cfg"}}, {"a": (b"1", 0o644), "b": (b"2", 0o644), "bin": (b"\0\1", 0o644)}),
    ({"configMap": {"name": "cfg", "defaultMode": 0o400, "items": [{"key": "a", "path": "x/y.conf"},
                                                                     {"key": "b", "path": "b", "mode": 0o600}]}},
     {"x/y.conf": (b"1", 0o400), "b": (b"2", 0o600)}),
    ({"configMap": {"name": "absent", "optional": True}}, {}),
    ({"configMap": {"name": "cfg", "optional": True, "items": [{"key": "zz", "path": "zz"}]}}, {}),
    ({"secret": {"secretName": "sec"}}, {"password": (b"s3cret", 0o644)}),
    ({"secret": {"secretName": "sec", "items": [{"key": "password", "path": "pw"}], "defaultMode": 0o440}},
     {"pw": (b"s3cret", 0o440)}),
    ({"downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}},
        {"path": "k", "fieldRef": {"fieldPath": "metadata.annotations['k']"}},
        {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu", "divisor": "1m"}},
        {"path": "mem", "resourceFieldRef": {"containerName": "c", "resource": "limits.memory", "divisor": "1Mi"}}]}},
     {"labels": (b'a="q\\"x"\nb="2"', 0o644), "ns": (b"ns", 0o644), "k": (b"v", 0o644), "cpu": (b"250", 0o644),
      "mem": (b"64", 0o644)}),
    ({"projected": {"defaultMode": 0o644, "sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607, "audience": "api"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}},
     {"token": (b"tok-1-api", 0o644), "ca.crt": (b"CERT", 0o644), "namespace": (b"ns", 0o644)}),
])
def test_payloads(volume: dict[str, Any], want: dict[str, tuple[bytes, int]]) -> None:
    payload = run(collect(POD, _vol(**volume), FakeSource()))
    assert {k: (v.data, v.mode) for k, v in payload.items()} == want


@pytest.mark.parametrize(("volume", "message"), [
    ({"configMap": {"name": "absent"}}, 'configmap "absent" not found'),
    ({"secret": {"secretName": "absent"}}, 'secret "absent" not found'),
    ({"configMap": {"name": "cfg", "items": [{"key": "zz", "path": "zz"}]}},
     "configmap references non-existent config key: zz"),
    ({"secret": {"secretName": "sec", "items": [{"key": "zz", "path": "zz"}]}},
     "references non-existent secret key: zz"),
    ({"downwardAPI": {"items": [{"path": "x", "fieldRef": {"fieldPath": "spec.nodeName"}}]}},
     "unsupported fieldPath: spec.nodeName"),
    ({"projected": {"sources": [{"configMap": {"name": "a1"}}, {"secret": {"name": "a2"}}]}},
     '[configmap "a1" not found, secret "a2" not found]'),
])
def test_payload_errors(volume: dict[str, Any], message: str) -> None:
    with pytest.raises(VolumeError) as err:
        run(collect(POD, _vol(**volume), FakeSource()))
    assert str(err.value) == message


def test_format_map_and_resources_default_to_node_allocatable() -> None:
    assert format_map({"z": "1", "a": "x\ny"}) == 'a="x\\ny"\nz="1"'
    sel = core_v1.ResourceFieldSelector(container_name="c", resource="limits.cpu")
    assert resource_value(POD, sel, "c") == "1"                 # 250m rounded up to whole cores
    sel = core_v1.ResourceFieldSelector(container_name="c", resource="limits.ephemeral-storage", divisor="1Gi")
    assert resource_value(POD, sel, "c") == "100"               # no limit: the node's allocatable
    sel = core_v1.ResourceFieldSelector(container_name="c", resource="requests.cpu", divisor="1m")
    assert resource_value(POD, sel, "c") == "100"


def test_token_refresh_at_80_percent_of_its_lifetime() -> None:
    tok = Token("t", 3607.0, 3607)          # minted at 0
    assert refresh_at(tok) == pytest.approx(2885.6)
    assert not requires_refresh(tok, 2885.0)
    assert requires_refresh(tok, 2886.0)
    long = Token("t", 200_000.0, 200_000)    # a 55 h token is renewed after 24 h
    assert refresh_at(long) == 24 * 3600


# --- hostPath and subPath --------------------------------------------------------------------

def test_host_path_types(tmp_path: pathlib.Path) -> None:
    d, f = tmp_path / "d", tmp_path / "f"
    assert check_host_path(str(d / "new"), "DirectoryOrCreate") and (d / "new").is_dir()
    assert check_host_path(str(tmp_path / "x" / "file"), "FileOrCreate") and (tmp_path / "x" / "file").is_file()
    f.write_text("")
    assert check_host_path(str(f), "File") == str(f)
    assert check_host_path(str(tmp_path / "missing"), "") == str(tmp_path / "missing")
    cases = [(str(f), "Directory", f"hostPath type check failed: {f} is not a directory"),
             (str(f), "DirectoryOrCreate", f"hostPath type check failed: {f} is not a directory"),
             (str(d), "File", f"hostPath type check failed: {d} is not a file"),
             (str(tmp_path / "nope"), "Directory", f"hostPath type check failed: {tmp_path / 'nope'} is not a directory"),
             (str(f), "Socket", f"hostPath type check failed: {f} is not a socket file"),
             (str(f), "Bogus", "Bogus is an invalid volume type")]
    for path, type_, message in cases:
        with pytest.raises(VolumeError) as err:
            check_host_path(path, type_)
        assert str(err.value) == message


def test_subpath_source_resolves_inside_the_volume_only(tmp_path: pathlib.Path) -> None:
    vol = tmp_path / "vol"
    AtomicWriter(vol.mkdir() or vol).write(_payload(app="x"))
    real = subpath_source(str(vol), "app", "v", "c")
    assert real.startswith(str(vol / "..")) and pathlib.Path(real).read_text() == "x"    # the file itself
    assert pathlib.Path(subpath_source(str(vol), "made/here", "v", "c")).is_dir()
    (vol / "escape").symlink_to(tmp_path)
    with pytest.raises(SubPathError) as err:
        subpath_source(str(vol), "escape/x", "v", "c")
    assert str(err.value) == 'failed to prepare subPath for volumeMount "v" of container "c"'
    assert not (tmp_path / "x").exists()            # nothing made through the symlink
    with pytest.raises(SubPathError, match="failed to prepare subPath"):
        subpath_source(str(vol), "../x", "v", "c")


# --- the manager: token renewal on the fake clock, claims, clean-up from the mount table ----

class _ClaimSource(FakeSource):
    async def claim_path(self, ns: str, claim: str) -> str:
        return {"data": "/var/local-path-provisioner/pvc-1_ns_data"}.get(claim) or f"/nowhere/{claim}"


def _manager(tmp_path: pathlib.Path, source: FakeSource, clock: Any) -> Any:
    from kubeplane.kubelet.volumemanager.manager import VolumeManager
    events: list[tuple[str, str, str]] = []
    vm = VolumeManager(tmp_path, source_for=lambda node: source, clock=clock, can_mount=False,
                       events=lambda pod, t, reason, msg: events.append((t, reason, msg)))
    vm.recorded = events                      # type: ignore[attr-defined]
    return vm


def test_projected_token_is_renewed_at_80_percent_of_its_lifetime(tmp_path: pathlib.Path) -> None:
    from kubeplane.utils.clock import FakeClock
    clock, source = FakeClock(start=1000.0), FakeSource()
    pod = from_dict({**_pod_dict(), "spec": {**_pod_dict()["spec"], "volumes": [{"name": "api", "projected": {
        "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 1000}}]}}]}}, core_v1.Pod)

    async def go() -> None:
        vm = _manager(tmp_path, source, clock)
        await vm.setup(pod)
        f = tmp_path / "pods/u1/volumes/kubernetes.io~projected/api/token"
        assert f.read_text() == "tok-1-"
        await vm.refresh("u1")                # e.g. a ConfigMap of the volume changed: the token is kept
        assert f.read_text() == "tok-1-" and source.tokens == 1
        await asyncio.sleep(0)
        clock.step(799)                       # minted at 1000 for 1000 s: renewed from 1800 on
        for _ in range(5):
            await asyncio.sleep(0)
        assert f.read_text() == "tok-1-"
        clock.step(1)
        for _ in range(20):
            await asyncio.sleep(0)
            if f.read_text() != "tok-1-":
                break
        assert f.read_text() == "tok-2-"
        vm.teardown("u1")
    run(go())


def _pod_dict() -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"nodeName": "n", "containers": [{"name": "c"}]}}


def test_claims_from_the_local_path_provisioner_live_under_the_kubelet_root(tmp_path: pathlib.Path) -> None:
    from kubeplane.kubelet.volumemanager.manager import MountError
    from kubeplane.utils.clock import FakeClock
    pod = from_dict({**_pod_dict(), "spec": {**_pod_dict()["spec"], "volumes": [
        {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}, core_v1.Pod)
    vm = _manager(tmp_path, _ClaimSource(), FakeClock())
    run(vm.setup(pod))
    assert (tmp_path / "local-path-provisioner/pvc-1_ns_data").is_dir()
    assert vm.container_mounts(pod, core_v1.Container(name="c", volume_mounts=[
        core_v1.VolumeMount(name="d", mount_path="/data")]), {})[0]["source"] == str(
        tmp_path / "local-path-provisioner/pvc-1_ns_data")
    bad = from_dict({**_pod_dict(), "spec": {**_pod_dict()["spec"], "volumes": [
        {"name": "h", "hostPath": {"path": str(tmp_path / "nofile"), "type": "File"}}]}}, core_v1.Pod)
    with pytest.raises(MountError) as err:
        run(vm.setup(bad))
    assert str(err.value) == (f'MountVolume.SetUp failed for volume "h" : hostPath type check failed: '
                              f'{tmp_path / "nofile"} is not a file')


def test_api_errors_are_failed_mounts_and_a_teardown_during_set_up_writes_nothing(tmp_path: pathlib.Path) -> None:
    from kubeplane.api import errors
    from kubeplane.kubelet.volumemanager.manager import MountError
    from kubeplane.utils.clock import FakeClock

    class Slow(FakeSource):
        def __init__(self) -> None:
            super().__init__()
            self.gate = asyncio.Event()

        async def configmap(self, ns: str, name: str) -> core_v1.ConfigMap | None:
            if name == "forbidden":
                raise errors.Forbidden('configmaps "forbidden" is forbidden: no relationship found')
            await self.gate.wait()
            return await super().configmap(ns, name)

    def pod_with(cm: str) -> core_v1.Pod:
        return from_dict({**_pod_dict(), "spec": {**_pod_dict()["spec"], "volumes": [
            {"name": "v", "configMap": {"name": cm}}]}}, core_v1.Pod)

    async def go() -> None:
        source = Slow()
        vm = _manager(tmp_path, source, FakeClock())
        with pytest.raises(MountError, match='volume "v" : configmaps "forbidden" is forbidden'):
            await vm.setup(pod_with("forbidden"))
        vm.teardown("u1")
        task = asyncio.ensure_future(vm.setup(pod_with("cfg")))
        await asyncio.sleep(0)
        vm.teardown("u1")                          # the pod goes while its ConfigMap is read
        shutil.rmtree(tmp_path / "pods", ignore_errors=True)     # (as the runtime's remove_pod)
        source.gate.set()
        await task
        assert not (tmp_path / "pods").exists()       # nothing re-created after the teardown
    run(go())
