"""What the process runtime keeps on disk so that a restarted kubelet finds its containers.

Layout under the runtime's root (`kubeplane up`: <data-dir>/kubelet):

    pods/<uid>/pod.json                   the pod (name, namespace, grace period) and its sandbox
    pods/<uid>/containers/<id>.json       one attempt: container spec, attempt, working dir,
                                          log path, the shim's pid and start time, boot id
    pods/<uid>/containers/<id>.state      written by the shim: the container's pid and start
                                          time and startedAt, then exitCode and finishedAt
    pods/<uid>/logs/<name>/<attempt>.log  the attempt's output (CRI format, written by the shim)
    network/<node>/...                    the pods' addresses and the node's bridge
                                          (kubelet/network/pod_network.py)

Every file is replaced atomically (write, then rename) with mode 0600, so a reader never sees
half of one, whatever moment the writer is killed at. A pid alone does not name a process for
long (pids are reused), so each is kept with its start time (/proc/<pid>/stat) and the boot id:
a process is "still there" only if all three match.

Upstream: containerd's metadata store and its shims' state directories, reduced to files.
"""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
from dataclasses import dataclass
from typing import Any

from .shim import proc_stat, write_atomic

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


def boot_id() -> str:
    try:
        return pathlib.Path(BOOT_ID_PATH).read_text().strip()
    except OSError:
        return ""


def alive(pid: int | None, start: int | None, boot: str | None = None) -> bool:
    """Whether the process recorded as (pid, start time, boot id) is still running (a zombie,
    exited but not yet reaped, is not)."""
    if not pid or start is None or (boot is not None and boot != boot_id()):
        return False
    stat = proc_stat(pid)
    return stat is not None and stat[1] == start and stat[0] not in ("Z", "X")


def signal_group(pid: int | None, start: int | None, sig: int) -> None:
    """Signal the process group led by the recorded process, if that process is still there
    (its group id is its pid: it leads a session of its own)."""
    if pid and alive(pid, start):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)


def read_json(path: pathlib.Path) -> Any:
    """The file's JSON, or None if it is missing or unreadable."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def save(path: pathlib.Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, obj)


@dataclass(frozen=True)
class Recorded:
    """One attempt found on disk: its record and what its shim last wrote."""

    uid: str
    record: dict[str, Any]
    state: dict[str, Any]
    path: pathlib.Path                  # the record (the state file sits beside it)


def state_path(record_path: pathlib.Path) -> pathlib.Path:
    return record_path.with_suffix(".state")


def recorded_pods(root: pathlib.Path) -> dict[str, tuple[dict[str, Any], list[Recorded]]]:
    """Every pod directory under root: uid -> (pod.json, its attempts in attempt order)."""
    out: dict[str, tuple[dict[str, Any], list[Recorded]]] = {}
    for pod_dir in sorted((root / "pods").glob("*")):
        pod = read_json(pod_dir / "pod.json")
        if not isinstance(pod, dict):
            continue
        attempts = []
        for path in (pod_dir / "containers").glob("*.json"):
            record = read_json(path)
            if _well_formed(record):
                state = read_json(state_path(path))
                attempts.append(Recorded(pod_dir.name, record, state if isinstance(state, dict) else {}, path))
        attempts.sort(key=lambda a: (a.record["attempt"], a.record.get("seq", 0)))
        out[pod_dir.name] = (pod, attempts)
    return out


def _well_formed(record: Any) -> bool:
    """A record as this runtime writes them (others are left alone: never adopted or killed)."""
    return (isinstance(record, dict) and isinstance(record.get("id"), str) and isinstance(record.get("attempt"), int)
            and isinstance(record.get("seq", 0), int) and isinstance(record.get("shim") or {}, dict))


def kill_recorded(root: str | os.PathLike[str]) -> int:
    """SIGKILL every container (its whole process group) and shim recorded under root that is
    still running; how many containers were running. For stopping what a kubelet that is no
    longer running left behind (its containers outlive it on purpose), e.g. after tests. The
    volumes mounted for its pods (tmpfs) are unmounted too, so root can be removed, and their
    network namespaces, veths, addresses and bridges removed (kubelet/network).
    """
    from ...network import teardown_recorded
    from ...volumemanager.manager import unmount_under      # (they import the runtime's modules)
    killed = 0
    for _, attempts in recorded_pods(pathlib.Path(root)).values():
        for a in attempts:
            boot = a.record.get("boot")
            if "exitCode" not in a.state and alive(a.state.get("pid"), a.state.get("start"), boot):
                signal_group(a.state.get("pid"), a.state.get("start"), signal.SIGKILL)
                killed += 1
            shim = a.record.get("shim") or {}
            if alive(shim.get("pid"), shim.get("start"), boot):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(shim["pid"], signal.SIGKILL)
    unmount_under(pathlib.Path(root) / "pods")
    teardown_recorded(root)
    return killed
