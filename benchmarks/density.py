"""Density benchmark: 1,000 pods on 100 simulated nodes, a rolling update, and 1,000 idle nodes.

Run:  .venv/bin/python benchmarks/density.py [--nodes 100] [--replicas 1000] [--idle-nodes 1000]
                                             [--idle-seconds 30] [--profile-dir DIR]

Phase 1 starts `kubeplane up --nodes 100` (its own process, as a user runs it), applies a
1,000-replica Deployment with the venv's kubectl, and times it until status.availableReplicas
is 1,000; then `kubectl set image` + `kubectl rollout status` times a rolling update. A watch
on pods (from this process) records, per pod, when it was ADDED, bound (spec.nodeName) and
Ready=True, which gives pod startup latency two ways: from the watch-observed ADDED time
(sub-millisecond) and from metadata.creationTimestamp (1 s resolution, so up to 1 s high).
A thread samples the RSS of the `kubeplane up` process tree from /proc every 50 ms (with
`--up-args='--kubelet-processes 1'` the tree holds the kubelet process too: CPU and RSS are the sums).
The CPU seconds the process tree used during each phase are printed too: under contention from
other work on the machine they are steadier than the wall times.

Phase 2 starts `kubeplane up --nodes 1000`, waits until every node is Ready and one
heartbeat period has passed, then reports the process tree's CPU use over 30 s of idling
(utime + stime from /proc/PID/stat), i.e. the cost of 1,000 nodes heartbeating plus the
controllers watching them.

Each phase also prints what the API server counted meanwhile (apiserver_request_total from
/metrics): LISTs and WATCHes by resource (a relist of an informer that fell out of the watch
history shows as a LIST), and answers 409 (conflicts), 410, 429 and 5xx: work that lag may add.
`--stall F` makes the `up` process lose CPU as on a loaded machine without loading it: a thread
stops its process group (SIGSTOP) for F of every 20 ms slice (0.5 halves its CPU time), so the
extra CPU seconds that lag costs show without disturbing other work on the machine.

Targets on the reference 2-core machine: >= 500 pods/s end to end (1,000 available in
<= 2 s), p99 startup <= 1 s, rolling update of 1,000 in <= 5 s, <= 500 MB RSS with 100
nodes and 1,000 pods, 1,000 idle nodes <= 10 % of a core.
"""
from __future__ import annotations

import argparse
import asyncio
import calendar
import contextlib
import json
import math
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import aiohttp
import orjson

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from api_bench import Client, start_up, stop

KUBECTL = str(pathlib.Path(sys.executable).parent / "kubectl")
PY_SPY = str(pathlib.Path(sys.executable).parent / "py-spy")
NS = "density"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# --- the process tree ------------------------------------------------------------------------

