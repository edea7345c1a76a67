"""The kubelet's resource usage: declared for simulated pods, measured from /proc for the process
runtime's containers (a container is its main process's group)."""
from __future__ import annotations

import subprocess
import sys
import time
from fractions import Fraction
from typing import Any

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.kubelet.resource_usage import NODE_BASE, ProcessMeter, node_usage, proc_groups


def pod(annotations: dict[str, str] | None = None, requests: dict[str, str] | None = None) -> core_v1.Pod:
    return types.from_dict({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u1",
                                                         "annotations": annotations or {}},
        "spec": {"nodeName": "n1", "containers": [{"name": "a", "image": "x", "resources": {"requests": requests or {}}},
                                                  {"name": "b", "image": "x"}]},
        "status": {"containerStatuses": [
            {"name": n, "ready": True, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"running": {}}} for n in ("a", "b")]}}, core_v1.Pod)


def test_declared_defaults_and_overrides() -> None:
    _, [u] = node_usage([pod(requests={"cpu": "1", "memory": "1Gi"})], "n1")
    assert [(c.name, c.cpu, c.memory) for c in u.containers] == [
        ("a", Fraction(1, 10), Fraction(1024**3, 10)), ("b", Fraction(1, 1000), Fraction(4 * 1024**2))]
    _, [u] = node_usage([pod({"sim.kubeplane.io/cpu-usage": "300m", "sim.kubeplane.io/memory-usage.b": "1Mi",
                              "sim.kubeplane.io/cpu-usage.b": "garbage"})], "n1")
    assert [(c.cpu, c.memory) for c in u.containers] == [(Fraction(3, 10), Fraction(4 * 1024**2)),
                                                         (Fraction(3, 10), Fraction(1024**2))]
    total, usages = node_usage([pod()], "other-node")
    assert usages == [] and total == NODE_BASE


class Runtime:
    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids

    def container_pids(self, uid: str) -> dict[str, int]:
        return self.pids if uid == "u1" else {}


def test_a_process_group_is_measured() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "b = bytearray(32 * 1024 * 1024)\nwhile True: pass"],
                            start_new_session=True)          # its own group: pgid == pid
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:                   # poll until it has run a few ticks
            g = proc_groups().get(busy.pid)
            if g is not None and g[0] > 0.05 and g[1] > 32 * 1024 * 1024:
                break
        else:
            raise AssertionError(f"no CPU or memory seen for {busy.pid}: {proc_groups().get(busy.pid)}")
        meter = ProcessMeter(Runtime({"a": busy.pid}))
        p: Any = pod()
        measured = meter(p)
        cpu, mem = measured["a"]
        assert cpu > 0 and mem > 32 * 1024 * 1024
        _, [u] = node_usage([p], "n1", meter)
        assert [c.name for c in u.containers] == ["a"]       # only what runs is measured
        assert ProcessMeter(Runtime({}))(p) == {}
    finally:
        busy.kill()
        busy.wait()
