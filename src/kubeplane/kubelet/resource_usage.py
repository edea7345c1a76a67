"""What each running container uses: the kubelet's resource metrics (upstream: the
/metrics/resource endpoint and the Summary API, which metrics-server scrapes).

Simulated containers use what their pod declares, read at every scrape, so patching the
annotation changes the load of a running pod (how an e2e makes an HPA scale):

    sim.kubeplane.io/cpu-usage: 250m              every container of the pod
    sim.kubeplane.io/memory-usage: 64Mi
    sim.kubeplane.io/cpu-usage.<container>: 1     one container (wins over the pod's)

Without an annotation a container uses a tenth of its request (1m CPU and 4Mi memory without
one). A node uses the sum of its running pods plus NODE_BASE (the kubelet and system daemons).

Real containers (the process runtime) are measured from /proc, as cAdvisor reads cgroups: a
container is its main process's process group; CPU is the rate of its processes' utime + stime
between two scrapes (over the processes' lifetime at the first), memory their resident set.
/proc and not psutil: one scan of /proc/<pid>/stat per scrape gives both for every group, and
psutil would be a new dependency for the same two numbers.
"""
from __future__ import annotations

import os
import time
from fractions import Fraction
from typing import Any, Callable, Iterable

from ..api import quantity
from ..api.resource_usage import ContainerUsage, PodUsage

PREFIX = "sim.kubeplane.io/"
DEFAULT_FRACTION = Fraction(1, 10)                 # of the request
DEFAULT_CPU, DEFAULT_MEMORY = Fraction(1, 1000), Fraction(4 * 1024 * 1024)
NODE_BASE = {"cpu": Fraction(50, 1000), "memory": Fraction(256 * 1024 * 1024)}


def container_usage(pod: Any, container: Any) -> ContainerUsage:
    annotations = pod.metadata.annotations or {}
    requests = (container.resources.requests if container.resources else None) or {}
    values = []
    for resource, default in (("cpu", DEFAULT_CPU), ("memory", DEFAULT_MEMORY)):
        # the container's own value, else the pod's; a malformed or negative one is ignored
        q = next((q for key in (f"{PREFIX}{resource}-usage.{container.name}", f"{PREFIX}{resource}-usage")
                  if (q := _quantity(annotations.get(key))) is not None), None)
        if q is not None:
            values.append(q)
        elif resource in requests and (r := quantity.Quantity.parse(requests[resource])) is not None:
            values.append(r.value * DEFAULT_FRACTION)
        else:
            values.append(default)
    return ContainerUsage(container.name, values[0], values[1])


# pod -> {container name: (cores, bytes)} of its running containers, measured; None: declared.
Measure = Callable[[Any], "dict[str, tuple[Fraction, Fraction]] | None"]


def _quantity(value: str | None) -> Fraction | None:
    q = quantity.Quantity.parse(value) if value else None
    return q.value if q is not None and q.value >= 0 else None


def pod_usage(pod: Any, measure: Measure | None = None) -> PodUsage | None:
    """The usage of the pod's running containers; None if none runs (metrics-server skips it)."""
    measured = measure(pod) if measure is not None else None
    if measured is not None:
        if not measured:
            return None
        containers = tuple(ContainerUsage(name, cpu, mem) for name, (cpu, mem) in sorted(measured.items()))
        return PodUsage(pod.metadata.namespace or "", pod.metadata.name or "", containers)
    statuses = (pod.status.container_statuses if pod.status else None) or []
    running = {s.name for s in statuses if s.state is not None and s.state.running is not None}
    if not running:
        return None
    containers = tuple(container_usage(pod, c) for c in pod.spec.containers or () if c.name in running)
    return PodUsage(pod.metadata.namespace or "", pod.metadata.name or "", containers)


def node_usage(pods: Iterable[Any], node: str, measure: Measure | None = None
               ) -> tuple[dict[str, Fraction], list[PodUsage]]:
    """(the node's total, each running pod's usage) for the pods bound to `node`."""
    usages = [u for p in pods
              if p.spec is not None and p.spec.node_name == node and (u := pod_usage(p, measure)) is not None]
    total = dict(NODE_BASE)
    for u in usages:
        for c in u.containers:
            total["cpu"] += c.cpu
            total["memory"] += c.memory
    return total, usages


# --- the Summary API's form (what the API server reads from a standalone kubelet) ------------------

def summary(node: str, total: dict[str, Fraction], pods: list[PodUsage]) -> dict[str, Any]:
    """Upstream: stats/v1alpha1 Summary, the fields metrics-server reads."""
    def stats(cpu: Fraction, memory: Fraction) -> dict[str, Any]:
        return {"cpu": {"usageNanoCores": round(cpu * 10**9)}, "memory": {"workingSetBytes": round(memory)}}
    return {"node": {"nodeName": node, **stats(total["cpu"], total["memory"])},
            "pods": [{"podRef": {"name": p.name, "namespace": p.namespace},
                      "containers": [{"name": c.name, **stats(c.cpu, c.memory)} for c in p.containers]}
                     for p in pods]}


# --- measured: the process runtime's containers ---------------------------------------------------

def proc_groups(proc: str = "/proc") -> dict[int, tuple[float, int, float]]:
    """Per process group: (CPU seconds used, resident bytes, the earliest start in seconds since
    boot), from one scan of /proc/<pid>/stat (proc(5): fields 5 pgrp, 14 utime, 15 stime,
    22 starttime, 24 rss)."""
    ticks, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    groups: dict[int, tuple[float, int, float]] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{proc}/{entry.name}/stat", "rb") as f:
                data = f.read()
        except OSError:                    # gone between the scan and the read
            continue
        fields = data[data.rindex(b")") + 2:].split()      # after "(comm)", which may hold spaces
        pgrp, cpu = int(fields[2]), (int(fields[11]) + int(fields[12])) / ticks
        rss, start = int(fields[21]) * page, int(fields[19]) / ticks
        was = groups.get(pgrp, (0.0, 0, start))
        groups[pgrp] = (was[0] + cpu, was[1] + rss, min(was[2], start))
    return groups


class ProcessMeter:
    """Measures the process runtime's running containers (runtime.container_pids(pod uid))."""

    def __init__(self, runtime: Any, proc: str = "/proc") -> None:
        self.runtime = runtime
        self.proc = proc
        self._last: dict[int, tuple[float, float]] = {}     # pgid -> (CPU seconds, monotonic time)
        self._groups: dict[int, tuple[float, int, float]] = {}
        self._scanned = -1.0

    def __call__(self, pod: Any) -> dict[str, tuple[Fraction, Fraction]]:
        pids = self.runtime.container_pids(pod.metadata.uid or "")
        now = time.monotonic()
        if pids and now - self._scanned > 1.0:          # one scan per scrape of all the node's pods
            self._groups, self._scanned = proc_groups(self.proc), now
        out = {}
        for name, pid in pids.items():
            if (g := self._groups.get(pid)) is None:
                continue
            cpu_seconds, rss, start = g
            last = self._last.get(pid)
            if last is not None and now > last[1]:
                rate = max(0.0, cpu_seconds - last[0]) / (now - last[1])
            else:                                        # first reading: over the group's lifetime
                rate = cpu_seconds / max(_uptime(self.proc) - start, 1e-3)
            self._last[pid] = (cpu_seconds, now)
            out[name] = (Fraction(rate).limit_denominator(10**9), Fraction(rss))
        return out


def _uptime(proc: str) -> float:
    try:
        with open(f"{proc}/uptime") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