def tree(pid: int) -> list[int]:
    """pid and all its descendants (via /proc/PID/task/TID/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except OSError:
            pass
    return total


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of the given processes (fields 14 and 15 of /proc/PID/stat)."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / CLK_TCK


class RSSSampler(threading.Thread):
    """Polls the tree's RSS every `period` s; `peak` is the largest sample, `last` the latest;
    `peak_own` / `peak_children` the largest of `up`'s own process and of its children's sum
    (--scheduler-process, --kubelet-processes), each on its own."""

    def __init__(self, pid: int, period: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.peak = self.last = self.peak_own = self.peak_children = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.period):
            pids = tree(self.pid)
            own, children = rss_bytes(pids[:1]), rss_bytes(pids[1:])
            self.last = own + children
            self.peak = max(self.peak, self.last)
            self.peak_own, self.peak_children = max(self.peak_own, own), max(self.peak_children, children)


class CPUTimeline(threading.Thread):
    """Samples, every `period` s, the CPU seconds of `up`'s main thread and of its process tree,
    so a phase bounded by the main thread shows where it idles (pacing: rate limiters, timers)."""

    def __init__(self, pid: int, period: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples: list[tuple[float, float, float]] = []     # (time, main thread CPU, tree CPU)
        self.stopped = threading.Event()

    def main_cpu(self) -> float:
        try:
            with open(f"/proc/{self.pid}/task/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / CLK_TCK
        except OSError:
            return 0.0

    def sample(self) -> None:
        self.samples.append((time.time(), self.main_cpu(), cpu_seconds(tree(self.pid))))

    def run(self) -> None:
        self.sample()
        while not self.stopped.wait(self.period):
            self.sample()
        self.sample()

    def summary(self) -> str:
        """"main% / tree%" of each interval: a main thread well below 100 % while the phase
        runs is time the phase waits on something other than CPU."""
        out = []
        for (t0, m0, c0), (t1, m1, c1) in zip(self.samples, self.samples[1:]):
            dt = (t1 - t0) or 1e-9
            out.append(f"{100 * (m1 - m0) / dt:.0f}/{100 * (c1 - c0) / dt:.0f}")
        return " ".join(out)


def rolling_timeline(pods: list[PodTimes], t0: float, t1: float, points: int = 12) -> str:
    """"3s 800/700/650 250/100": new pods added/bound/ready, old pods terminating/deleted, over the
    rolling update (cumulative), from the watch."""
    old = [p for p in pods if p.added < t0]
    new = [p for p in pods if p.added >= t0]
    out = []
    for i in range(1, points + 1):
        at = t0 + (t1 - t0) * i / points
        out.append(f"{at - t0:.1f}s {sum(p.added <= at for p in new)}/{sum(bool(p.bound and p.bound <= at) for p in new)}"
                   f"/{sum(bool(p.ready and p.ready <= at) for p in new)}"
                   f" {sum(bool(p.terminating and p.terminating <= at) for p in old)}"
                   f"/{sum(bool(p.deleted and p.deleted <= at) for p in old)}")
    return "  ".join(out)


class Staller(threading.Thread):
    """SIGSTOPs the process group of pid for `fraction` of every `slice_s` (--stall): CPU starvation
    without burning the machine's CPU."""

    def __init__(self, pid: int, fraction: float, slice_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.pid, self.fraction, self.slice_s = pid, fraction, slice_s
        self.stopped = threading.Event()

    def run(self) -> None:
        import signal
        stop_s, run_s = self.fraction * self.slice_s, (1 - self.fraction) * self.slice_s
        try:
            while not self.stopped.is_set():
                os.killpg(self.pid, signal.SIGSTOP)
                time.sleep(stop_s)
                os.killpg(self.pid, signal.SIGCONT)
                self.stopped.wait(run_s)
        except ProcessLookupError:
            pass
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGCONT)


def drain(proc: subprocess.Popen) -> None:
    """Keep reading the server's output so a chatty log never blocks it on a full pipe."""
    def run() -> None:
        for _ in proc.stdout:           # type: ignore[union-attr]
            pass
    threading.Thread(target=run, daemon=True).start()


# --- watching ----------------------------------------------------------------------------------

@dataclass
class PodTimes:
    created: float            # metadata.creationTimestamp (epoch seconds, 1 s resolution)
    added: float              # when the watch delivered ADDED (epoch seconds)
    bound: float | None = None
    ready: float | None = None
    terminating: float | None = None      # deletionTimestamp first seen
    deleted: float | None = None


@dataclass
class Watcher:
    """Watches pods and deployments in NS and notes when things were first seen."""

    client: Client
    pods: dict[str, PodTimes] = field(default_factory=dict)
    deployment: dict[str, Any] = field(default_factory=dict)
    waiters: list[tuple[Callable[[], bool], asyncio.Future[float]]] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self) -> None:
        for resource, handle in (("api/v1/namespaces/%s/pods", self.on_pod),
                                 ("apis/apps/v1/namespaces/%s/deployments", self.on_deployment)):
            path = resource % NS
            async with self.client.session.get(f"{self.client.server}/{path}?limit=1") as r:
                rv = orjson.loads(await r.read())["metadata"]["resourceVersion"]
            self.tasks.append(asyncio.ensure_future(self.watch(path, rv, handle)))

    async def watch(self, path: str, rv: str, handle: Callable[[str, dict[str, Any], float], None]) -> None:
        url = f"{self.client.server}/{path}?watch=true&resourceVersion={rv}&timeoutSeconds=3600"
        async with self.client.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
            assert r.status == 200, await r.text()
            async for line in r.content:
                ev = orjson.loads(line)
                if ev["type"] == "ERROR":
                    raise RuntimeError(f"watch {path}: {ev['object']}")
                handle(ev["type"], ev["object"], time.time())
                self.check_waiters()

    def on_pod(self, type_: str, pod: dict[str, Any], now: float) -> None:
        uid = pod["metadata"]["uid"]
        t = self.pods.get(uid)
        if t is None:
            if type_ == "DELETED":
                return
            t = self.pods[uid] = PodTimes(parse_time(pod["metadata"]["creationTimestamp"]), now)
        if type_ == "DELETED":
            t.deleted = now
        if t.terminating is None and pod["metadata"].get("deletionTimestamp"):
            t.terminating = now
        if t.bound is None and pod["spec"].get("nodeName"):
            t.bound = now
        if t.ready is None and any(c["type"] == "Ready" and c["status"] == "True"
                                   for c in pod.get("status", {}).get("conditions") or ()):
            t.ready = now

    def on_deployment(self, type_: str, d: dict[str, Any], now: float) -> None:
        self.deployment = d

    def check_waiters(self) -> None:
        for item in list(self.waiters):
            cond, fut = item
            if cond():
                self.waiters.remove(item)
                if not fut.done():
                    fut.set_result(time.time())

    async def until(self, cond: Callable[[], bool], timeout: float) -> float:
        """Epoch time at which cond() first held after a watch event."""
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiters.append((cond, fut))
        self.check_waiters()
        return await asyncio.wait_for(fut, timeout)

    async def stop(self) -> None:
        for t in self.tasks:
            if t.done() and t.exception() is not None:
                print(f"watch failed: {t.exception()!r}", file=sys.stderr)
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def timeline(pods: list[PodTimes], t0: float, points: int = 12) -> str:
    """"2s 1200/300/250 ...": how many pods were added, bound and ready `points` times over
    the phase (cumulative), so a creation rate that outruns binding shows as a growing gap."""
    end = max((p.ready or p.bound or p.added) for p in pods) - t0 if pods else 0.0
    out = []
    for i in range(1, points + 1):
        at = t0 + end * i / points
        out.append(f"{at - t0:.1f}s {sum(p.added <= at for p in pods)}/{sum(bool(p.bound and p.bound <= at) for p in pods)}"
                   f"/{sum(bool(p.ready and p.ready <= at) for p in pods)}")
    return "  ".join(out)


def parse_time(value: str) -> float:
    return float(calendar.timegm(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ")))


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile: q=0.99 of 1,000 values is the ceil(990.0) = 990th smallest."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, math.ceil(q * len(s)) - 1))] if s else float("nan")


# --- helpers ------------------------------------------------------------------------------------

async def request_counts(c: Client) -> dict[tuple[str, str, str], float]:
    """apiserver_request_total by (verb, resource, code), from the API server's /metrics."""
    async with c.session.get(f"{c.server}/metrics") as r:
        text = await r.text()
    out: dict[tuple[str, str, str], float] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_s, value = line[len("apiserver_request_total{"):].rsplit("} ", 1)
        labels = {k: v.strip('"') for k, v in (kv.split("=", 1) for kv in labels_s.split('",') if "=" in kv)}
        sub = labels.get("subresource", "")
        key = (labels.get("verb", ""), labels.get("resource", "") + (f"/{sub}" if sub else ""), labels.get("code", ""))
        out[key] = out.get(key, 0.0) + float(value)
    return out


def work_counts(before: dict[tuple[str, str, str], float], after: dict[tuple[str, str, str], float]) -> dict[str, float]:
    """What lag can turn into extra work, between two request_counts(): requests by verb and
    resource (a relist is a LIST), and every answer that is not a success, by verb, resource and code."""
    out: dict[str, float] = {}
    for (verb, resource, code), n in after.items():
        d = n - before.get((verb, resource, code), 0.0)
        if not d:
            continue
        if verb in ("LIST", "WATCH"):
            name = f"{verb.lower()}s {resource}"
        elif not code.startswith("2"):
            name = f"{verb.lower()} {resource} {code}"
        else:
            name = f"{verb.lower()}s {resource}"
        out[name] = out.get(name, 0.0) + d
    return dict(sorted(out.items()))


async def kubectl(kubeconfig: pathlib.Path, *args: str, input: str | None = None, timeout: float = 300) -> float:
    """Run the real kubectl (without blocking this process's watches); return its wall time."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(kubeconfig.parent / "cache"), *args,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env={**os.environ, "KUBECTL_KUBERC": "false"})
    out, _ = await asyncio.wait_for(proc.communicate(input.encode() if input is not None else None), timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {out.decode()}")
    return time.perf_counter() - t0


async def wait_nodes_ready(c: Client, n: int, timeout: float) -> float:
    """Seconds until n nodes report Ready=True."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        async with c.session.get(f"{c.server}/api/v1/nodes") as r:
            items = orjson.loads(await r.read())["items"]
        ready = sum(1 for node in items if any(x["type"] == "Ready" and x["status"] == "True"
                                               for x in node["status"].get("conditions") or ()))
        if ready >= n:
            return time.perf_counter() - t0
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{n} nodes not Ready in {timeout}s")


async def event_reasons(c: Client, settle: float = 10.0) -> dict[str, int]:
    """Events in the namespace by reason, once their number stops growing (events trail the
    pods: recorders write them asynchronously, and drop them past 1,000 queued, as upstream)."""
    counts: dict[str, int] = {}
    t0, last = time.perf_counter(), -1
    while time.perf_counter() - t0 < settle:
        async with c.session.get(f"{c.server}/api/v1/namespaces/{NS}/events") as r:
            items = orjson.loads(await r.read())["items"]
        if len(items) == last:
            break
        last = len(items)
        counts = {}
        for e in items:
            counts[e["reason"]] = counts.get(e["reason"], 0) + e.get("count", 1)
        await asyncio.sleep(0.5)
    return counts


def deployment(replicas: int, image: str, admitted: bool = False) -> str:
    """The Deployment; `admitted`: its pod template already has what the default admission
    chain adds to each pod (--admitted-template)."""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": image}]}
    if admitted:
        spec = admitted_pod_spec(spec)
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "density", "namespace": NS},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "density"}},
                 "template": {"metadata": {"labels": {"app": "density"}}, "spec": spec}}})


def admitted_pod_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """spec with the ServiceAccount plugin's token volume and mounts, DefaultTolerationSeconds'
    tolerations and Priority's 0: every pod stored as the default admission chain stores it,
    whether the server runs that chain or not (to compare versions on the same stored pods)."""
    volume = "kube-api-access-bcdfg"
    spec = {**spec, "serviceAccountName": "default", "priority": 0, "volumes": [{"name": volume, "projected": {
        "defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                           "fieldPath": "metadata.namespace"}}]}}]}}],
        "tolerations": [{"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300} for k in ("not-ready", "unreachable")]}
    spec["containers"] = [{**c, "volumeMounts": [{"name": volume, "readOnly": True,
                                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}
                          for c in spec["containers"]]
    return spec


class Profiler:
    """py-spy on the server while a phase runs (raw collapsed stacks), when --profile-dir is given."""

    def __init__(self, out_dir: pathlib.Path | None, pid: int) -> None:
        self.out_dir, self.pid = out_dir, pid
        self.proc: subprocess.Popen | None = None

    def start(self, name: str, seconds: float) -> None:
        if self.out_dir is None:
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([PY_SPY, "record", "-p", str(self.pid), "-d", str(int(seconds)), "-r", "200",
                                      "-f", "raw", "-o", str(self.out_dir / f"{name}.txt")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)                 # let py-spy attach before the phase starts

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(2)    # SIGINT: py-spy writes what it has
            self.proc.wait(30)
            self.proc = None


# --- phase 1: 1,000 pods on 100 nodes -------------------------------------------------------------

async def density(args: argparse.Namespace, tmp: pathlib.Path) -> dict[str, float]:
    history = ["--watch-history", str(args.watch_history)] if args.watch_history else []
    proc, startup = start_up(tmp / "density", args.storage, ["--nodes", str(args.nodes), *history, *args.up_args])
    drain(proc)
    kubeconfig = tmp / "density" / "kubeconfig"
    rss = RSSSampler(proc.pid)
    rss.start()
    profiler = Profiler(args.profile_dir, proc.pid)
    c = Client(kubeconfig, 4)
    w = Watcher(c)
    n = args.replicas
    staller: Staller | None = None
    out: dict[str, float] = {"startup_s": startup}
    try:
        out["nodes_ready_s"] = await wait_nodes_ready(c, args.nodes, 60)
        await kubectl(kubeconfig, "create", "namespace", NS)
        await w.start()
        if args.stall:
            staller = Staller(proc.pid, args.stall)
            staller.start()
        counts0 = await request_counts(c)
        profiler.start("rollout", 30)
        cpu0 = cpu_seconds(tree(proc.pid))
        t0 = time.time()
        out["kubectl_apply_s"] = await kubectl(kubeconfig, "apply", "-f", "-", input=deployment(n, "nginx:1.25", args.admitted_template))
        t_avail = await w.until(lambda: (w.deployment.get("status") or {}).get("availableReplicas") == n, args.timeout)
        profiler.stop()
        out["available_cpu_s"] = cpu_seconds(tree(proc.pid)) - cpu0
        first = list(w.pods.values())
        out["available_s"] = t_avail - t0
        out["pods_per_s"] = n / out["available_s"]
        out["last_added_s"] = max(p.added for p in first) - t0
        out["last_bound_s"] = max(p.bound or 0 for p in first) - t0
        out["last_ready_s"] = max(p.ready or 0 for p in first) - t0
        from_added = [p.ready - p.added for p in first if p.ready]
        from_created = [p.ready - p.created for p in first if p.ready]
        out |= {"startup_p50_s": pct(from_added, 0.50), "startup_p99_s": pct(from_added, 0.99),
                "startup_from_creation_p50_s": pct(from_created, 0.50),
                "startup_from_creation_p99_s": pct(from_created, 0.99)}
        out["rss_after_rollout_mb"] = rss_bytes(tree(proc.pid)) / 2**20
        print("  pods added / bound / ready by then (creation vs binding over time):", timeline(first, t0),
              file=sys.stderr)
        counts1 = await request_counts(c)
        print("  requests until available:", work_counts(counts0, counts1), file=sys.stderr)
        reasons = await event_reasons(c)
        # SuccessfulCreate, Scheduled, Pulled, Created, Started: five per pod when none is dropped.
        print("  event reasons:", reasons, file=sys.stderr)
        out["events_per_pod"] = sum(reasons.get(r, 0) for r in
                                    ("SuccessfulCreate", "Scheduled", "Pulled", "Created", "Started")) / n

        counts1 = await request_counts(c)
        profiler.start("rolling_update", max(30.0, args.timeout))
        cpu_timeline = CPUTimeline(proc.pid)
        cpu_timeline.start()
        cpu0 = cpu_seconds(tree(proc.pid))
        t0 = time.time()
        await kubectl(kubeconfig, "set", "image", "-n", NS, "deployment/density", "c=nginx:1.27")
        await kubectl(kubeconfig, "rollout", "status", "-n", NS, "deployment/density", "--timeout", f"{args.timeout:.0f}s",
                      timeout=args.timeout + 10)
        out["rolling_update_s"] = time.time() - t0
        out["rolling_update_cpu_s"] = cpu_seconds(tree(proc.pid)) - cpu0
        t1 = time.time()
        profiler.stop()
        cpu_timeline.stopped.set()
        cpu_timeline.join()
        out["rolling_update_main_thread_cpu_s"] = cpu_timeline.samples[-1][1] - cpu_timeline.samples[0][1]
        print("  rolling update, new pods added/bound/ready and old pods terminating/deleted by then:",
              rolling_timeline(list(w.pods.values()), t0, t1), file=sys.stderr)
        print("  rolling update, CPU % of up's main thread / its process tree, per second:",
              cpu_timeline.summary(), file=sys.stderr)
        print("  requests during the rolling update:", work_counts(counts1, await request_counts(c)), file=sys.stderr)
        old = {id(p) for p in first}
        second = [p for p in w.pods.values() if id(p) not in old and p.ready]
        second_latency = [p.ready - p.added for p in second]
        out["update_startup_p50_s"] = pct(second_latency, 0.50)
        out["update_startup_p99_s"] = pct(second_latency, 0.99)
        out["rss_peak_mb"] = rss.peak / 2**20
        if rss.peak_children:
            out["rss_peak_up_process_mb"] = rss.peak_own / 2**20
            out["rss_peak_child_processes_mb"] = rss.peak_children / 2**20
    finally:
        if staller is not None:
            staller.stopped.set()
            staller.join()
        profiler.stop()
        await w.stop()
        await c.close()
        rss.stopped.set()
        try:
            stop(proc)
        except subprocess.TimeoutExpired:          # the figures are taken: do not lose them
            os.killpg(proc.pid, 9)
            proc.wait()
    return out


# --- phase 2: 1,000 idle nodes --------------------------------------------------------------------

async def idle_nodes(args: argparse.Namespace, tmp: pathlib.Path) -> dict[str, float]:
    proc, startup = start_up(tmp / "idle", args.storage, ["--nodes", str(args.idle_nodes), *args.up_args])
    drain(proc)
    c = Client(tmp / "idle" / "kubeconfig", 2)
    profiler = Profiler(args.profile_dir, proc.pid)
    out: dict[str, float] = {"idle_startup_s": startup}
    try:
        out["idle_nodes_ready_s"] = await wait_nodes_ready(c, args.idle_nodes, 300)
        await asyncio.sleep(args.warmup)         # past the first, registration-time heartbeats
        profiler.start("idle", args.idle_seconds)
        pids = tree(proc.pid)
        cpu0, t0 = cpu_seconds(pids), time.perf_counter()
        await asyncio.sleep(args.idle_seconds)
        cpu1, t1 = cpu_seconds(tree(proc.pid)), time.perf_counter()
        profiler.stop()
        out["idle_cpu_percent"] = 100 * (cpu1 - cpu0) / (t1 - t0)
        out["idle_rss_mb"] = rss_bytes(tree(proc.pid)) / 2**20
    finally:
        profiler.stop()
        await c.close()
        stop(proc)
    return out


# figure -> (limit, True if the figure must be at least the limit, else at most).
TARGETS: dict[str, tuple[float, bool]] = {
    "pods_per_s": (500.0, True), "available_s": (2.0, False), "startup_p99_s": (1.0, False),
    "rolling_update_s": (5.0, False), "rss_peak_mb": (500.0, False), "idle_cpu_percent": (10.0, False),
}


def show(title: str, figures: dict[str, float]) -> None:
    print(title)
    for k, v in figures.items():
        verdict = ""
        if k in TARGETS:
            limit, at_least = TARGETS[k]
            ok = v >= limit if at_least else v <= limit
            verdict = f"  target {'>=' if at_least else '<='} {limit:g}: {'ok' if ok else 'MISSED'}"
        print(f"  {k:30s} {v:10.3f}{verdict}")
    sys.stdout.flush()


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="kubeplane-density-") as tmp:
        if args.replicas > 0:
            show(f"density: {args.replicas} pods on {args.nodes} nodes ({args.storage})",
                 await density(args, pathlib.Path(tmp)))
        if args.idle_nodes > 0:
            show(f"idle: {args.idle_nodes} nodes heartbeating for {args.idle_seconds:.0f} s",
                 await idle_nodes(args, pathlib.Path(tmp)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--storage", default="sqlite", choices=("sqlite", "memory", "etcd"),
                   help="etcd: a real etcd member of its own (kubeplane.testing.etcd)")
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--replicas", type=int, default=1000, help="0 skips the density phase")
    p.add_argument("--idle-nodes", type=int, default=1000, help="0 skips the idle phase")
    p.add_argument("--idle-seconds", type=float, default=30.0)
    p.add_argument("--admitted-template", action="store_true",
                   help="the pod template already has what admission adds to each pod (admitted_pod_spec)")
    p.add_argument("--warmup", type=float, default=10.0, help="seconds after all nodes are Ready before measuring")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds each phase may take")
    p.add_argument("--watch-history", type=int, default=0,
                   help="`up --watch-history` (events): 5000 at 1,000 pods holds the history as full as the default"
                        " 50,000 does at 10,000 pods (benchmarks/memory_costs.py)")
    p.add_argument("--stall", type=float, default=0.0,
                   help="stop `up` for this fraction of every 20 ms during the density phase (Staller)")
    p.add_argument("--profile-dir", type=pathlib.Path, help="write py-spy raw profiles of each phase here")
    p.add_argument("--up-args", type=shlex.split, default=[], metavar="ARGS",
                   help="more flags for `kubeplane up`, one shell-quoted string after an = (e.g. --up-args='--kubelet-processes 1')")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
